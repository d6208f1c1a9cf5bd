#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# This tree's benchmark figures against another commit's, measured in
# turn: the other commit is built in a temporary worktree, and its
# `xlb-bench -j ARGS` and this tree's run one after the other, ROUNDS
# times, the order swapped every round.  On a shared machine whose speed
# drifts by a third within seconds, only figures taken this close
# together compare; whole `make bench` runs minutes apart do not.
#
#   tools/xlb-bench/ab.sh [--rounds N] REV [-- XLB-BENCH-ARGS...]
#
# REV: any commit (hash, tag, branch).  XLB-BENCH-ARGS: what each run
# measures (default: --runs 5 --quick tables); -j is added.  Prints per
# figure the median over the rounds of each build's figure, and this
# tree's over the other's; the other build's output is in the log named
# on failure.  Needs this tree built (make all; O: its build directory,
# default build); the worktree is removed at the end, also on failure.
set -u -o pipefail
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}
rounds=20
rev=
args=()
usage() { sed -n '3,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; }
while [[ $# -gt 0 ]]; do
	case $1 in
	--rounds)
		rounds=${2:-}
		[[ $rounds =~ ^[1-9][0-9]{0,3}$ ]] ||
			{ echo "ab.sh: --rounds needs a number from 1 to 9999" >&2; exit 2; }
		shift ;;
	-h | --help) usage; exit 0 ;;
	--) shift; args=("$@"); break ;;
	-*) echo "ab.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	*)
		[[ -z $rev ]] || { echo "ab.sh: one commit only: $rev, $1" >&2; exit 2; }
		rev=$1 ;;
	esac
	shift
done
[[ -n $rev ]] || { echo "ab.sh: which commit? (--help)" >&2; exit 2; }
[[ ${#args[@]} -gt 0 ]] || args=(--runs 5 --quick tables)
commit=$(git rev-parse --verify --quiet "$rev^{commit}") ||
	{ echo "ab.sh: $rev is not a commit of this repository" >&2; exit 2; }
[[ -x $O/xlb-bench ]] ||
	{ echo "ab.sh: build this tree first (make all)" >&2; exit 2; }

wt=$(mktemp -d /tmp/xlb-ab.XXXXXX) || exit 1
log=$wt.log
out=$wt.records
cleanup() {
	git worktree remove --force "$wt" >/dev/null 2>&1
	rm -rf "$wt"
	rm -f "$out"
	git worktree prune >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 130' INT TERM
git worktree add --quiet --detach "$wt" "$commit" >"$log" 2>&1 ||
	{ echo "ab.sh: cannot check out $rev (see $log)" >&2; exit 1; }
echo "# building ${commit:0:12} in $wt" >&2
make -C "$wt" -j"$(nproc)" --no-print-directory all >>"$log" 2>&1 ||
	{ echo "ab.sh: ${commit:0:12} does not build (see $log)" >&2; exit 1; }

run() {	# run WHO BENCH: its records, each line prefixed with WHO
	"$2" -j "${args[@]}" 2>>"$log" | sed "s/^/$1 /" >>"$out" ||
		{ echo "ab.sh: $2 failed (see $log)" >&2; exit 1; }
}
: >"$out"
for ((i = 0; i < rounds; i++)); do
	if ((i % 2)); then
		run this "$O/xlb-bench"
		run other "$wt/build/xlb-bench"
	else
		run other "$wt/build/xlb-bench"
		run this "$O/xlb-bench"
	fi
done
rm -f "$log"
python3 - "$out" "${commit:0:12}" "$rounds" <<'EOF'
import json, statistics, sys

vals = {}
order = []
for line in open(sys.argv[1]):
    who, rec = line.split(" ", 1)
    try:
        r = json.loads(rec)
    except ValueError:
        continue
    # the figure: "value", or "median" in control's records
    v = r.get("value", r.get("median"))
    if not isinstance(v, (int, float)) or "name" not in r:
        continue
    if r["name"] not in vals:
        vals[r["name"]] = {"this": [], "other": []}
        order.append((r["name"], r.get("unit", "")))
    vals[r["name"]][who].append(v)
print("# medians over %s rounds in turn; other: %s" % (sys.argv[3], sys.argv[2]))
print("%-36s %12s %12s %7s  unit" % ("figure", "other", "this", "ratio"))
for name, unit in order:
    o, t = vals[name]["other"], vals[name]["this"]
    if not o or not t:
        continue
    mo, mt = statistics.median(o), statistics.median(t)
    f = "%12.3f" if max(mo, mt) < 100 else "%12.1f"
    print(("%-36s " + f + " " + f + " %7.3f  %s") %
          (name, mo, mt, mt / mo if mo else float("nan"), unit))
EOF
