#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run test tiers and print one summary line over all their test cases:
#   N passed, N failed, N skipped
#
#   tests/run.sh TIER... [--beside TIER...]...
#
# Tiers run in the order given.  Each --beside starts a group of tiers
# that runs at the same time as the others, in a process of its own (make
# test runs the qemu guests, which keep one core busy, beside the host's
# tiers); a side group's output is kept in $O/tests/beside-N.log and
# printed after the first group's, and the summary counts every group.
# Every test program prints TAP (C: kselftest harness; shell: plain TAP).
# A program that exits non-zero without reporting a failed case counts as
# one failed case.  A tier that cannot run here (no privilege, Debian
# packages missing: it says which) is skipped, except under CI=true, where
# it is a failure.
set -u
cd "$(dirname "$0")/.." || exit 1
O=${O:-build}
pass=0 fail=0 skip=0

# Executables directly in a build folder (not the BPF objects beside them).
programs() {
	[[ -d "$1" ]] && find "$1" -maxdepth 1 -type f -perm -u+x | sort
}

tier_programs() {
	case "$1" in
	unit)      programs "$O"/tests/unit; ls -1 tests/unit/*.sh 2>/dev/null ;;
	unit-asan) programs "$O"/asan/tests/unit ;;
	bpf)       programs "$O"/tests/bpf ;;
	net)       programs "$O"/tests/net ;;
	daemon)    programs "$O"/tests/daemon ;;
	# the package test first: its debootstraps wait on the registry,
	# while the host's tiers beside it have the cores busy
	vm)        { ls -1 tests/vm/pkg.sh; ls -1 tests/vm/*.sh; } 2>/dev/null |
			   awk '!seen[$0]++' ;;
	*)         ls -1 tests/"$1"/*.sh 2>/dev/null ;;
	esac
}

# The package groups of tools/deps.sh a tier needs.
tier_deps() {
	case "$1" in
	unit)           echo unit fuzz ;;
	unit-asan)      echo unit ;;
	vm)             echo vm kmod pkg ;;
	*)              echo "$1" ;;
	esac
}

# Why a tier cannot run here, or nothing.
tier_blocked() {
	local missing

	case "$1" in
	bpf|net|daemon|e2e|vm)
		if [[ $(id -u) -ne 0 ]]; then
			echo "needs root"
			return
		fi ;;
	esac
	# shellcheck disable=SC2046  # one group a word
	missing=$(tools/deps.sh --missing $(tier_deps "$1"))
	[[ -z "$missing" ]] || echo "missing Debian packages: $missing (tools/deps.sh $(tier_deps "$1"), as root)"
}

run_program() {
	local prog=$1 log rc p f s t0=$SECONDS
	log=$(mktemp)
	echo "# === $prog"
	ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		"$prog" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=$(grep -cE '^ok [0-9]+' "$log")
	s=$(grep -cE '^ok [0-9]+.*# SKIP' "$log")
	f=$(grep -cE '^not ok [0-9]+' "$log")
	p=$((p - s))
	if [[ $rc -ne 0 && $f -eq 0 ]]; then
		echo "not ok - $prog exited with status $rc"
		f=1
	fi
	if [[ $((p + s + f)) -eq 0 ]]; then
		echo "not ok - $prog reported no test case"
		f=1
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	echo "# --- $prog: $((SECONDS - t0)) s"
	rm -f "$log"
}

# Side groups: the arguments after each --beside, up to the next one.
groups=() cur=()
for a in "$@"; do
	if [[ $a == --beside ]]; then
		groups+=("${cur[*]}") cur=()
	else
		cur+=("$a")
	fi
done
groups+=("${cur[*]}")
if [[ ${#groups[@]} -gt 1 ]]; then
	mkdir -p "$O"/tests
	pids=() t0=$SECONDS
	for ((i = 1; i < ${#groups[@]}; i++)); do
		# shellcheck disable=SC2086  # one tier a word
		"$0" ${groups[i]} >"$O/tests/beside-$i.log" 2>&1 &
		pids[i]=$!
		echo "# beside: tiers ${groups[i]} (output in $O/tests/beside-$i.log)"
	done
	# shellcheck disable=SC2086
	"$0" ${groups[0]} | tee "$O/tests/beside-0.log"
	for ((i = 1; i < ${#groups[@]}; i++)); do
		wait "${pids[i]}"
		echo "# === tiers ${groups[i]} (beside the others)"
		sed '$d' "$O/tests/beside-$i.log"
	done
	for ((i = 0; i < ${#groups[@]}; i++)); do
		last=$(tail -n 1 "$O/tests/beside-$i.log")
		if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
			echo "# tiers ${groups[i]}: $last"
			pass=$((pass + BASH_REMATCH[1]))
			fail=$((fail + BASH_REMATCH[2]))
			skip=$((skip + BASH_REMATCH[3]))
		else
			echo "not ok - tiers ${groups[i]} ended without a summary"
			fail=$((fail + 1))
		fi
	done
	echo "# all groups: $((SECONDS - t0)) s"
	echo "$pass passed, $fail failed, $skip skipped"
	[[ $fail -eq 0 ]]
	exit
fi

for tier in "$@"; do
	why=$(tier_blocked "$tier")
	progs=$(tier_programs "$tier")
	if [[ -n "$why" ]]; then
		if [[ "${CI:-}" == true ]]; then
			echo "not ok - tier $tier cannot run: $why"
			fail=$((fail + 1))
		else
			echo "ok - tier $tier # SKIP $why"
			skip=$((skip + 1))
		fi
		continue
	fi
	if [[ -z "$progs" ]]; then
		echo "not ok - tier $tier has no test programs"
		fail=$((fail + 1))
		continue
	fi
	echo "# --- tier $tier"
	for prog in $progs; do
		run_program "$prog"
	done
done

echo "$pass passed, $fail failed, $skip skipped"
[[ $fail -eq 0 ]]
