#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xlb-bench smoke test: it runs, prints well-formed figures, and rejects bad
# arguments.  It times nothing and judges no number (that is a benchmark's job).
cd "$(dirname "$0")/../.." || exit 1
BENCH=build/xlb-bench
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n $1"; }
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

echo "TAP version 13"
echo "1..5"
out=$($BENCH --quick -j tables 2>&1)
check "tables -j prints one JSON record per case" \
	'python3 -c "
import json, sys
recs = [json.loads(l) for l in sys.stdin.read().splitlines()]
assert len(recs) == 6, len(recs)
for r in recs:
    assert r[\"bench\"] == \"tables\" and r[\"algo\"] in (\"maglev\", \"ring\")
    assert r[\"median_us\"] > 0 and r[\"min_us\"] <= r[\"median_us\"] <= r[\"max_us\"]
    assert r[\"table_bytes\"] == 4 * r[\"table_size\"]
" <<<"$out"'
check "tables prints a human table" '$BENCH --quick tables | grep -q "^maglev *65537 *100 "'
check "unknown subcommand exits 2" '$BENCH nosuch 2>/dev/null; [[ $? -eq 2 ]]'
check "bad --runs exits 2 naming the option" \
	'[[ $($BENCH --runs 0 tables 2>&1 >/dev/null) == *--runs* ]] && ! $BENCH --runs 0 tables 2>/dev/null'
if [[ $(id -u) -ne 0 ]]; then
	n=$((n + 1)); echo "ok $n pkt -j # SKIP needs root"
else
	out=$($BENCH --quick -j pkt 2>&1)
	check "pkt -j prints every path with a baseline ratio" \
		'python3 -c "
import json, sys
recs = [json.loads(l) for l in sys.stdin.read().splitlines()]
v = [r for r in recs if r[\"path\"] == \"verifier\"]
assert len(v) == 1 and v[0][\"processed_insns\"] > 0, v
paths = {r[\"path\"]: r for r in recs if r[\"path\"] != \"verifier\"}
want = {\"non_vip_pass\", \"ct_hit\", \"new_flow\", \"stateless\", \"ipv6_ct_hit\", \"gue_ct_hit\", \"fib_ct_hit\"}
assert want <= set(paths), sorted(paths)
for r in paths.values():
    assert r[\"ns\"] > 0 and r[\"baseline_ns\"] > 0
    assert abs(r[\"ratio\"] - r[\"ns\"] / r[\"baseline_ns\"]) <= 0.01 * r[\"ratio\"] + 0.01
" <<<"$out"'
fi
exit $failed
