#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo [DURATION=seconds]: xlb at work on a real network of namespaces
# (tests/e2e/lib/topo.sh), about DURATION seconds long (default 60).
#
#   1. the network: two clients, the LB, four backends (b4 in reserve)
#   2. xlbd in the LB namespace, the XDP data path on the LB's eth0
#   3. a VIP with three backends, configured with xlbctl
#   4. traffic: 300 long-lived connections (xlb-traffic hold) from c1 and a
#      steady stream of new short connections (xlb-traffic conns) from c2
#   5. live: how new connections spread over the backends
#   6. b4 added: the table's slots that moved, against the ideal 1/4
#   7. b2 drained: the slots that moved, against b2's share; held
#      connections stay where they are
#   8. the held connections' verdict, b2 removed, a summary
#
# The phases scale with DURATION; 10 works.  On a terminal the live view is
# redrawn in place; without one (CI) it prints plain lines, no ANSI.  The
# network, xlbd and every process go away on exit, error and Ctrl-C (the
# traps of topo.sh).  Exit status 0 when every connection completed and
# none broke.
#
# The summary ends with lines that tests/e2e/90-demo.sh checks:
#   add b4      moved 25.4% of the table (ideal 25.0%)
#   drain b2    moved 25.0% of the table (ideal 25.0%)
#   new connections: N completed, 0 failed
#   broken connections: 0
#   demo: ok
# shellcheck disable=SC2317,SC2119  # functions run as part_$p or by traps; helpers without arguments
set -u
cd "$(dirname "$0")/.." || exit 1
export O=${O:-build}

# shellcheck source=tools/lib/demo.sh
. tools/lib/demo.sh
demo_preflight demo "${1:-}" bpftool python3 nsenter

# the demo's namespaces are xdemo<pid>-*, apart from the tests' xe2e<pid>-*
export TOPO_TAG=${TOPO_TAG:-xdemo}
# shellcheck source=tests/e2e/lib/topo.sh
. tests/e2e/lib/topo.sh

PY=$(command -v /usr/bin/python3 || command -v python3)
X=$XLB_BIN/xlb-traffic
T_START=$SECONDS

# ---- timing -----------------------------------------------------------------
# About 10 s go to setting up, table snapshots and tearing down; the rest is
# three live phases of PHASE seconds each, at least 2.
PHASE=$(((DURATION - 10) / 3))
((PHASE < 2)) && PHASE=2
HELD=300
if [[ -t 1 && ${TERM:-dumb} != dumb ]]; then
	TTY=1 TICK=1
else
	# plain lines: about six per phase
	TTY=0 TICK=$(((PHASE + 3) / 6))
	((TICK < 1)) && TICK=1
fi
# whole frames of TICK seconds
FRAMES=$((PHASE / TICK))
PHASE=$((FRAMES * TICK))

# ---- output -----------------------------------------------------------------
if [[ $TTY -eq 1 ]]; then
	B=$'\033[1m' D=$'\033[2m' N=$'\033[0m'
else
	B='' D='' N=''
fi
WIDTH=$(tput cols 2>/dev/null || echo 80)
((WIDTH > 100 || WIDTH < 40)) && WIDTH=80
[[ $TTY -eq 0 ]] && WIDTH=78

STEP=0
step() {
	STEP=$((STEP + 1))
	printf '\n%s%d. %s%s\n' "$B" "$STEP" "$*" "$N"
}
# narration: one or two plain sentences, wrapped
say() { printf '%s\n' "$*" | fold -s -w "$WIDTH" | sed 's/ *$//; s/^/   /'; }
# a command as the operator types it, then its output
show() {
	printf '   %s$ xlbctl %s%s\n' "$D" "$*" "$N"
	xlbctl "$@" 2>&1 | sed 's/^/   /'
	return "${PIPESTATUS[0]}"
}
die() {
	printf '\ndemo: FAILED: %s\n' "$*"
	[[ -n ${TOPO_DIR:-} && -f $TOPO_DIR/xlbd.log ]] &&
		tail -5 "$TOPO_DIR/xlbd.log" | sed 's/^/#   xlbd: /'
	exit 1
}

# ---- the helper: live view, table diffs, phase and final figures -----------
helper() { "$PY" "$TOPO_DIR/demo.py" "$@"; }

