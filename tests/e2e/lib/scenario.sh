# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers of the end-to-end failure scenarios (tests/e2e/30-add.sh to
# 80-two-lbs.sh).  Source after tap.sh and topo.sh, once topo_up has run
# for the helpers that need the network:
#
#   sc_require                     root and the build's programs, or bail out
#   now_ms                         a millisecond clock
#   sc_vip VIP FAMILY N [OPT...]   vip add VIP OPT..., then the addresses of
#                                  FAMILY (4 or 6) of b1..bN, named b1..bN;
#                                  prints xlbctl's errors
#   sc_expect VIP                  "b1=SHARE,..." of the backends holding
#                                  slots in the VIP's published table
#   sc_vip_field VIP EXPR          a Python expression over v, the VIP's
#                                  object of `xlbctl -j vip show`
#   sc_conns HOST TO N OUT [ARG...]  xlb-traffic conns, JSON in OUT
#   sc_conns_summary OUT           one line: completed, failed, per backend
#   sc_hold_start NAME HOST TO N [ARG...]   (not in $(...): it keeps the pid)
#                                  xlb-traffic hold in the background (stopped
#                                  by topo_down), --report-every 0.2; returns
#                                  once every connection has answered (30 s)
#   sc_hold_phase NAME PHASE       start a phase of the run (returns once the
#                                  tool has started it)
#   sc_hold_open NAME              "b1=N b2=N ..." open connections per backend,
#                                  from the last progress line
#   sc_hold_stop NAME              stop it and wait (15 s); JSON in
#                                  $TOPO_DIR/hold-NAME.json
#   sc_hold_summary NAME           one line of its figures
#   sc_held_flows HOST ADDR        the established TCP flows of HOST to ADDR
#                                  (port 80), as "tcp SRC:SPORT -> DST:80"
#   sc_event NAME                  the LB xlbd's event counter NAME (stats)
#   sc_in_table VIP N CMD...       until `CMD -j vip show VIP` (CMD: an xlbctl
#                                  function) says N backends in its live
#                                  table (10 s); prints the last count
#   sc_result STATUS NAME [DIAG...]  tap_result, empty diagnostics left out
#   sc_explain [SOCKET] <FLOWS     xlbd's explain of every flow (one
#                                  connection), a JSON list (lib/flows.py)
#
# Every loop is bounded in count and in time.

SC_FLOWS_PY=$XLB_ROOT/tests/e2e/lib/flows.py
SC_X=$XLB_BIN/xlb-traffic

