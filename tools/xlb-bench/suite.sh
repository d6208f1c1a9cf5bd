#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The benchmark suite (make bench): runs every xlb-bench figure, prints one
# report (tools/xlb-bench/report.py), writes OUT/results.json (one record
# per figure) and PNG plots in OUT (default build/bench, build/bench-quick
# with --quick).  Method of each figure: BENCHMARKS.md.
#
#   tools/xlb-bench/suite.sh [--quick] [--out DIR]
#
# --quick is the smoke mode of the test suite (tests/unit/bench.sh): every
# part runs, on small cases, in seconds; its numbers mean nothing.
# It measures and reports; it never judges a number.  Exit status: 0 when
# every part that can run here ran, 1 when one failed, 2 for bad arguments.
# Parts that need root are skipped (and said so) without it.
set -u
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}
BENCH=$O/xlb-bench
OUT=
QUICK=
# a figure whose (max - min) / value exceeds this gets a warning
SPREAD_WARN=${SPREAD_WARN:-0.25}

usage() {
	echo "usage: tools/xlb-bench/suite.sh [--quick] [--out DIR]"
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--quick) QUICK=--quick ;;
	--out)
		[[ $# -ge 2 ]] || { usage >&2; exit 2; }
		OUT=$2
		shift
		;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

# a smoke run never overwrites the figures of a real one
[[ -n $OUT ]] || OUT=$O/bench${QUICK:+-quick}
if [[ ! -x $BENCH ]]; then
	echo "bench: $BENCH is not built (make $BENCH)" >&2
	exit 1
fi
RAW=$OUT/raw
rm -rf "$RAW"
mkdir -p "$RAW" || exit 1
rm -f "$OUT"/*.png "$OUT"/*.dat "$OUT"/*.gp "$OUT"/results.json "$OUT"/results.md \
	"$OUT"/report.txt
cut -d' ' -f1-3 /proc/loadavg >"$RAW/loadavg.start"
: >"$RAW/parts"

# run_part NAME NEEDS_ROOT ABOUT_SECONDS XLB-BENCH-ARGS...
# Records "NAME STATUS SECONDS" in RAW/parts; -j output in RAW/NAME.jsonl.
run_part() {
	local name=$1 root=$2 about=$3 t0 rc
	shift 3
	if [[ $root == root && $(id -u) -ne 0 ]]; then
		echo "$name skipped 0 needs root" >>"$RAW/parts"
		echo "bench: $name: skipped, needs root" >&2
		return 0
	fi
	[[ -n $QUICK ]] && about=few
	echo "bench: $name (about $about s) ..." >&2
	t0=$(date +%s%N)
	"$BENCH" $QUICK -j "$@" >"$RAW/$name.jsonl" 2>"$RAW/$name.err"
	rc=$?
	t0=$((($(date +%s%N) - t0) / 1000000))
	t0=$((t0 / 1000)).$(printf %03d $((t0 % 1000)))
	if [[ $rc -eq 0 ]]; then
		echo "$name ok $t0" >>"$RAW/parts"
	else
		echo "$name failed $t0 exit status $rc" >>"$RAW/parts"
		echo "bench: $name failed (exit status $rc):" >&2
		tail -5 "$RAW/$name.err" >&2
	fi
}

run_part verifier+pkt root 60 pkt
# the same paths with a 1000-flow connection table: the size other XDP
# balancers run with in this harness when no per-CPU tables are set up
run_part pkt-ct1000 root 60 --conntrack-entries 1000 pkt
# issue 21's paths on every CPU at once, beside one CPU alone: what lines
# shared between CPUs cost (pkt_mq.c)
run_part pkt-mq root 60 pkt-mq
run_part pkt-scale root 120 pkt-scale
run_part tables user 20 tables
run_part publish root 5 publish
run_part memory root 2 memory
if [[ -x $O/xlbd ]]; then
	run_part control root 60 control
else
	echo "control skipped 0 needs $O/xlbd (make)" >>"$RAW/parts"
	echo "bench: control: skipped, $O/xlbd is not built" >&2
fi

# forwarding rate and connections per second on a real path (the e2e
# topology of tests/e2e/lib/topo.sh): tools/xlb-bench/path.sh
run_part path root 120 path

# three LB hosts behind a router (tests/e2e/lib/edge.sh): failover,
# reroute, change propagation, agreement: tools/xlb-bench/cluster.sh
if command -v bird >/dev/null && command -v etcd >/dev/null; then
	run_part cluster root 120 cluster
else
	echo "cluster skipped 0 needs bird2 and etcd (make deps)" >>"$RAW/parts"
	echo "bench: cluster: skipped, bird2 or etcd is missing" >&2
fi

cut -d' ' -f1-3 /proc/loadavg >"$RAW/loadavg.end"

# --- results.json, the report, the plots ------------------------------------
python3 tools/xlb-bench/report.py "$OUT" "$SPREAD_WARN" "${QUICK:+1}"
