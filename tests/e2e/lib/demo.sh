# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# What the tests of the demos (tests/e2e/90-demo.sh, 91-demo-cluster.sh)
# share.  Source after tests/lib/tap.sh, from the top of the tree.
#
#   demo_begin TOOL...          root, the build's programs and TOOLs on
#                               PATH, or bail out; a scratch folder $work
#   demo_run SCRIPT SECONDS     tools/SCRIPT.sh SECONDS without a terminal:
#                               output in $out, status in $demo_rc, pid in
#                               $demo_pid (its namespaces are TAG<pid>-*)
#   res STATUS NAME [DIAG]      tap_result, an empty diagnostic left out
#   demo_common SCRIPT TAG      the cases every demo passes: no terminal
#                               escapes in $out, nothing of TAG<pid> left
#                               (namespaces, pins, marker, folder), and a
#                               bad DURATION refused with the usage

O=${O:-build}

demo_begin() {
	local f t

	[[ $(id -u) -eq 0 ]] || tap_bail "needs root"
	for f in xlbd xlbctl xlb-traffic xlb_decap.bpf.o; do
		[[ -e $O/$f ]] || tap_bail "$O/$f is missing; run 'make'"
	done
	for t in "$@"; do
		command -v "$t" >/dev/null || tap_bail "$t is missing; run 'make deps'"
	done
	work=$(mktemp -d) || exit 1
	trap 'rm -rf "$work"' EXIT
}

demo_run() {
	out=$work/demo.out
	"tools/$1.sh" "$2" </dev/null >"$out" 2>&1 &
	demo_pid=$!
	wait "$demo_pid"
	demo_rc=$?
}

res() {
	local st=$1 name=$2

	shift 2
	if [[ $# -gt 0 && -n ${1// /} ]]; then
		tap_result "$st" "$name" "$@"
	else
		tap_result "$st" "$name"
	fi
}

demo_common() {
	local script=$1 tag=$2 run=$2$demo_pid left d bad rc

	res "$(! grep -q $'\033' "$out"; echo $?)" \
		"no terminal escapes without a terminal" \
		"$(grep -q $'\033' "$out" && echo "$(grep -c $'\033' "$out") lines with ESC")"

	left=$(ip netns list | awk -v p="$run-" 'index($1, p) == 1 { print $1 }')
	for d in /sys/fs/bpf/xlb/"$run" /sys/fs/bpf/xlb/"$run"-* \
		 /run/xlb-topo/"$run" /tmp/"$run"-*; do
		[[ -e $d ]] && left+=" $d"
	done
	res "$([[ -z ${left// /} ]]; echo $?)" \
		"nothing left behind (namespaces, pins, marker, folder of $run)" "$left"

	for bad in abc -5 0; do
		"tools/$script.sh" "$bad" </dev/null >"$work/bad.out" 2>&1
		rc=$?
		tap_result "$([[ $rc -eq 2 ]] && grep -q usage "$work/bad.out"; echo $?)" \
			"tools/$script.sh '$bad' is refused with the usage (status $rc)" \
			"$(cat "$work/bad.out")"
	done
}