write_helper() {
	cat >"$TOPO_DIR/demo.py" <<-'EOF'
	import json, os, re, sys, time

	def load(path):
	    with open(path) as f:
	        return json.load(f)

	def si(v):
	    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
	        if v >= div:
	            return "%.1f%s" % (v / div, suf)
	    return "%.0f" % v

	def stream_records(path, phase=None, offset=0):
	    """Batches of the new-connection stream, complete lines only."""
	    out = []
	    try:
	        with open(path, "rb") as f:
	            f.seek(offset)
	            data = f.read()
	    except OSError:
	        return out, offset
	    end = data.rfind(b"\n") + 1
	    for line in data[:end].splitlines():
	        try:
	            r = json.loads(line)
	        except ValueError:
	            continue
	        if phase is None or r.get("phase") == phase:
	            out.append(r)
	    return out, offset + end

	def tally(records):
	    per, done, failed = {}, 0, 0
	    for r in records:
	        c = r.get("r") or {}
	        done += c.get("completed", 0)
	        failed += c.get("failed", 0) + c.get("not_run", 0)
	        for b, v in (c.get("backends") or {}).items():
	            per[b] = per.get(b, 0) + v.get("count", 0)
	    return per, done, failed

	HOLD_RE = re.compile(r"hold: t=\S+ phase \S+ open (\d+) broken (\d+).*\|(.*)$")

	def hold_now(path):
	    """open, broken, {backend: open} from the last progress line."""
	    try:
	        with open(path, errors="replace") as f:
	            lines = f.readlines()[-20:]
	    except OSError:
	        return None
	    for line in reversed(lines):
	        m = HOLD_RE.match(line.strip())
	        if m:
	            per = dict(kv.split("=") for kv in m.group(3).split() if "=" in kv)
	            return int(m.group(1)), int(m.group(2)), {k: int(v) for k, v in per.items()}
	    return None

	def cmd_live(a):
	    # live TTY SECONDS TICK HOLD_LOG STREAM VIP; frames of `xlbctl -j top` on stdin
	    tty, seconds, tick, hold_log, stream, vip = int(a[0]), int(a[1]), int(a[2]), a[3], a[4], a[5]
	    width = int(os.environ.get("DEMO_WIDTH", "78"))
	    offset = os.path.getsize(stream) if os.path.exists(stream) else 0
	    t0 = time.monotonic()
	    drawn = 0
	    for line in sys.stdin:
	        try:
	            fr = json.loads(line)
	        except ValueError:
	            continue
	        v = next((x for x in fr.get("vips", []) if x.get("vip") == vip), None)
	        if v is None:
	            continue
	        recs, offset = stream_records(stream, None, offset)
	        per, done, failed = tally(recs)
	        total = sum(per.values())
	        held = hold_now(hold_log)
	        held_per = held[2] if held else {}
	        t = time.monotonic() - t0
	        bes = sorted(v.get("backends", []), key=lambda b: b["name"])
	        if tty:
	            rows = ["VIP %s   %.0f of %d s" % (vip, t, seconds),
	                    "%s packets/s   %s new connections/s   held: %s open, %s broken" % (
	                        si(v.get("pps", 0)), si(total / max(fr.get("interval_s", 1), 0.1)),
	                        held[0] if held else "-", held[1] if held else "-"),
	                    "  %-8s %-7s %7s %10s %6s %9s" % ("BACKEND", "STATE", "TABLE", "NEW CONNS", "HELD", "PACKETS/S")]
	            for b in bes:
	                n = b["name"]
	                rows.append("  %-8s %-7s %6.1f%% %9s %6s %9s" % (
	                    n, b.get("state", "-"), 100 * b.get("slot_share", 0),
	                    ("%.1f%%" % (100.0 * per.get(n, 0) / total)) if total else "-",
	                    held_per.get(n, 0), si(b.get("pps", 0))))
	            out = ""
	            if drawn:
	                out += "\033[%dA" % drawn
	            for r in rows:
	                out += "\r   " + r[:width - 3] + "\033[K\n"
	            out += "\033[J"
	            sys.stdout.write(out)
	            drawn = len(rows)
	        else:
	            nc = " ".join("%s %s%.0f%%" % (b["name"], "(drain) " if b.get("state") == "drain" else "",
	                                         100.0 * per.get(b["name"], 0) / total if total else 0) for b in bes)
	            hd = " ".join("%s %d" % (b["name"], held_per.get(b["name"], 0)) for b in bes)
	            sys.stdout.write("   t=%-3.0f new %s/s: %s | held: %s, %s broken | %s pps\n" % (
	                t, si(total / max(fr.get("interval_s", 1), 0.1)), nc, hd,
	                held[1] if held else "-", si(v.get("pps", 0))))
	        sys.stdout.flush()

	def cmd_phase(a):
	    # phase STREAM PHASE TABLE.json: how this phase's new connections spread
	    stream, phase, table = a[0], a[1], load(a[2])
	    per, done, failed = tally(stream_records(stream, phase)[0])
	    total = sum(per.values())
	    parts = []
	    for b in sorted(table["backends"], key=lambda b: b["name"]):
	        if b.get("share", 0) <= 0 and not per.get(b["name"]):
	            continue
	        parts.append("%s %.1f%% (table %.1f%%)" % (
	            b["name"], 100.0 * per.get(b["name"], 0) / total if total else 0, 100 * b["share"]))
	    print("new connections in this phase: %d completed, %d failed" % (done, failed))
	    print("  spread: " + ", ".join(parts))

	def slots(path):
	    """The primaries of a dumped table: its one value, 32-bit words,
	    word 0 the header (M in its low 24 bits), word 1 + i slot i
	    (bpf/table.h)."""
	    b = bytes(int(x, 16) for x in load(path)[0]["value"])
	    w = [int.from_bytes(b[i:i + 4], "little") for i in range(0, len(b), 4)]
	    size = w[0] & 0xffffff
	    return size, [w[i] & 0xffff for i in range(1, size + 1)]

	def names(*paths):
	    n = {}
	    for p in paths:
	        for b in load(p).get("backends", []):
	            n[b["id"]] = b["name"]
	    return n

	def cmd_diff(a):
	    # diff BEFORE AFTER WHAT NAME: BEFORE/AFTER are prefixes of .slots,
	    # .table and .backends files; WHAT is add, drain or del
	    before, after, what, who = a
	    m0, s0 = slots(before + ".slots")
	    m1, s1 = slots(after + ".slots")
	    if m0 != m1:
	        sys.exit("table size changed: %d -> %d" % (m0, m1))
	    nm = names(before + ".backends", after + ".backends")
	    t0, t1 = load(before + ".table"), load(after + ".table")
	    moved, to, frm = 0, {}, {}
	    for p, q in zip(s0, s1):
	        if p != q:
	            moved += 1
	            to[nm.get(q, q)] = to.get(nm.get(q, q), 0) + 1
	            frm[nm.get(p, p)] = frm.get(nm.get(p, p), 0) + 1
	    if what == "add":
	        ideal = next((b["ideal_share"] for b in t1["backends"] if b["name"] == who), 0)
	        why = "1/%d: only the new backend's share" % round(1 / ideal) if ideal else "its share"
	        flow = "%d to %s, %d between the others" % (to.get(who, 0), who, moved - to.get(who, 0))
	    else:
	        ideal = next((b["share"] for b in t0["backends"] if b["name"] == who), 0)
	        why = "%s's share of the table before" % who
	        flow = "%d from %s, %d between the others" % (frm.get(who, 0), who, moved - frm.get(who, 0))
	    print("table: generation %s -> %s, fingerprint %s -> %s" % (
	        t0["generation"], t1["generation"], t0["fingerprint"], t1["fingerprint"]))
	    print("moved %d of %d slots = %.1f%% of the table; ideal %.1f%% (%s)" % (
	        moved, m0, 100.0 * moved / m0, 100.0 * ideal, why))
	    if moved:
	        print("  " + flow)
	    shares = ", ".join("%s %.1f%%" % (b["name"], 100 * b["share"])
	                       for b in sorted(t1["backends"], key=lambda b: b["name"]) if b["share"] > 0)
	    print("  now: " + (shares or "no backend in the table"))
	    with open(after + ".moved", "w") as f:
	        f.write("%.1f %.1f\n" % (100.0 * moved / m0, 100.0 * ideal))

	def cmd_held(a):
	    # held HOLD.json: the verdict of the long-lived connections
	    h = load(a[0])
	    per = ", ".join("%s %d" % (k, v["connections"]) for k, v in sorted(h["backends"].items()))
	    print("held connections: %d of %d established, %d broken, %d requests answered in %.0f s" % (
	        h["established"], h["connections"], h["broken"], h["replies"], h["seconds"]))
	    print("  by backend: " + per)
	    for p in h.get("phases", []):
	        print("  phase %-9s %d broken" % (p["name"], p["broken"]))
	    bad = {k: v for k, v in h.get("reasons", {}).items() if v}
	    if bad:
	        print("  reasons: " + ", ".join("%s %d" % kv for kv in bad.items()))

	def cmd_total(a):
	    # total STREAM: "completed failed" of every new connection
	    per, done, failed = tally(stream_records(a[0])[0])
	    print(done, failed)

	def cmd_get(a):
	    # get FILE EXPR: a value of a JSON file (j)
	    j = load(a[0])
	    print(eval(a[1]))

	try:
	    {"live": cmd_live, "phase": cmd_phase, "diff": cmd_diff, "held": cmd_held,
	     "total": cmd_total, "get": cmd_get}[sys.argv[1]](sys.argv[2:])
	except (KeyboardInterrupt, BrokenPipeError):
	    sys.exit(130)
	EOF
}

