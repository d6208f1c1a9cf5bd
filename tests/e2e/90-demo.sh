#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo, short and without a terminal: tools/demo.sh 15 must end with
# status 0, print its summary (moved fractions next to their ideals, no
# failed new connection, no broken held connection), print no terminal
# escapes, and leave no namespace, pin, marker or temporary folder behind.
# A bad DURATION is refused.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/demo.sh

demo_begin
demo_run demo 15
rc=$demo_rc
tail_out=$(tail -40 "$out")

res "$rc" "tools/demo.sh 15 without a terminal exits 0 (status $rc)" \
	"$([[ $rc -eq 0 ]] || echo "$tail_out")"

# "NAME  moved X% of the table (ideal Y%)": X at least Y less rounding, at
# most 1.5 Y (Maglev moves a little more than the ideal, never much more)
moved_ok() {
	local name=$1 line x y

	line=$(grep -E "^ +$name +moved [0-9.]+% of the table \(ideal [0-9.]+%\)" "$out")
	[[ -n $line ]] || { echo "no line '$name moved X% of the table (ideal Y%)'"; return 1; }
	x=$(sed -E 's/.*moved ([0-9.]+)%.*/\1/' <<<"$line")
	y=$(sed -E 's/.*ideal ([0-9.]+)%.*/\1/' <<<"$line")
	echo "$line"
	awk -v x="$x" -v y="$y" 'BEGIN { exit !(x >= y - 0.2 && x <= 1.5 * y + 0.2) }' ||
		{ echo "moved $x% is not near the ideal $y%"; return 1; }
}

for name in "add b4" "drain b2" "delete b2"; do
	d=$(moved_ok "$name")
	tap_result $? "summary: $name moved about its ideal share of the table" "$d"
done

line=$(grep -E '^ +new connections: [0-9]+ completed, [0-9]+ failed$' "$out")
tap_result "$([[ $line =~ ([0-9]+)\ completed,\ 0\ failed && ${BASH_REMATCH[1]} -gt 0 ]]; echo $?)" \
	"summary: new connections completed, none failed" "${line:-no 'new connections:' line}"

line=$(grep -E '^ +held connections: [0-9]+ of [0-9]+ established$' "$out")
tap_result "$([[ $line =~ ([0-9]+)\ of\ ([0-9]+) && ${BASH_REMATCH[1]} -eq ${BASH_REMATCH[2]} ]]; echo $?)" \
	"summary: every held connection established" "${line:-no 'held connections:' line}"

tap_result "$(grep -qE '^ +broken connections: 0$' "$out"; echo $?)" \
	"summary: broken connections: 0" "$(grep 'broken connections' "$out")"

tap_result "$(grep -qE '^ +demo: ok \([0-9]+ s\)$' "$out"; echo $?)" \
	"summary ends with 'demo: ok'" "$(tail -3 "$out")"

demo_common demo xdemo

tap_done
