#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The fuzzers (tests/fuzz/, built here if missing), each for a short
# bounded run from its seeds: FUZZ_UNIT_SECONDS (default 5) and at most
# FUZZ_UNIT_RUNS inputs.  A crash, leak, sanitizer report or broken
# property fails the case and leaves the input in a temporary folder that
# the diagnostics name.  `make fuzz` runs them for longer.
set -u
cd "$(dirname "$0")/../.." || exit 1

O=${O:-build}
SECONDS_EACH=${FUZZ_UNIT_SECONDS:-5}
RUNS=${FUZZ_UNIT_RUNS:-2000000}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

. tests/lib/tap.sh

# `make test` and `make test-unit` build them; after a plain `make`, here
if [[ ! -x $O/fuzz/config || ! -x $O/fuzz/control ]]; then
	make -s O="$O" "$O/fuzz/config" "$O/fuzz/control" >"$tmp/make.log" 2>&1 ||
		tap_bail "cannot build the fuzzers: $(tail -3 "$tmp/make.log")"
fi

# fuzz NAME SEEDS: one bounded run of $O/fuzz/NAME
fuzz() {
	local name=$1 seeds=$2 rc

	mkdir -p "$tmp/$name"
	"$O/fuzz/$name" -max_total_time="$SECONDS_EACH" -runs="$RUNS" \
		-print_final_stats=1 -artifact_prefix="$tmp/" \
		"$tmp/$name" "$seeds" >"$tmp/$name.log" 2>&1
	rc=$?
	# a crash report prints the stats twice
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$name.log" | tail -1)
	if [[ $rc -ne 0 ]]; then
		cp -r "$tmp" "/tmp/xlb-fuzz-$$" 2>/dev/null
		tap_result 1 "$name fuzzer: $runs inputs, no crash, leak or broken property" \
			"$(tail -40 "$tmp/$name.log")" \
			"inputs kept in /tmp/xlb-fuzz-$$"
	else
		tap_result 0 "$name fuzzer: $runs inputs, no crash, leak or broken property"
	fi
	# a run that executed nothing proves nothing
	tap_check "$name fuzzer ran its seeds and more" \
		test "${runs:-0}" -gt 100
}

fuzz config tests/fuzz/corpus
fuzz control tests/fuzz/corpus-control
tap_done 4
