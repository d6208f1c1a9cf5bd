#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo-cluster [DURATION=seconds]: xlb on three LB hosts behind a
# router (docs/edge.md), on a real network of namespaces
# (topo_up --edge 3, tests/e2e/lib/edge.sh), about DURATION seconds long
# (default 60).
#
#   1. the network: a router running bird2, three LB hosts each running
#      xlbd (cluster mode, etcd) and bird2, two clients behind the router,
#      four backends (b4 in reserve), etcd
#   2. a VIP with three backends, written once through etcd; every LB host
#      announces it, the router spreads flows over the three (ECMP)
#   3. traffic: 300 long-lived connections from c1 and a steady stream of
#      new short connections from c2
#   4. live: per LB host its share of the new flows, per backend its share
#      of the new connections, the held connections
#   5. lb2 killed (link down, bird2 and xlbd killed): the router reroutes
#      (BFD), the other hosts carry its flows to the same backends
#   6. b4 added through etcd on lb3: every host live with it
#   7. the verdict: new connections completed or failed, held connections
#      broken
#
# On a terminal or not, it prints plain lines (no ANSI escapes).  The
# network, the daemons and every process go away on exit, error and Ctrl-C
# (the traps of topo.sh).  Exit status 0 when every connection completed
# and none broke.  The last lines, which tests/e2e/91-demo-cluster.sh
# checks:
#   new connections: N completed, 0 failed
#   broken connections: 0 of 300 held
#   demo-cluster: ok
set -u
cd "$(dirname "$0")/.." || exit 1
export O=${O:-build}

# shellcheck source=tools/lib/demo.sh
. tools/lib/demo.sh
demo_preflight demo-cluster "${1:-}" bird birdc etcd etcdctl python3 nsenter

# the demo's namespaces are xdemc<pid>-*, apart from the tests' xe2e<pid>-*
export TOPO_TAG=${TOPO_TAG:-xdemc}
# shellcheck source=tests/e2e/lib/topo.sh
. tests/e2e/lib/topo.sh

PY=$(command -v /usr/bin/python3 || command -v python3)
X=$XLB_BIN/xlb-traffic
HELD=300
V=$VIP4:80/tcp
# about 25 s go to the network, etcd, BGP and the teardown; the rest is
# three live phases of PHASE seconds, at least 3, a line every TICK
PHASE=$(((DURATION - 25) / 3))
((PHASE < 3)) && PHASE=3
TICK=$(((PHASE + 3) / 4))
((TICK < 1)) && TICK=1

STEP=0
step() {
	STEP=$((STEP + 1))
	printf '\n%d. %s\n' "$STEP" "$*"
}
say() { printf '%s\n' "$*" | fold -s -w 78 | sed 's/ *$//; s/^/   /'; }
die() {
	printf '\ndemo-cluster: FAILED: %s\n' "$*"
	exit 1
}

HOLD_PID=
STREAM_PID=
STREAM=
stop_background() {
	[[ -n ${TOPO_DIR:-} ]] && : >"$TOPO_DIR/stream.stop"
	[[ -n $STREAM_PID ]] && { wait "$STREAM_PID" 2>/dev/null; STREAM_PID=; }
}

# the stream of new connections from c2: batches of 50, 8 at a time
stream_loop() {
	local r

	while [[ ! -e $TOPO_DIR/stream.stop ]]; do
		r=$(in_ns c2 "$X" conns --to "$VIP4:80" -n 50 --concurrency 8 \
			--bytes 200 --timeout 3000 -j 2>>"$TOPO_DIR/stream.err") || true
		[[ -n $r ]] && printf '%s\n' "$r" >>"$STREAM"
		sleep 0.2
	done
}

# "HOST NEW_FLOWS" of every LB host that answers
host_flows() {
	local h

	for h in "${EDGE_HOSTS[@]}"; do
		xlbctl_on "$h" -j stats "$V" 2>/dev/null | "$PY" -c '
import json, sys
print(sys.argv[1], json.load(sys.stdin)["vips"][0]["new_flows"])' "$h" 2>/dev/null
	done
}

