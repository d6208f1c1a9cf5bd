#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The daemon crashes under load.  Three VIPs (TCP IPv4 with a health check,
# TCP IPv6 over GUE, UDP IPv4), $E2E_HOLD (500) + 200 long-lived TCP
# connections and a stream of UDP requests without retries (each lost
# datagram is a failure).  A change is made, then xlbd is killed with
# SIGKILL, stays dead for a second, and is started again with the same
# instance, socket and state directory.
#
#   - forwarding never stops: no held connection breaks, the held
#     connections get answers while no daemon runs, no UDP request is lost,
#     the data path drops nothing;
#   - the new xlbd adopts the pinned state (status: adopted true, the same
#     program on the link) and its state is identical: the same global
#     generation, per VIP the same fingerprint and generation, the same
#     saved configuration, health and connection table entries kept.
# Prints the figures: sends and replies per phase, UDP requests, TCP
# retransmissions of the clients, the time to answer again.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

HOLD=${E2E_HOLD:-500}
V1=$VIP4:80/tcp
V2=[$VIP6]:80/tcp
V3=$(vip4 2):80/udp

sc_begin
sc_serve
sc_xlbd
out=$(sc_vip "$V1" 4 4 health tcp interval 500 timeout 200 2>&1 &&
	sc_vip "$V2" 6 4 encap gue 2>&1 && sc_vip "$V3" 4 4 2>&1)
sc_result $? "VIPs $V1 (health tcp), $V2 (GUE), $V3, four backends each" "$out"

# snapshot OUT: what must be identical across the restart
snapshot() {
	{
		xlbctl -j status | "$TAP_PYTHON" -c '
import json, sys
s = json.load(sys.stdin)
print("generation %s vips %s backends %s" % (s["generation"], s["vips"], s["backends"]))
for l in s["links"]:
    print("link %s %s attached %s prog %s" % (l["ifname"], l["mode"], l["attached"], l["prog_id"]))'
		xlbctl -j vip show | "$TAP_PYTHON" -c '
import json, sys
for v in json.load(sys.stdin)["vips"]:
    print("vip %s fingerprint %s generation %s in_table %s healthy %s" % (
        v["vip"], v["fingerprint"], v["generation"], v["in_table"], v["healthy"]))'
		for v in "$V1" "$V2" "$V3"; do
			xlbctl -j backend show "$v" | "$TAP_PYTHON" -c '
import json, sys
j = json.load(sys.stdin)
for b in j["backends"]:
    print("backend %s %s id %s weight %s state %s health %s slots %s" % (
        j["vip"], b["name"], b["id"], b["weight"], b["state"], b["health"], b["slots"]))'
		done
		xlbctl save | sed 's/^/save: /'
	} >"$1" 2>&1
}

# counters OUT: the data path's drops and events, the connection table.
# xlbd counts the table on a thread of its own, first a second after it
# starts (the stats have no conntrack_entries before that): wait for a
# count, bounded only so that a daemon that never counts fails the test.
counters() {
	local i

	for ((i = 0; i < 300; i++)); do
		xlbctl -j stats >"$1.stats" || return
		grep -q '"conntrack_entries"' "$1.stats" && break
		sleep 0.1
	done
	"$TAP_PYTHON" -c '
import json, sys
s = json.load(open(sys.argv[1]))
d = dict(s["events"])
d["xdp_aborted"] = s["actions"]["aborted"]
d["xdp_drop"] = s["actions"]["drop"]
d["conntrack"] = s["conntrack_entries"]
d["packets"] = sum(v["packets"] for v in s["vips"])
print(json.dumps(d))' "$1.stats" >"$1"
}

retrans() {	# TCP retransmissions of the clients (/proc/net/snmp)
	local h n=0 v

	for h in "${CLIENTS[@]}"; do
		v=$(in_ns "$h" awk '$1 == "Tcp:" && !k { for (i = 2; i <= NF; i++)
			if ($i == "RetransSegs") k = i; next }
			$1 == "Tcp:" && k { print $k }' /proc/net/snmp)
		n=$((n + ${v:-0}))
	done
	echo $n
}

