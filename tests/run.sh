#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run test tiers and print one summary line over all their test cases:
#   N passed, N failed, N skipped
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
	local prog=$1 log rc p f s
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
	rm -f "$log"
}

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
