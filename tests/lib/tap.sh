# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# TAP for the shell tests of every tier (tests/run.sh counts "ok N" /
# "not ok N"); sourcing it prints the version line.  The plan is printed at
# the end (tap_done), so a test may decide its cases as it goes.
#
#   tap_result STATUS NAME [DIAGNOSTIC...]   0 = ok
#   tap_ok NAME, tap_not_ok NAME             tap_result 0 / 1 NAME
#   tap_check NAME CMD...                    ok if CMD succeeds; its output
#                                            becomes diagnostics on failure
#   tap_skip NAME REASON
#   tap_diag TEXT...                         "# TEXT" lines
#   tap_bail REASON                          "Bail out!", exit 1
#   tap_done [PLANNED]                       plan line; exit 1 if any failed
#                                            (or not PLANNED cases ran)
#   tap_replay FILE                          the cases a background subshell
#                                            wrote to FILE, numbered on
#                                            from here; other lines as they
#                                            are
#   json_get FILE PYTHON-EXPR                the expression over `j` (the
#                                            parsed file), printed

TAP_N=0
TAP_FAILED=0

echo "TAP version 13"

tap_diag() {
	printf '%s\n' "$@" | sed 's/^/# /'
}

tap_result() {
	local status=$1 name=$2

	shift 2
	TAP_N=$((TAP_N + 1))
	if [[ $status -eq 0 ]]; then
		echo "ok $TAP_N - $name"
		[[ $# -gt 0 ]] && tap_diag "$@"
		return 0
	fi
	echo "not ok $TAP_N - $name"
	TAP_FAILED=$((TAP_FAILED + 1))
	[[ $# -gt 0 ]] && printf '%s\n' "$@" | grep . | sed 's/^/#   /'
	return 0
}

tap_ok() {
	tap_result 0 "$1"
}

tap_not_ok() {
	tap_result 1 "$1"
}

tap_check() {
	local name=$1 out rc

	shift
	out=$("$@" 2>&1)
	rc=$?
	if [[ $rc -eq 0 ]]; then
		tap_result 0 "$name"
	else
		tap_result 1 "$name" "$out"
	fi
	return $rc
}

tap_skip() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1 # SKIP $2"
}

tap_bail() {
	echo "Bail out! $*"
	exit 1
}

tap_done() {
	echo "1..$TAP_N"
	if [[ -n ${1:-} && $TAP_N -ne $1 ]]; then
		echo "# planned $1 cases, ran $TAP_N"
		return 1
	fi
	[[ $TAP_FAILED -eq 0 ]]
}

tap_replay() {
	local line

	while IFS= read -r line; do
		if [[ $line =~ ^ok\ [0-9]+\ -\ (.*)$ ]]; then
			TAP_N=$((TAP_N + 1))
			echo "ok $TAP_N - ${BASH_REMATCH[1]}"
		elif [[ $line =~ ^not\ ok\ [0-9]+\ -\ (.*)$ ]]; then
			TAP_N=$((TAP_N + 1))
			TAP_FAILED=$((TAP_FAILED + 1))
			echo "not ok $TAP_N - ${BASH_REMATCH[1]}"
		else
			printf '%s\n' "$line"
		fi
	done <"$1"
}

# Debian's python3 first: a version manager's shim costs 100+ ms a call.
TAP_PYTHON=$(command -v /usr/bin/python3 || command -v python3)

json_get() {
	"$TAP_PYTHON" -c '
import json, sys
with open(sys.argv[1]) as f:
    j = json.load(f)
v = eval(sys.argv[2])
print(v if not isinstance(v, (dict, list)) else json.dumps(v))
' "$1" "$2"
}
