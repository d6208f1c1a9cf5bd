#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# docs/guide.md as written: every fenced sh block preceded by
# `<!-- run HOST -->` is run, in order, on that host of the test network
# (xlbd in the LB namespace, xlb-backend on the backend, xlb-traffic on the
# client), with the tree's programs first on PATH, XLB_SOCKET pointing
# xlbctl at this run's xlbd and XLB_BACKEND_CONFIG/STATE keeping
# xlb-backend's files in the run's directory.  Each block must exit 0
# (bash -e).  The backend the guide sets up is first torn down from the
# test network's own setup (xlb-backend teardown), so the guide's setup
# starts from a plain host.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh

GUIDE=docs/guide.md

[[ $(id -u) -eq 0 ]] || tap_bail "needs root"
for f in xlbd xlbctl xlb-traffic xlb-backend; do
	[[ -x $XLB_BIN/$f ]] || tap_bail "$XLB_BIN/$f is missing; run 'make'"
done
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT

# the blocks: "HOST<TAB>FILE" lines, each FILE one block's commands
"$TAP_PYTHON" - "$GUIDE" "$work" >"$work/blocks" <<'EOF' || tap_bail "cannot read $GUIDE"
import re, sys
text = open(sys.argv[1]).read().split("\n")
n = 0
i = 0
while i < len(text):
    m = re.match(r"<!-- run (\w+) -->$", text[i])
    if m:
        if i + 1 >= len(text) or text[i + 1] != "```sh":
            sys.exit("line %d: a run mark not followed by a sh block" % (i + 1))
        j = i + 2
        body = []
        while text[j] != "```":
            body.append(text[j])
            j += 1
        n += 1
        path = "%s/block%02d.sh" % (sys.argv[2], n)
        open(path, "w").write("\n".join(body) + "\n")
        print("%s\t%s\t%d" % (m.group(1), path, i + 1))
        i = j
    i += 1
EOF
nblocks=$(wc -l <"$work/blocks")
tap_result "$([[ $nblocks -ge 6 ]]; echo $?)" "the guide has blocks to run ($nblocks)" \
	"$(cat "$work/blocks")"
hosts=$(cut -f1 "$work/blocks" | sort -u | tr '\n' ' ')
tap_result "$([[ $hosts == "b2 c1 lb " ]]; echo $?)" \
	"the blocks run on the LB, a backend and a client" "hosts: $hosts"

topo_up --backends 2 --clients 1 >"$work/up.log" 2>&1 ||
	tap_bail "no network: $(cat "$work/up.log")"
topo_serve >"$work/serve.log" 2>&1 || tap_bail "no servers: $(cat "$work/serve.log")"
topo_xlbd_start >"$work/xlbd.log" 2>&1 || tap_bail "no xlbd: $(cat "$work/xlbd.log")"

# the guide's backend starts plain: undo the test network's setup of it
# shellcheck disable=SC2046
in_ns b2 "$XLB_BIN/xlb-backend" teardown $(topo_backend_files b2) >"$work/down.log" 2>&1
tap_result $? "xlb-backend teardown of the test network's setup of b2" "$(cat "$work/down.log")"

bin=$(realpath "$XLB_BIN")
while IFS=$'\t' read -r host file line; do
	in_ns "$host" env PATH="$bin:$PATH" XLB_SOCKET="$XLBD_SOCK" \
		XLB_BACKEND_CONFIG="$TOPO_DIR/guide-backend.conf" \
		XLB_BACKEND_STATE="$TOPO_DIR/guide-backend.state" \
		bash -e "$file" >"$work/out" 2>&1
	rc=$?
	if [[ $rc -eq 0 ]]; then
		tap_ok "$GUIDE:$line on $host: $(head -1 "$file")"
		tap_diag "$(tail -n 3 "$work/out")"
	else
		tap_not_ok "$GUIDE:$line on $host: $(head -1 "$file")" \
			"$(cat "$file")" "--- output, exit status $rc:" "$(cat "$work/out")"
	fi
done <"$work/blocks"

topo_down
tap_done