# ---- pieces -----------------------------------------------------------------
VIP=$VIP4:80/tcp
STREAM=
HOLD_PID=
STREAM_PID=
RENDER_PID=

# snap NAME: the VIP's published table (every slot, from the pinned map),
# its shares and its backends, into $TOPO_DIR/NAME.*
snap() {
	local p=$TOPO_DIR/$1 vid m inner

	xlbctl -j vip show "$VIP" >"$p.vip" &&
		xlbctl -j table show "$VIP" >"$p.table" &&
		xlbctl -j backend show "$VIP" >"$p.backends" || return 1
	vid=$(helper get "$p.vip" 'j["vips"][0]["id"]') || return 1
	m=$(helper get "$p.vip" 'j["vips"][0]["table_size"]') || return 1
	# the outer map of the VIP's table size holds its table
	bpftool -j map lookup pinned "/sys/fs/bpf/xlb/$XLBD_INSTANCE/xlb_tab_$m" \
		key $((vid & 255)) $((vid >> 8 & 255)) $((vid >> 16 & 255)) $((vid >> 24)) \
		>"$p.inner" || return 1
	inner=$(helper get "$p.inner" \
		'int.from_bytes(bytes(int(x, 16) for x in j["value"]), "little")') || return 1
	bpftool -j map dump id "$inner" >"$p.slots"
}