# one live line: the LB hosts' shares of new flows since the last line,
# the backends' shares of new connections since then, the held ones
live_line() {
	local t=$1

	host_flows >"$TOPO_DIR/flows.now"
	"$PY" - "$TOPO_DIR/flows.last" "$TOPO_DIR/flows.now" "$STREAM" \
		"$TOPO_DIR/stream.off" "$TOPO_DIR/hold.log" "$t" <<-'EOF'
		import json, os, re, sys
		last_f, now_f, stream, off_f, hold_log, t = sys.argv[1:7]
		def flows(p):
		    try:
		        return {l.split()[0]: int(l.split()[1]) for l in open(p) if l.strip()}
		    except OSError:
		        return {}
		a, b = flows(last_f), flows(now_f)
		d = {h: b[h] - a.get(h, 0) for h in b}
		tot = sum(d.values())
		hosts = " ".join("%s %2.0f%%" % (h, 100.0 * d[h] / tot if tot else 0) for h in sorted(d))
		off = int(open(off_f).read() or 0) if os.path.exists(off_f) else 0
		per, done, failed = {}, 0, 0
		try:
		    with open(stream, "rb") as f:
		        f.seek(off)
		        data = f.read()
		except OSError:
		    data = b""
		end = data.rfind(b"\n") + 1
		for line in data[:end].splitlines():
		    try:
		        r = json.loads(line)
		    except ValueError:
		        continue
		    done += r.get("completed", 0)
		    failed += r.get("failed", 0)
		    for k, v in (r.get("backends") or {}).items():
		        per[k] = per.get(k, 0) + v.get("count", 0)
		open(off_f, "w").write(str(off + end))
		n = sum(per.values())
		bes = " ".join("%s %2.0f%%" % (k, 100.0 * per[k] / n) for k in sorted(per))
		held = "-"
		try:
		    for line in reversed(open(hold_log, errors="replace").readlines()[-10:]):
		        m = re.match(r"hold: t=\S+ phase \S+ open (\d+) broken (\d+)", line)
		        if m:
		            held = "%s open, %s broken" % m.groups()
		            break
		except OSError:
		    pass
		print("   t=%-3s LB hosts: %s | backends: %s (%d new, %d failed) | held: %s" % (
		    t, hosts or "-", bes or "-", done, failed, held))
		EOF
	mv "$TOPO_DIR/flows.now" "$TOPO_DIR/flows.last"
}

live() {
	local k

	say "Every $TICK s: each LB host's share of the new flows it received (its own counters), each backend's share of the new connections, and the held connections."
	host_flows >"$TOPO_DIR/flows.last"
	for ((k = 1; k <= PHASE / TICK; k++)); do
		sleep "$TICK"
		live_line $((k * TICK))
	done
}

# ---- 1. the network -----------------------------------------------------------
step "The network: a router (bird2), three LB hosts (xlbd + bird2), etcd, two clients, four backends"
say "Namespaces on one machine: clients c1, c2 behind the router rt; LB hosts lb, lb2, lb3; backends b1..b4; etcd. Each LB host runs xlbd in cluster mode and bird2 (dist/bird-xlb.conf) with a BGP session and BFD (100 ms x 3) to the router. This takes a few seconds."
topo_up --edge 3 --backends 4 --clients 2 >"/tmp/demo-cluster.$$.log" 2>&1 ||
	{ cat "/tmp/demo-cluster.$$.log"; rm -f "/tmp/demo-cluster.$$.log"; die "the network did not come up"; }
rm -f "/tmp/demo-cluster.$$.log"
topo_at_down stop_background
topo_serve >/dev/null 2>&1 || die "the backends' servers did not start"
say "BGP sessions of the router:"
edge_birdc rt show protocols 2>/dev/null | awk '$2 == "BGP" { printf "     %s %s %s\n", $1, $4, $6 }'

# ---- 2. the VIP through etcd -------------------------------------------------
step "A VIP with three backends, written once through etcd"
KEY=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf '   $ xlbctl set key ...; xlbctl vip add %s encap gue; xlbctl backend add ... (on lb)\n' "$V"
if ! xlbctl_on lb set key "$KEY" || ! xlbctl_on lb vip add "$V" encap gue; then
	die "the VIP was refused"
fi
for i in 0 1 2; do
	xlbctl_on lb backend add "$V" "${BACKEND_IP4[i]}" name "${BACKENDS[i]}" ||
		die "backend ${BACKENDS[i]} was refused"
done
edge_wait_nexthops "$VIP4" 3 || die "the router did not learn the VIP from three LB hosts"
say "Every LB host announces $VIP4 (set announce table $EDGE_TABLE); the router's route, one next hop per LB host:"
ip -n "$NS_RT" route show "$VIP4/32" | sed 's/^/     /'
say "Cluster status, seen from lb:"
xlbctl_on lb cluster status | sed 's/^/     /'

# ---- 3. traffic ---------------------------------------------------------------
step "Traffic: $HELD held connections from c1, a stream of new ones from c2"
: >"$TOPO_DIR/hold.ctl"
topo_bg c1 hold bash -c 'out=$1; shift; exec "$@" >"$out"' _ \
	"$TOPO_DIR/hold.json" "$X" hold --to "$VIP4:80" -n "$HELD" \
	--duration $((DURATION + 120)) --interval 500 \
	--control "$TOPO_DIR/hold.ctl" --ready "$TOPO_DIR/hold.ready" \
	--report-every 0.5 -j
