#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The docs a newcomer reads stay true to the tree (tests/lib/doccheck.py):
# relative links in README.md, docs/*.md, BENCHMARKS.md and kmod/README.md
# reach files that exist, and so do the tree's paths in their code spans;
# every "docs/design.md contract N" cited anywhere names a contract
# docs/design.md has, and every page of docs/ a file names exists;
# README.md stays under 150 lines; the make goals and xlbctl commands
# README.md names exist (the Makefile, xlbctl --help).  Then the checker
# is shown to fail: on copies of the docs, each with one fault put in, it
# must exit 1 and name the fault, and a copy without a fault must pass.
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh

XLBCTL=${O:-build}/xlbctl
[[ "$XLBCTL" == /* ]] || XLBCTL=$PWD/$XLBCTL
[[ -x "$XLBCTL" ]] || tap_bail "$XLBCTL is missing; run 'make $XLBCTL'"
CHECK=("$TAP_PYTHON" "$PWD/tests/lib/doccheck.py" --xlbctl "$XLBCTL")
tmp=$(mktemp -d) || tap_bail "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

# the checker on the tree itself, and that it found things to check
out=$("${CHECK[@]}" --root . 2>&1)
rc=$?
tap_result $rc "the tree's docs pass the check" "$out"
summary=$(tail -n 1 <<<"$out")
if [[ $summary =~ ([0-9]+)\ relative\ links\ and\ paths,\ ([0-9]+)\ contracts,\ ([0-9]+)\ citations,\ ([0-9]+)\ make\ goals,\ ([0-9]+)\ xlbctl ]] &&
   ((BASH_REMATCH[1] > 0 && BASH_REMATCH[2] > 0 && BASH_REMATCH[3] > 0 &&
     BASH_REMATCH[4] > 0 && BASH_REMATCH[5] > 0)); then
	tap_ok "it checked links, contracts, citations, make goals and xlbctl commands"
else
	tap_not_ok "it checked links, contracts, citations, make goals and xlbctl commands" \
		"summary: $summary"
fi

# copy: a fresh copy of the docs the checker reads, in $tmp/t, beside
# links to the folders of the tree they name
copy() {
	local d

	rm -rf "$tmp/t"
	mkdir -p "$tmp/t/src"
	cp -r README.md BENCHMARKS.md Makefile docs "$tmp/t/"
	for d in bpf debian dist kmod tests tools user; do
		ln -s "$PWD/$d" "$tmp/t/$d"
	done
}

# faulty NAME EXPECTED: the checker on $tmp/t exits 1 and prints EXPECTED
faulty() {
	local name=$1 expected=$2 out rc

	out=$("${CHECK[@]}" --root "$tmp/t" 2>&1)
	rc=$?
	if [[ $rc -eq 1 ]] && grep -qF -- "$expected" <<<"$out"; then
		tap_ok "$name"
	else
		tap_not_ok "$name" "exit status $rc (want 1), want a line with: $expected" "$out"
	fi
}

copy
tap_check "a copy of the docs without a fault passes" "${CHECK[@]}" --root "$tmp/t"

# Names of missing pages are put together here, so that this file names none.
guide=docs/walkthrough
copy
printf 'See [the guide](%s.md).\n' "$guide" >>"$tmp/t/README.md"
faulty "a link to a missing file fails" \
	"README.md:$(wc -l <"$tmp/t/README.md"): link to a missing file: $guide.md"

copy
printf '/* how it works: %s.md */\n' "$guide" >"$tmp/t/src/e.c"
faulty "a file naming a page of docs/ that is not there fails" \
	"src/e.c:1: names $guide.md, which is not in the tree"

copy
printf 'The table is built by `user/lib/maglev.c` and `user/maglev.c`.\n' \
	>>"$tmp/t/docs/datapath.md"
faulty "a path in a code span that is not in the tree fails" \
	"names a path that is not in the tree: user/maglev.c"
out=$("${CHECK[@]}" --root "$tmp/t" 2>&1)
if grep -q "user/lib/maglev.c" <<<"$out"; then
	tap_not_ok "a path that is in the tree passes" "$out"
else
	tap_ok "a path that is in the tree passes"
fi

copy
printf 'Back to [the start](../README.md#try-it), on to [x](nowhere/x.md).\n' \
	>>"$tmp/t/docs/operations.md"
faulty "a link from docs/ to a missing file fails" "link to a missing file: nowhere/x.md"
out=$("${CHECK[@]}" --root "$tmp/t" 2>&1)
if grep -q "README.md#try-it" <<<"$out"; then
	tap_not_ok "a link with an anchor to an existing file passes" "$out"
else
	tap_ok "a link with an anchor to an existing file passes"
fi

# Citations are put together here so that this file cites nothing itself.
cite="docs/design.md contract"
copy
printf '/* as %s 99 says */\n' "$cite" >"$tmp/t/src/a.c"
faulty "a citation of a contract design.md lacks fails" \
	"src/a.c:1: cites $cite 99"

copy
printf '/*\n * kept whole (docs/design.md\n * %ss 2 and 98).\n */\n' "${cite#* }" \
	>"$tmp/t/src/b.c"
faulty "a citation over a comment's line break is read" \
	"src/b.c:2: cites $cite 98"
out=$("${CHECK[@]}" --root "$tmp/t" 2>&1)
if grep -q "contract 2," <<<"$out"; then
	tap_not_ok "a contract design.md has is not reported" "$out"
else
	tap_ok "a contract design.md has is not reported"
fi

copy
old=DESIGN
printf '# the table (%s contract 2)\n' "$old" >"$tmp/t/src/c.sh"
faulty "a citation of the design by its old name fails" \
	"src/c.sh:1: cites the design as DESIGN"

copy
sed -i 's/^### 4\. /### Four. /' "$tmp/t/docs/design.md"
printf '/* published whole (%s 4) */\n' "$cite" >"$tmp/t/src/d.c"
faulty "a contract taken out of design.md fails where it is cited" \
	"src/d.c:1: cites $cite 4"

copy
for i in $(seq 50); do printf 'more\n\n\n' >>"$tmp/t/README.md"; done
faulty "a README.md over 150 lines fails" "more than 150: move the detail into docs/"

copy
printf 'Then `make frobnicate` does the rest.\n' >>"$tmp/t/README.md"
faulty "a make goal the Makefile lacks fails" "make goal 'frobnicate' is not in the Makefile"

copy
printf '```sh\nxlbctl vip frob 198.51.100.10:443/tcp\n```\n' >>"$tmp/t/README.md"
faulty "an xlbctl command xlbctl lacks fails" "xlbctl command 'vip frob' is not in xlbctl --help"

copy
printf 'Run `xlbctl -j set colour blue` first.\n' >>"$tmp/t/README.md"
faulty "an xlbctl setting xlbctl lacks fails" "xlbctl set: no setting 'colour'"

copy
rm "$tmp/t/docs/design.md"
out=$("${CHECK[@]}" --root "$tmp/t" 2>&1)
rc=$?
if [[ $rc -eq 2 ]] && grep -q "docs/design.md is missing" <<<"$out"; then
	tap_ok "without docs/design.md the checker says it cannot run (status 2)"
else
	tap_not_ok "without docs/design.md the checker says it cannot run (status 2)" \
		"exit status $rc" "$out"
fi

tap_done