# change NAME WHAT WHO CMD...: snapshot, the change, snapshot, the diff
change() {
	local name=$1 what=$2 who=$3

	shift 3
	snap "$name.before" || die "cannot read the table before $what $who"
	show "$@" || die "xlbctl $* failed"
	snap "$name.after" || die "cannot read the table after $what $who"
	helper diff "$TOPO_DIR/$name.before" "$TOPO_DIR/$name.after" "$what" "$who" |
		sed 's/^/   /'
}

phase_set() {
	echo "$1" >"$TOPO_DIR/phase"
	echo "phase $1" >>"$TOPO_DIR/hold.ctl"
}

# live PHASE: the live view for PHASE seconds, then the phase's spread
live() {
	local phase=$1

	if [[ $TTY -eq 1 ]]; then
		say "${D}Live, every second: per backend its share of the table and of the new connections, its held connections and packets/s.${N}"
	else
		say "Live, every $TICK s: the share of new connections and the held connections per backend:"
	fi
	xlbctl -j top -n "$TICK" -c "$FRAMES" 2>>"$TOPO_DIR/top.err" |
		DEMO_WIDTH=$WIDTH helper live "$TTY" "$PHASE" "$TICK" \
			"$TOPO_DIR/hold.log" "$STREAM" "$VIP" &
	RENDER_PID=$!
	wait "$RENDER_PID"
	RENDER_PID=
	xlbctl -j table show "$VIP" >"$TOPO_DIR/$phase.table" 2>&1 &&
		helper phase "$STREAM" "$phase" "$TOPO_DIR/$phase.table" | sed 's/^/   /'
}