# --- load -----------------------------------------------------------------------

sc_hold_start v4 c1 "$VIP4:80" "$HOLD" --duration 60 --interval 200 \
	--timeout 2000 >"$work/hold.log" 2>&1 &&
sc_hold_start v6 c2 "[$VIP6]:80" 200 --duration 60 --interval 200 \
	--timeout 2000 >>"$work/hold.log" 2>&1
rc=$?
sc_result $rc "$HOLD + 200 long-lived connections (IPv4, IPv6 over GUE) established" \
	"$(cat "$work/hold.log")"
[[ $rc -eq 0 ]] || tap_bail "no load"

# UDP: runs of 100 requests without retries, one after another until told
# to stop (at most 2000 runs, 60 s); each line: start and end (ms), result
topo_bg c2 udp-loop bash -c '
	ms() { echo $(($(date +%s%N) / 1000000)); }
	for ((i = 0; i < 2000; i++)); do
		[[ -e $1 || $SECONDS -gt 60 ]] && break
		t=$(ms)
		r=$("$2" udp --to "$3" -n 100 --concurrency 2 --retries 0 \
			--timeout 1000 --max-seconds 10 -j 2>/dev/null)
		echo "$t $(ms) $r" >>"$4"
	done' _ "$work/udp.stop" "$SC_X" "$(vip4 2):80" "$work/udp.runs"
udp_pid=$TOPO_LAST_PID

# A change just before the crash: it must survive it whole.
out=$(xlbctl backend set "$V1" "${BACKEND_IP4[3]}" weight 2 2>&1)
sc_result $? "a change under load (b4 weight 2 on $V1)" "$out"
sleep 0.5
snapshot "$work/before.txt"
counters "$work/c0.json"
rt0=$(retrans)

# --- crash ----------------------------------------------------------------------

sc_hold_phase v4 dead
sc_hold_phase v6 dead
old=$XLBD_PID
t_kill=$(now_ms)
kill -KILL "$old"
wait "$old" 2>/dev/null
rc=$?
kill -0 "$old" 2>/dev/null
alive=$?
sc_result "$([[ $rc -eq 137 && $alive -ne 0 ]]; echo $?)" \
	"xlbd (pid $old) killed with SIGKILL under load (exit status $rc)"
mapfile -t TOPO_PIDS < <(for p in "${TOPO_PIDS[@]}"; do [[ $p == "$old" ]] || echo "$p"; done)
cp "$TOPO_DIR/xlbd.log" "$work/xlbd-before-crash.log"
sleep 1		# no daemon at all for a second

# --- restart --------------------------------------------------------------------