HOLD_PID=$TOPO_LAST_PID
for ((i = 0; i < 300; i++)); do
	[[ -e $TOPO_DIR/hold.ready ]] && break
	kill -0 "$HOLD_PID" 2>/dev/null || break
	sleep 0.1
done
[[ -e $TOPO_DIR/hold.ready ]] || die "the held connections did not open"
STREAM=$TOPO_DIR/stream.jsonl
: >"$STREAM"
stream_loop &
STREAM_PID=$!

step "Live: three LB hosts"
live

# ---- 5. an LB host killed -----------------------------------------------------
step "lb2 killed: its link goes down, its bird2 and xlbd are killed"
say "The router notices through BFD (no packet for 300 ms), drops lb2's next hop and sends its flows to lb and lb3, which compute the same backends: held connections go on."
echo "phase lose" >>"$TOPO_DIR/hold.ctl"
edge_watch_nexthops "$VIP4" "${EDGE_ADDR[lb]} ${EDGE_ADDR[lb3]} " \
	"$TOPO_DIR/rerouted" &
wpid=$!
edge_host_lose lb2 >/dev/null 2>&1
wait $wpid || die "the router kept lb2's next hop (route: $(edge_nexthops "$VIP4"))"
say "router rerouted $(($(cat "$TOPO_DIR/rerouted") - $(cat "$TOPO_DIR/lost-at"))) ms after the link went down; its route now:"
ip -n "$NS_RT" route show "$VIP4/32" | sed 's/^/     /'
EDGE_HOSTS=(lb lb3)
live

# ---- 6. a backend added through etcd -------------------------------------------
step "b4 added through etcd, on lb3"
printf '   $ xlbctl backend add %s %s name b4   (on lb3)\n' "$V" "${BACKEND_IP4[3]}"
out=$(xlbctl_on lb3 -j backend add "$V" "${BACKEND_IP4[3]}" name b4 2>&1) ||
	die "b4 was refused: $out"
rev=$("$PY" -c 'import json, sys; print(json.loads(sys.argv[1])["revision"])' "$out")
# lb and lb3 at the revision with one fingerprint (lb2's record stays,
# silent, until its lease runs out)
for ((i = 0; i < 100; i++)); do
	xlbctl_on lb -j cluster status 2>/dev/null | "$PY" -c '
import json, sys
c, rev = json.load(sys.stdin), int(sys.argv[1])
hs = [h for h in c["hosts"] if h["host"] in ("lb", "lb3")]
sys.exit(0 if len(hs) == 2 and all(h.get("revision", 0) >= rev for h in hs) and
         hs[0]["vips"] == hs[1]["vips"] else 1)' "$rev" && break
	sleep 0.1
done
((i < 100)) || die "lb and lb3 did not converge on revision $rev"
say "revision $rev: lb and lb3 run it with the same fingerprint (new connections now spread over four backends; held ones stay where they are)."
live

# ---- 7. the verdict -----------------------------------------------------------
step "Verdict"
stop_background
echo stop >>"$TOPO_DIR/hold.ctl"
for ((i = 0; i < 150; i++)); do
	kill -0 "$HOLD_PID" 2>/dev/null || break
	sleep 0.1
done
[[ -s $TOPO_DIR/hold.json ]] || die "the held connections gave no result"
read -r completed failed < <("$PY" - "$STREAM" <<-'EOF'
	import json, sys
	d = f = 0
	for line in open(sys.argv[1]):
	    try:
	        r = json.loads(line)
	    except ValueError:
	        continue
	    d += r.get("completed", 0)
	    f += r.get("failed", 0)
	print(d, f)
EOF
)
read -r est broken lose_wait < <("$PY" - "$TOPO_DIR/hold.json" <<-'EOF'
	import json, sys
	j = json.load(open(sys.argv[1]))
	w = [p["max_wait_ms"] for p in j["phases"] if p["name"] == "lose"]
	print(j["established"], j["broken"], "%.0f" % (w[0] if w else -1))
EOF
)
say "lb2 lost: the held connections it carried went unanswered for at most $lose_wait ms."
echo "new connections: $completed completed, $failed failed"
echo "broken connections: $broken of $est held"
if [[ $failed -eq 0 && $broken -eq 0 && $est -eq $HELD && $completed -gt 0 ]]; then
	echo "demo-cluster: ok"
	exit 0
fi
echo "demo-cluster: connections failed or broke"
exit 1