# the stream of new connections from c2: batches of 100, 8 at a time
stream_loop() {
	local ph r

	while [[ ! -e $TOPO_DIR/stream.stop ]]; do
		ph=$(cat "$TOPO_DIR/phase" 2>/dev/null)
		r=$(in_ns c2 "$X" conns --to "$VIP4:80" -n 100 --concurrency 8 \
			--bytes 200 --timeout 3000 -j 2>>"$TOPO_DIR/stream.err") || true
		[[ -n $r ]] && printf '{"phase":"%s","r":%s}\n' "$ph" "$r" >>"$STREAM"
		sleep 0.2
	done
}

stop_background() {
	[[ -n ${TOPO_DIR:-} ]] && touch "$TOPO_DIR/stream.stop" 2>/dev/null
	local p
	for p in $STREAM_PID $RENDER_PID; do
		kill "$p" 2>/dev/null
	done
}

# ---- the demo ---------------------------------------------------------------
printf '%sxlb demo%s: an XDP layer-4 load balancer on a network of namespaces\n' "$B" "$N"
say "About $((PHASE * 3 + 10)) seconds: three live phases of $PHASE s (DURATION=$DURATION). Everything is torn down at the end or on Ctrl-C."

step "The network"
# after topo.sh's own traps (teardown) have run
trap 'printf "\ndemo: interrupted; network, xlbd and pins removed\n"' INT TERM HUP
uplog=$(mktemp) || exit 1
if ! topo_up --backends 4 --clients 2 >"$uplog" 2>&1; then
	sed 's/^/   /' "$uplog"
	rm -f "$uplog"
	die "cannot build the network"
fi
rm -f "$uplog"
topo_at_down stop_background
write_helper
STREAM=$TOPO_DIR/stream.jsonl
: >"$STREAM"
say "Network namespaces on one bridge: clients c1 and c2, the LB ($LB_IP4) and backends b1-b4 (${BACKEND_IP4[0]}..${BACKEND_IP4[3]}); b4 waits in reserve."
say "Each backend has the VIP $VIP4 on lo, strips the tunnel with a small XDP program and answers clients directly (direct server return)."

step "xlbd and the data path"
topo_serve >/dev/null 2>&1 || die "the backends' servers did not start"
topo_xlbd_setup >/dev/null 2>&1 || die "xlbd did not start"
say "xlbd runs in the LB namespace; it pinned the XDP program and its maps under /sys/fs/bpf/xlb/$XLBD_INSTANCE and attached it natively to the LB's eth0."
show link show || die "no link"

step "A VIP with three backends"
say "Every change goes through xlbctl to xlbd, which builds the VIP's Maglev table (65537 slots) and publishes it atomically to the data path."
show vip add "$VIP" encap gue || die "vip add failed"
for i in 0 1 2; do
	show backend add "$VIP" "${BACKEND_IP4[i]}" name "${BACKENDS[i]}" ||
		die "backend add failed"
done
show table show "$VIP" || die "no table"
say "The fingerprint names this exact table: another LB host with the same key and backends shows the same one."

step "Traffic"
# c2 opens many short connections: wide port range, no port shortage
in_ns c2 sysctl -qw net.ipv4.ip_local_port_range="1024 65000"
phase_set start
: >"$TOPO_DIR/hold.ctl"
nsenter --net="/var/run/netns/$(topo_ns c1)" -- "$X" hold --to "$VIP4:80" \
	-n "$HELD" --duration $((PHASE * 3 + 120)) --interval 250 \
	--report-every 1 --control "$TOPO_DIR/hold.ctl" \
	--ready "$TOPO_DIR/hold.ready" -j \
	>"$TOPO_DIR/hold.json" 2>"$TOPO_DIR/hold.log" &
HOLD_PID=$!
for ((i = 0; i < 100; i++)); do
	[[ -e $TOPO_DIR/hold.ready ]] && break
	kill -0 "$HOLD_PID" 2>/dev/null || break
	sleep 0.1