sc_hold_phase v4 restart
sc_hold_phase v6 restart
t0=$(now_ms)
t_dead=$((t0 - t_kill))
# The old socket file is still there: topo_xlbd_start returns at once;
# the new daemon answers when `status` shows its pid (10 s).
topo_xlbd_start >"$work/restart.log" 2>&1
rc=$?
for ((i = 0; i < 500; i++)); do
	pid=$(xlbctl -j status 2>/dev/null | "$TAP_PYTHON" -c \
		'import json, sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null)
	[[ $pid == "$XLBD_PID" ]] && break
	kill -0 "$XLBD_PID" 2>/dev/null || break
	[[ $(now_ms) -gt $((t0 + 10000)) ]] && break
	sleep 0.02
done
t1=$(now_ms)
sc_result "$([[ $rc -eq 0 && $pid == "$XLBD_PID" ]]; echo $?)" \
	"xlbd started again (same instance, socket, state dir): answers after $((t1 - t0)) ms" \
	"$(cat "$work/restart.log")" "$(grep -v -e '^<6>' -e libbpf "$TOPO_DIR/xlbd.log" | head -5)"

adopted=$(xlbctl -j status | "$TAP_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["adopted"])')
sc_result "$([[ $adopted == True ]]; echo $?)" "the new xlbd adopted the pinned state (status: adopted $adopted)"

snapshot "$work/after.txt"
out=$(diff "$work/before.txt" "$work/after.txt")
sc_result $? "state identical: generations, fingerprints, links, backends, health, saved configuration" \
	"$out" "$(grep -E '^(generation|vip|link)' "$work/after.txt")"

sleep 0.5	# load after the restart too
touch "$work/udp.stop"
sc_hold_stop v4 >"$work/stop.log" 2>&1
sc_hold_stop v6 >>"$work/stop.log" 2>&1
topo_stop "$udp_pid" 15
counters "$work/c1.json"
rt1=$(retrans)

out=$( (sc_hold_summary v4; sc_hold_summary v6) 2>&1 || cat "$work/stop.log")
verdict=$("$TAP_PYTHON" - "$TOPO_DIR/hold-v4.json" "$TOPO_DIR/hold-v6.json" <<-'EOF'
	import json, sys
	ok = True
	for f in sys.argv[1:]:
	    j = json.load(open(f))
	    ph = {p["name"]: p for p in j["phases"]}
	    print("%s: broken %d; while no daemon ran (%.2f s): sends %d replies %d" % (
	        j["to"], j["broken"], ph["restart"]["t"] - ph["dead"]["t"],
	        ph["dead"]["sends"], ph["dead"]["replies"]))
	    ok = ok and j["ok"] and j["broken"] == 0 and ph["dead"]["replies"] > 0 \
	        and ph["restart"]["replies"] > 0
	sys.exit(0 if ok else 1)
EOF
)
sc_result $? "0 held connections broken; they got answers while no daemon ran" "$verdict" "$out"

udp=$("$TAP_PYTHON" - "$work/udp.runs" "$t_kill" "$t0" <<-'EOF'
	import json, sys
	runs = []
	for l in open(sys.argv[1]):
	    t0, t1, r = l.split(" ", 2)
	    runs.append((int(t0), int(t1), json.loads(r)))
	kill, up = int(sys.argv[2]), int(sys.argv[3])
	req = sum(r["requested"] for _, _, r in runs)
	done = sum(r["completed"] for _, _, r in runs)
	lost = req - done
	dead = [r for t0, t1, r in runs if t1 > kill and t0 < up]
	print("%d UDP requests in %d runs (no retries): %d answered, %d lost; "
	      "%d runs (%d requests, %d lost) while no daemon ran" % (
	          req, len(runs), done, lost, len(dead),
	          sum(r["requested"] for r in dead),
	          sum(r["requested"] - r["completed"] for r in dead)))
	sys.exit(0 if runs and lost == 0 and dead else 1)
EOF
)
sc_result $? "no UDP request lost across the crash (${t_dead} ms without a daemon)" "$udp"

drops=$("$TAP_PYTHON" - "$work/c0.json" "$work/c1.json" <<-'EOF'
	import json, sys
	a, b = (json.load(open(f)) for f in sys.argv[1:3])
	d = {k: b[k] - a[k] for k in a}
	bad = {k: v for k, v in d.items() if v and k not in ("packets", "conntrack", "too_big")}
	print("across the crash: %d packets through the VIPs; connection table %d -> %d "
	      "entries; drops and events %s" % (d["packets"], a["conntrack"], b["conntrack"],
	                                        bad or "none"))
	sys.exit(0 if not bad and d["packets"] > 0 and b["conntrack"] >= a["conntrack"] else 1)
EOF
)
sc_result $? "the data path forwarded throughout: nothing dropped, connection table kept" \
	"$drops" "TCP retransmissions of the clients: $((rt1 - rt0)) (printed, not asserted)"

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