sc_require() {
	local f

	[[ $(id -u) -eq 0 ]] || tap_bail "needs root"
	for f in "$SC_X" "$XLB_BIN/xlbd" "$XLB_BIN/xlbctl" \
		"$XLB_BIN/xlb_decap.bpf.o"; do
		[[ -e $f ]] || tap_bail "$f is missing; run 'make'"
	done
	[[ -n $TAP_PYTHON ]] || tap_bail "python3 is missing"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# sc_begin [TOPO_UP ARGS...]: how every scenario starts: the checks of
# sc_require, $t_start, a scratch directory $work removed on exit, and the
# test network (topo_up ARGS).  Bails out (TAP) when any of it fails.
sc_begin() {
	sc_require
	t_start=$(now_ms)
	work=$(mktemp -d) || tap_bail "cannot make a scratch directory"
	trap 'rm -rf "$work"' EXIT
	topo_up "$@" >"$work/up.log" 2>&1 ||
		tap_bail "no network: $(cat "$work/up.log")"
}

# sc_serve: xlb-traffic serve on every backend (topo_serve), or bail out.
sc_serve() {
	topo_serve >"$work/serve.log" 2>&1 ||
		tap_bail "no servers: $(cat "$work/serve.log")"
}

# sc_xlbd: xlbd in the LB namespace (topo_xlbd_setup), or bail out.
sc_xlbd() {
	topo_xlbd_setup >"$work/xlbd.log" 2>&1 ||
		tap_bail "no xlbd: $(cat "$work/xlbd.log" "$TOPO_DIR/xlbd.log")"
}

sc_vip() {
	local vip=$1 fam=$2 n=$3 i ip out

	shift 3
	out=$(xlbctl vip add "$vip" "$@" 2>&1) || { echo "$out"; return 1; }
	for ((i = 0; i < n; i++)); do
		if [[ $fam == 4 ]]; then ip=${BACKEND_IP4[i]}; else ip=${BACKEND_IP6[i]}; fi
		out=$(xlbctl backend add "$vip" "$ip" name "${BACKENDS[i]}" 2>&1) ||
			{ echo "$out"; return 1; }
	done
}

# Backends are named after their host (name b1 ...), so table show's names
# are the ids xlb-traffic serve answers with.
sc_expect() {
	xlbctl -j table show "$1" | "$TAP_PYTHON" -c '
import json, sys
t = json.load(sys.stdin)
print(",".join("%s=%.6f" % (b["name"], b["share"])
               for b in t["backends"] if b["slots"] > 0))'
}

sc_vip_field() {
	xlbctl -j vip show "$1" | "$TAP_PYTHON" -c '
import json, sys
v = json.load(sys.stdin)["vips"][0]
print(eval(sys.argv[1]))' "$2"
}

sc_conns() {
	local host=$1 to=$2 n=$3 out=$4

	shift 4
	in_ns "$host" "$SC_X" conns --to "$to" -n "$n" --concurrency 32 \
		--bytes 256 --timeout 3000 -j "$@" >"$out" 2>"$out.err"
}

sc_conns_summary() {
	"$TAP_PYTHON" - "$1" <<-'EOF'
		import json, sys
		j = json.load(open(sys.argv[1]))
		f = {k: v for k, v in j["failures"].items() if v}
		per = " ".join("%s=%d (expected %.0f)" % (k, v["count"],
		               v["expected"] * j["completed"])
		               for k, v in sorted(j["backends"].items()))
		print("completed %d failed %d%s; %s; p %s" % (
		    j["completed"], j["failed"], " %s" % f if f else "", per,
		    "%.4g" % j["p"] if j.get("p") is not None else "-"))
	EOF
}

sc_hold_start() {
	local name=$1 host=$2 to=$3 n=$4 i

	shift 4
	: >"$TOPO_DIR/hold-$name.ctl"
	rm -f "$TOPO_DIR/hold-$name.ready"
	topo_bg "$host" "hold-$name" bash -c 'out=$1; shift; exec "$@" >"$out"' \
		_ "$TOPO_DIR/hold-$name.json" "$SC_X" hold --to "$to" -n "$n" \
		--control "$TOPO_DIR/hold-$name.ctl" \
		--ready "$TOPO_DIR/hold-$name.ready" --report-every 0.2 -j "$@"
	eval "SC_HOLD_PID_${name//-/_}=$TOPO_LAST_PID"
	for ((i = 0; i < 300; i++)); do
		[[ -e $TOPO_DIR/hold-$name.ready ]] && return 0
		kill -0 "$TOPO_LAST_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "hold $name did not get ready:"
	tail -5 "$TOPO_DIR/hold-$name.log"
	return 1
}

sc_hold_phase() {
	local i

	echo "phase $2" >>"$TOPO_DIR/hold-$1.ctl"
	# the tool reads its control file every 50 ms: wait until it has
	# started the phase, so what follows is counted in it (2 s)
	for ((i = 0; i < 100; i++)); do
		grep -q "^hold: t=[0-9.]* phase $2\$" "$TOPO_DIR/hold-$1.log" && return 0
		sleep 0.02
	done
	echo "hold $1 did not start phase $2" >&2
	return 1
}

sc_hold_open() {
	grep '^hold: t=.* open ' "$TOPO_DIR/hold-$1.log" | tail -1 |
		sed 's/^.*| *//'
}

sc_hold_stop() {
	local name=$1 pid i rc

	eval "pid=\${SC_HOLD_PID_${name//-/_}}"
	echo stop >>"$TOPO_DIR/hold-$name.ctl"
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	topo_stop "$pid" 2
	rc=$?
	[[ -s $TOPO_DIR/hold-$name.json ]] || {
		echo "hold $name wrote no result (exit status $rc):"
		tail -5 "$TOPO_DIR/hold-$name.log"
		return 1
	}
	return 0
}

sc_hold_summary() {
	"$TAP_PYTHON" - "$TOPO_DIR/hold-$1.json" <<-'EOF'
		import json, sys
		j = json.load(open(sys.argv[1]))
		r = {k: v for k, v in j["reasons"].items() if v}
		per = " ".join("%s=%d/%d" % (k, v["connections"], v["broken"])
		               for k, v in sorted(j["backends"].items()))
		ph = "; ".join("%s: sends %d replies %d broken %d" % (
		    p["name"], p["sends"], p["replies"], p["broken"])
		    for p in j["phases"])
		print("established %d broken %d%s sends %d replies %d in %.1f s; "
		      "connections/broken per backend %s; phases %s" % (
		    j["established"], j["broken"], " %s" % r if r else "",
		    j["sends"], j["replies"], j["seconds"], per, ph))
	EOF
}

sc_held_flows() {
	local host=$1 addr=$2

	in_ns "$host" ss -Htn state established "( dport = :80 )" |
		awk -v a="$addr" '{
			peer = $4; sub(/:80$/, "", peer); gsub(/[][]/, "", peer)
			if (peer == a) print "tcp " $3 " -> " $4
		}'
}

sc_explain() {
	"$TAP_PYTHON" "$SC_FLOWS_PY" explain "${1:-$XLBD_SOCK}"
}

sc_event() {
	xlbctl -j stats | "$TAP_PYTHON" -c \
		'import json, sys; print(json.load(sys.stdin)["events"][sys.argv[1]])' "$1"
}

sc_in_table() {
	local vip=$1 want=$2 i n

	shift 2
	for ((i = 0; i < 100; i++)); do
		n=$("$@" -j vip show "$vip" 2>&1 | "$TAP_PYTHON" -c \
			'import json, sys; print(json.load(sys.stdin)["vips"][0]["in_table"])' 2>&1)
		[[ $n == "$want" ]] && break
		sleep 0.1
	done
	echo "$n"
	[[ $n == "$want" ]]
}

# sc_result STATUS NAME [DIAG...]: tap_result without the empty diagnostics.
sc_result() {
	local st=$1 name=$2 d args=()

	shift 2
	for d in "$@"; do
		[[ -n $d ]] && args+=("$d")
	done
	tap_result "$st" "$name" "${args[@]}"
}