done
[[ -e $TOPO_DIR/hold.ready ]] || die "the held connections did not come up: $(tail -3 "$TOPO_DIR/hold.log")"
stream_loop &
STREAM_PID=$!
say "c1 holds $HELD long-lived TCP connections to $VIP4:80, each sending a request every 250 ms; c2 opens a steady stream of new short connections (xlb-traffic)."
say "Every reply names its backend and every byte is checked, so a connection that moves or breaks is seen."

step "Three backends: new connections spread by the table"
phase_set steady
live steady
say "Each backend takes about a third of new connections, as its share of the table's slots says."
say "The operator's own view is xlbctl top; one frame of it follows. To watch it live, run in another terminal: $XLB_BIN/xlbctl -s $XLBD_SOCK top"
printf '   %s$ xlbctl top%s\n' "$D" "$N"
xlbctl top -n 0.5 -c 1 2>&1 | sed 's/^/   /'

step "Adding a fourth backend"
say "b4 joins; ideally a quarter of the table moves, and all of it to b4. Connections already open stay on their backend (the LB's connection table remembers them)."
change add-b4 add b4 backend add "$VIP" "${BACKEND_IP4[3]}" name b4
read -r ADD_MOVED ADD_IDEAL <"$TOPO_DIR/add-b4.after.moved"
phase_set add-b4
live add-b4
say "b4 takes its quarter of the new connections at once and holds none of the old ones: nothing was moved under a running connection."

step "Removing b2: drain first"
say "An operator removes a backend by draining it: its slots go to the others (ideally exactly its share), while its open connections finish where they are."
change drain-b2 drain b2 backend drain "$VIP" "${BACKEND_IP4[1]}"
read -r DRAIN_MOVED DRAIN_IDEAL <"$TOPO_DIR/drain-b2.after.moved"
phase_set drain-b2
live drain-b2
say "b2 gets no new connections but still answers its held ones."

step "The verdict"
phase_set end
echo stop >>"$TOPO_DIR/hold.ctl"
wait "$HOLD_PID"
HOLD_RC=$?
HOLD_PID=
touch "$TOPO_DIR/stream.stop"
wait "$STREAM_PID"
STREAM_PID=
if [[ -s $TOPO_DIR/hold.json ]]; then
	helper held "$TOPO_DIR/hold.json" | sed 's/^/   /'
	BROKEN=$(helper get "$TOPO_DIR/hold.json" 'j["broken"]')
	ESTABLISHED=$(helper get "$TOPO_DIR/hold.json" 'j["established"]')
else
	BROKEN=unknown ESTABLISHED=0
	sed 's/^/   hold: /' "$TOPO_DIR/hold.log" | tail -5
fi
read -r NEW_DONE NEW_FAILED < <(helper total "$STREAM")
say "Now that b2's connections are done, it is deleted; it had no slots left, so nothing moves."
change del-b2 del b2 backend del "$VIP" "${BACKEND_IP4[1]}"
read -r DEL_MOVED _ <"$TOPO_DIR/del-b2.after.moved"

# ---- summary ----------------------------------------------------------------
ok=1
[[ $BROKEN == 0 && $ESTABLISHED == "$HELD" && $HOLD_RC -eq 0 ]] || ok=0
[[ $NEW_FAILED == 0 && $NEW_DONE -gt 0 ]] || ok=0
printf '\n%sSummary%s\n' "$B" "$N"
printf '   backends    3 -> 4 (b4 added) -> 3 (b2 drained, then deleted)\n'
printf '   add b4      moved %s%% of the table (ideal %s%%)\n' "$ADD_MOVED" "$ADD_IDEAL"
printf '   drain b2    moved %s%% of the table (ideal %s%%)\n' "$DRAIN_MOVED" "$DRAIN_IDEAL"
printf '   delete b2   moved %s%% of the table (ideal 0.0%%)\n' "$DEL_MOVED"
printf '   new connections: %s completed, %s failed\n' "$NEW_DONE" "$NEW_FAILED"
printf '   held connections: %s of %s established\n' "$ESTABLISHED" "$HELD"
printf '   broken connections: %s\n' "$BROKEN"
if [[ $ok -eq 1 ]]; then
	printf '   demo: ok (%d s)\n' $((SECONDS - T_START))
	exit 0
fi
printf '   demo: FAILED (%d s): see above\n' $((SECONDS - T_START))
exit 1
