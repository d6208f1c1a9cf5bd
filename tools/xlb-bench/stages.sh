#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Where a packet's time goes, stage by stage, on the paths of
# `xlb-bench pkt`.  The data path is built again once per stage N with
# XLB_STOP=N (bpf/xlb.bpf.c: a packet of the short path that reaches the
# end of stage N leaves as XDP_TX there), and each such program runs in
# `xlb-bench pkt --against` beside this build's, on the same maps, in
# alternating blocks.  The ratio r_N of that run (whole program over the
# one stopped after N, at the same moment) gives the share of the whole
# program's time spent up to the end of stage N: 1 / r_N.  A plain
# `xlb-bench pkt` run gives the share of the XDP_TX-only program, the
# test run's own cost (stage 0).
#
#   tools/xlb-bench/stages.sh [-j] [--rounds N] [--calls N] [PATH...]
#
# PATHs: paths of `xlb-bench pkt` that leave by the short path with
# XDP_TX (default: ct_hit_rotate ct_hit_zipf new_flow stateless_rotate).
# A path whose packets leave earlier (ct_hit: from the flow cache) shows
# shares near 1 from its first stage.  Prints, per path and stage, the
# share up to its end, the stage's own share and that share in ns of the
# whole program (its median in the plain run); -j: one JSON object per
# figure, as the other xlb-bench subcommands.  Needs root and clang;
# builds into $O/stages (O: the build directory, default build).
#
# The figures carry the noise of code layout: two programs that differ
# only in where their code lies differ by a few percent, so a stage's
# share is good to about 0.05 (docs/datapath.md).  They are for finding
# where the time goes, not for comparing builds: that is `--against`.
set -u
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}
json=0 rounds=6 calls=100000
paths=()
while [[ $# -gt 0 ]]; do
	case $1 in
	-j | --json) json=1 ;;
	--rounds) rounds=${2:?--rounds needs a number}; shift ;;
	--calls) calls=${2:?--calls needs a number}; shift ;;
	-h | --help) sed -n '3,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 0 ;;
	-*) echo "stages.sh: unknown option $1" >&2; exit 2 ;;
	*) paths+=("$1") ;;
	esac
	shift
done
[[ ${#paths[@]} -gt 0 ]] || paths=(ct_hit_rotate ct_hit_zipf new_flow stateless_rotate)
[[ $rounds =~ ^[1-9][0-9]*$ && $calls =~ ^[1-9][0-9]*$ ]] || {
	echo "stages.sh: --rounds and --calls take a positive number" >&2
	exit 2
}
bench=$O/xlb-bench
[[ -x $bench && -f $O/xlb.bpf.o ]] || {
	echo "stages.sh: no $bench or $O/xlb.bpf.o: run make first" >&2
	exit 1
}
names=("" "parse, filter, flow cache" "VIP and its counters" "pick"
       "counters" "encapsulation")
stages=5
dir=$O/stages
mkdir -p "$dir" || exit 1
for ((n = 1; n <= stages; n++)); do
	make -s --no-print-directory O="$dir/s$n" BPF_EXTRA="-DXLB_STOP=$n" "$dir/s$n/xlb.bpf.o" ||
		{ echo "stages.sh: cannot build the program stopped after stage $n" >&2; exit 1; }
done

out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
# run N FIGURE [ARGS...]: one xlb-bench pkt run of path $p; its FIGURE,
# marked with stage N, goes to $out
run() {
	local n=$1 fig=$2 o
	shift 2
	o=$("$bench" -j --rounds "$rounds" --calls "$calls" "$@" --path "$p" pkt 2>&1)
	if ! grep -q "\"name\":\"$fig\"" <<<"$o"; then
		echo "stages.sh: $p: xlb-bench printed no $fig:" >&2
		grep -v '^{' <<<"$o" | sed 's/^/  /' >&2
		exit 1
	fi
	grep "\"name\":\"$fig\"" <<<"$o" | sed "s/^/$n /" >>"$out"
}
for p in "${paths[@]}"; do
	# the plain run first: the path's cost and its ratio to XDP_TX
	run 0 "pkt.$p"
	for ((n = 1; n <= stages; n++)); do
		run "$n" "pkt_vs.$p" --against "$dir/s$n/xlb.bpf.o"
	done
done

python3 tools/xlb-bench/stages.py "$out" "$json" "${names[@]:1}"
