#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Smoke test of xlb-bench and of the suite (tools/xlb-bench/suite.sh --quick): they
# run, print well-formed figures, write a results.json that parses with the
# fields every record must have, and reject bad arguments.  It times
# nothing and judges no number (that is a benchmark's job).  Without root
# the suite runs its unprivileged part (tables) and says the rest is skipped.
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}
BENCH=$O/xlb-bench
root=0
[[ $(id -u) -eq 0 ]] && root=1
edge=0	# the cluster part: three LB hosts with bird2 and etcd
[[ $root -eq 1 ]] && command -v bird >/dev/null && command -v etcd >/dev/null && edge=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. tests/lib/tap.sh
# check NAME SHELL-CODE: ok when the code, evaluated here, succeeds
check() { if eval "$2"; then tap_ok "$1"; else tap_not_ok "$1"; fi; }
out=$($BENCH --quick -j tables 2>&1)
check "tables -j prints one JSON record per case" \
	'python3 -c "
import json, sys
recs = [json.loads(l) for l in sys.stdin.read().splitlines()]
assert len(recs) == 8, len(recs)
for r in recs:
    assert r[\"bench\"] == \"tables\" and r[\"algo\"] in (\"maglev\", \"ring\")
    assert r[\"median_us\"] > 0 and r[\"min_us\"] <= r[\"median_us\"] <= r[\"max_us\"]
    assert r[\"table_bytes\"] == 4 * r[\"table_size\"]
    assert 0 < r[\"cpu_median_us\"] and r[\"first_us\"] > 0
    assert r[\"scratch_bytes\"] >= r[\"table_size\"] if r[\"algo\"] == \"maglev\" else r[\"scratch_bytes\"] >= 16 * r[\"backends\"] * r[\"vnodes\"]
    assert r[\"name\"] == \"tables.%s.M%d.N%d\" % (r[\"algo\"], r[\"table_size\"], r[\"backends\"])
    assert r[\"value\"] == r[\"median_us\"] or abs(r[\"value\"] - r[\"median_us\"]) < 0.1
    assert r[\"unit\"] == \"us\" and r[\"baseline\"] is None and r[\"ratio\"] is None
    assert r[\"params\"][\"M\"] == r[\"table_size\"]
    # the goal issue 17 set, on the one case of it a quick run has
    if (r[\"algo\"], r[\"table_size\"], r[\"backends\"]) == (\"maglev\", 65537, 100):
        assert r[\"goal\"] == 1000 and r[\"goal_is\"] == \"issue 17\", r
    else:
        assert \"goal\" not in r, r
" <<<"$out"'
check "tables prints a human table, with its goal where issue 17 set one" \
	'$BENCH --quick tables | grep -q "^maglev *65537 *100 .* 1000$" &&
	 $BENCH --quick tables | grep -q "^maglev *65537 *10 .* -$"'
check "unknown subcommand exits 2" '$BENCH nosuch 2>/dev/null; [[ $? -eq 2 ]]'
check "bad --runs exits 2 naming the option" \
	'[[ $($BENCH --runs 0 tables 2>&1 >/dev/null) == *--runs* ]] && ! $BENCH --runs 0 tables 2>/dev/null'
check "bad --ct-fill and --vips exit 2 naming the option" \
	'[[ $($BENCH --ct-fill 0,2 pkt-scale 2>&1 >/dev/null) == *--ct-fill* ]] &&
	 [[ $($BENCH --vips 0 pkt-scale 2>&1 >/dev/null) == *--vips* ]] &&
	 { $BENCH --vips 10,x pkt-scale 2>/dev/null; [[ $? -eq 2 ]]; }'
check "bad --conntrack-entries, or it with another part than pkt, exits 2" \
	'[[ $($BENCH --conntrack-entries 255 pkt 2>&1 >/dev/null) == *--conntrack-entries* ]] &&
	 { $BENCH --conntrack-entries 1e3 pkt 2>/dev/null; [[ $? -eq 2 ]]; } &&
	 [[ $($BENCH --conntrack-entries 1000 tables 2>&1 >/dev/null) == *"pkt only"* ]]'
check "an unknown --path, or it with another part than pkt and pkt-mq, exits 2 naming it" \
	'[[ $($BENCH --path nosuch pkt 2>&1 >/dev/null) == *nosuch*ct_hit_rotate* ]] &&
	 { $BENCH --path nosuch pkt 2>/dev/null; [[ $? -eq 2 ]]; } &&
	 [[ $($BENCH --path ct_hit tables 2>&1 >/dev/null) == *"pkt and pkt-mq only"* ]]'
check "bad --against, or it with another part than pkt, exits 2" \
	'[[ $($BENCH --against "$tmp/none.o" pkt 2>&1 >/dev/null) == *--against* ]] &&
	 { $BENCH --against "$tmp/none.o" pkt 2>/dev/null; [[ $? -eq 2 ]]; } &&
	 [[ $($BENCH --against $O/xlb.bpf.o tables 2>&1 >/dev/null) == *"pkt only"* ]]'
# ab.sh: another commit's figures beside this build's, in turn
check "ab.sh: no commit, an unknown one or a bad --rounds exits 2 naming it" \
	'[[ $(tools/xlb-bench/ab.sh 2>&1) == *"which commit"* ]] &&
	 { tools/xlb-bench/ab.sh nosuchrev 2>/dev/null; [[ $? -eq 2 ]]; } &&
	 [[ $(tools/xlb-bench/ab.sh nosuchrev 2>&1) == *nosuchrev* ]] &&
	 [[ $(tools/xlb-bench/ab.sh --rounds 0 HEAD 2>&1) == *--rounds* ]] &&
	 [[ $(git worktree list | grep -c xlb-ab) -eq 0 ]]'
out=$(O=$O tools/xlb-bench/ab.sh --rounds 2 HEAD -- --runs 1 --quick tables 2>&1)
python3 -c "
import sys
rows = [l.split() for l in sys.stdin.read().splitlines()
        if l.startswith(\"tables.\")]
assert len(rows) == 8, rows
for name, other, this, ratio, unit in rows:
    assert float(other) > 0 and float(this) > 0, name
    # the figures are printed rounded: half their last place each
    half = lambda v: 0.5 * 10 ** -len(v.partition(\".\")[2])
    tol = float(ratio) * (half(other) / float(other) + half(this) / float(this)) + half(ratio)
    assert abs(float(ratio) - float(this) / float(other)) <= tol * 1.001, (name, ratio, tol)
" <<<"$out" && [[ $(git worktree list | grep -c xlb-ab) -eq 0 ]]
tap_result $? "ab.sh HEAD: every figure of both builds with their ratio, no worktree left" "$out"

# stages.sh's arithmetic on fixed runs: the plain run 200 at ratio 4
# (the test run: share 0.25), stage 1 at ratio 2, stage 2 at 1.25
stage_rec() {
	printf '%s {"name":"%s","value":%s,"ratio":%s,"runs":3,"params":{"path":"p"}}\n' "$@"
}
{ stage_rec 0 pkt.p 200 4; stage_rec 1 pkt_vs.p 1 2; stage_rec 2 pkt_vs.p 1 1.25; } >"$tmp/runs"
check "stages.py: each stage's share, its own step and that of the whole" \
	'python3 tools/xlb-bench/stages.py "$tmp/runs" 1 a b | python3 -c "
import json, sys
recs = [json.loads(l) for l in sys.stdin.read().splitlines()]
got = [(r[\"params\"][\"stage\"], r[\"params\"][\"share\"], r[\"params\"][\"stage_share\"], r[\"value\"]) for r in recs]
assert got == [(\"test run (XDP_TX only)\", 0.25, 0.25, 50.0), (\"a\", 0.5, 0.25, 50.0), (\"b\", 0.8, 0.3, 60.0), (\"rest (flow cache fill, return)\", 1.0, 0.2, 40.0)], got
"'
stage_rec 0 pkt.p 200 4 >"$tmp/runs1"
{ stage_rec 0 pkt.p 200 0; echo "x y"; } >"$tmp/runs2"
check "stages.py: a stage missing, a ratio of 0 or a bad line fails naming it" \
	'[[ $(python3 tools/xlb-bench/stages.py "$tmp/runs1" 1 a b 2>&1 >/dev/null) == *"p: a run printed no figure"* ]] &&
	 ! python3 tools/xlb-bench/stages.py "$tmp/runs1" 1 a b >/dev/null 2>&1 &&
	 [[ $(python3 tools/xlb-bench/stages.py "$tmp/runs2" 1 a b 2>&1 >/dev/null) == *"runs2 line 1"* ]] &&
	 { echo "x y" >"$tmp/runs2"; [[ $(python3 tools/xlb-bench/stages.py "$tmp/runs2" 1 a 2>&1 >/dev/null) == *"runs2 line 1"* ]]; }'
if [[ $root -eq 0 ]]; then
	tap_skip "pkt -j" "needs root"
	tap_skip "pkt --against" "needs root"
	tap_skip "stages.sh" "needs root"
else
	out=$($BENCH --quick -j pkt 2>&1)
	check "pkt -j prints every path with a baseline ratio, and the verifier's figures" \
		'python3 -c "
import json, sys
recs = [json.loads(l) for l in sys.stdin.read().splitlines()]
v = {r[\"name\"]: r for r in recs if r[\"bench\"] == \"verifier\"}
assert set(v) == {\"verifier.processed_insns\", \"verifier.xlated_bytes\", \"verifier.jited_bytes\"}, v
assert all(r[\"value\"] > 0 for r in v.values()), v
paths = {r[\"path\"]: r for r in recs if r[\"bench\"] == \"pkt\"}
want = {\"non_vip_pass\", \"ct_hit\", \"new_flow\", \"stateless\", \"ipv6_ct_hit\", \"gue_ct_hit\", \"fib_ct_hit\",
        \"ct_hit_rotate\", \"ct_hit_zipf\", \"new_flow_full\"}
assert want <= set(paths), sorted(paths)
for r in paths.values():
    assert r[\"ns\"] > 0 and r[\"baseline_ns\"] > 0
    assert r[\"min\"] <= r[\"value\"] <= r[\"max\"]
    assert abs(r[\"ratio\"] - r[\"ns\"] / r[\"baseline_ns\"]) <= 0.01 * r[\"ratio\"] + 0.01
    p = r[\"params\"]
    for k in (\"ct_hit_share\", \"cache_hit_share\", \"insert_share\"):
        assert 0 <= p[k] <= 1, (k, r)
share = {n: paths[n][\"params\"] for n in want}
# each path measures what its name says
assert share[\"ct_hit_rotate\"][\"ct_hit_share\"] >= 0.99 and share[\"ct_hit_rotate\"][\"cache_hit_share\"] <= 0.05, share
assert share[\"ct_hit_zipf\"][\"ct_hit_share\"] >= 0.99 and 0.05 < share[\"ct_hit_zipf\"][\"cache_hit_share\"] < 0.95, share
assert share[\"ct_hit_zipf\"][\"flows\"] == 100000 and share[\"ct_hit_zipf\"][\"zipf_s\"] == 1.1, share
for n in (\"new_flow\", \"new_flow_full\"):
    assert share[n][\"insert_share\"] >= 0.99 and share[n][\"ct_hit_share\"] == 0, share
assert share[\"new_flow_full\"][\"occupancy_before\"] >= 0.999, share
tg = {n: paths[n][\"params\"].get(\"target_ratio\") for n in paths}
assert tg[\"ct_hit\"] == 1.72 and tg[\"ct_hit_rotate\"] == 2.78 and tg[\"ct_hit_zipf\"] == 2.87, tg
assert tg[\"new_flow\"] == 4.75 and tg[\"new_flow_full\"] == 8.0 and tg[\"non_vip_pass\"] == 1.2, tg
ml = {r[\"name\"]: r[\"value\"] for r in recs if r[\"bench\"] == \"memlat\"}
assert set(ml) == {\"memlat.mem_miss\", \"memlat.tlb_miss\", \"memlat.page_fault\",
                   \"memlat.run_page\", \"memlat.run_near\", \"memlat.run_tlb\"}, ml
assert all(isinstance(v, (int, float)) for v in ml.values()), ml
# the floor of a path whose packets read a line no cache holds: the
# XDP_TX-only program plus one miss to memory, beside the goal
for n, r in paths.items():
    p = r[\"params\"]
    if n not in (\"new_flow\", \"new_flow_full\"):
        assert \"miss_floor_ratio\" not in p, r
        continue
    # the same memlat figure (printed to 0.1 ns), and the ratio of the
    # figures of the same run
    assert abs(p[\"miss_ns\"] - ml[\"memlat.mem_miss\"]) <= 0.051, (p, ml)
    fl = (r[\"baseline_ns\"] + p[\"miss_ns\"]) / r[\"baseline_ns\"]
    assert abs(p[\"miss_floor_ratio\"] - fl) <= 0.01 * fl + 0.01, (p, fl)
pf = [r for r in recs if r[\"name\"] == \"memlat.page_fault\"][0]
assert \"huge_ns\" in pf[\"params\"], pf
for r in recs:
    if r[\"name\"].startswith(\"memlat.run_\"):
        assert r[\"unit\"] == \"ns\" and r[\"statistic\"] == \"median\", r
        assert isinstance(r[\"params\"][\"call_ns\"], (int, float)), r
" <<<"$out"'
	out=$($BENCH --quick -j --against $O/xlb.bpf.o --path ct_hit pkt 2>&1)
	check "pkt --against names the other build as the baseline of pkt_vs figures" \
		'python3 -c "
import json, sys
recs = [json.loads(l) for l in sys.stdin.read().splitlines()]
p = [r for r in recs if r[\"bench\"] == \"pkt\"]
assert [r[\"name\"] for r in p] == [\"pkt_vs.ct_hit\"], p
r = p[0]
assert r[\"baseline_is\"] == sys.argv[1], r
assert {\"ns\", \"baseline_ns\", \"ratio\", \"path\"} <= set(r) and r[\"path\"] == \"ct_hit\", r
" "$O/xlb.bpf.o" <<<"$out"'
	out=$($BENCH --quick -j --conntrack-entries 1000 --path ct_hit pkt 2>&1)
	check "pkt with another table size: its own figure, without issue 21's goal" \
		'python3 -c "
import json, sys
recs = [json.loads(l) for l in sys.stdin.read().splitlines()]
p = [r for r in recs if r[\"bench\"] == \"pkt\"]
assert [r[\"name\"] for r in p] == [\"pkt_ct1000.ct_hit\"], p
assert p[0][\"params\"][\"conntrack_entries\"] == 1000 and \"target_ratio\" not in p[0][\"params\"], p
" <<<"$out"'
	# every CPU at once: one figure per path, both ratios beside it, and
	# no network namespace left behind (one per CPU while it runs)
	ns_before=$(lsns -n -t net 2>/dev/null | wc -l)
	out=$($BENCH --quick -j pkt-mq 2>&1)
	check "pkt-mq: issue 21's paths on every CPU at once and on one alone" \
		'python3 -c "
import json, os, sys
recs = [json.loads(l) for l in sys.stdin.read().splitlines()]
p = {r[\"path\"]: r for r in recs if r[\"bench\"] == \"pkt\"}
assert [r[\"name\"] for r in recs] == [\"pkt_mq.\" + n for n in p], recs
assert list(p) == [\"non_vip_pass\", \"ct_hit\", \"new_flow\", \"ct_hit_rotate\", \"ct_hit_zipf\"], list(p)
for r in p.values():
    q = r[\"params\"]
    assert q[\"cpus\"] == len(os.sched_getaffinity(0)) >= 2, q
    assert q[\"calls_per_cpu\"] == 2000 and q[\"rounds\"] == 2, q
    num = (int, float)
    assert all(isinstance(x, num) for x in (r[\"ns\"], r[\"baseline_ns\"], q[\"alone_ns\"], q[\"alone_baseline_ns\"],
                                            q[\"together_ratio\"], q[\"alone_ratio\"])), r
    # the median of the quotients of the rounds lies between their min and max
    assert q[\"together_over_alone_min\"] <= q[\"together_over_alone\"] <= q[\"together_over_alone_max\"], q
" <<<"$out"'
	check "pkt-mq leaves no network namespace behind" \
		'[[ $(lsns -n -t net 2>/dev/null | wc -l) -eq $ns_before ]]'
	check "pkt-mq --path: one path of its own, or exit 2 naming its paths" \
		'[[ $($BENCH --quick -j --path ct_hit pkt-mq 2>&1 | grep -c "\"name\":\"pkt_mq\.ct_hit\"") -eq 1 ]] &&
		 { $BENCH --quick --path stateless pkt-mq >/dev/null 2>"$tmp/err"; [[ $? -eq 2 ]]; } &&
		 grep -q "not a path of pkt-mq; known: non_vip_pass ct_hit" "$tmp/err"'
	cp $O/xlb_reflect.bpf.o "$tmp/other.o"
	printf 'not an ELF object\n' >"$tmp/text.o"
	check "pkt --against an object without xlb_main, or no object, fails naming it" \
		'[[ $($BENCH --quick --against "$tmp/other.o" pkt 2>&1 >/dev/null) == *"$tmp/other.o"*xlb_main* ]] &&
		 ! $BENCH --quick --against "$tmp/other.o" pkt >/dev/null 2>&1 &&
		 [[ $($BENCH --quick --against "$tmp/text.o" pkt 2>&1 >/dev/null) == *"$tmp/text.o"*"cannot open"* ]]'
	# the stage profile: each stage's program stopped there, beside the whole
	out=$(O=$O tools/xlb-bench/stages.sh -j --rounds 1 --calls 2000 ct_hit_rotate 2>&1)
	# its form only; its arithmetic is checked on fixed runs below
	check "stages.sh -j prints every stage of the path, the rest last" \
		'python3 -c "
import json, sys
lines = sys.stdin.read().splitlines()
said = [l for l in lines if not l.startswith(\"{\")]
assert not said, \"stages.sh said: \" + \" | \".join(said[:20])
recs = [json.loads(l) for l in lines]
assert [r[\"name\"] for r in recs] == [\"stages.ct_hit_rotate.%d\" % n for n in range(7)], recs
for r in recs:
    p = r[\"params\"]
    assert {\"stage\", \"share\", \"stage_share\", \"whole_ns\"} <= set(p) and p[\"path\"] == \"ct_hit_rotate\", r
assert recs[-1][\"params\"][\"stage\"].startswith(\"rest\"), recs
" <<<"$out"'
	check "stages.sh: a bad --rounds exits 2 naming it, an unknown path fails naming it" \
		'[[ $(tools/xlb-bench/stages.sh --rounds 0 2>&1 >/dev/null) == *--rounds* ]] &&
		 { tools/xlb-bench/stages.sh --rounds 0 2>/dev/null; [[ $? -eq 2 ]]; } &&
		 [[ $(O=$O tools/xlb-bench/stages.sh --rounds 1 --calls 2000 nosuch 2>&1 >/dev/null) == *nosuch* ]] &&
		 ! O=$O tools/xlb-bench/stages.sh --rounds 1 --calls 2000 nosuch >/dev/null 2>&1'
fi

# the suite, in smoke mode, into a folder of its own
tools/xlb-bench/suite.sh --quick --out "$tmp" >"$tmp/report" 2>"$tmp/log"
rc=$?
check "the suite --quick runs (exit 0)" '[[ $rc -eq 0 ]] || { sed "s/^/# /" "$tmp/log"; false; }'
check "results.json parses (python3 -m json.tool)" \
	'python3 -m json.tool "$tmp/results.json" >/dev/null'
check "every figure has name, value, unit, baseline, ratio, parameters" \
	'ROOT=$root EDGE=$edge python3 -c "
import json, os, sys
res = json.load(open(sys.argv[1]))
m = res[\"machine\"]
assert m[\"cpu_model\"] and m[\"cores\"] >= 1 and m[\"kernel\"], m
figs = res[\"figures\"]
names = [f[\"name\"] for f in figs]
assert len(names) == len(set(names)), \"duplicate figure names\"
for f in figs:
    for k in (\"name\", \"value\", \"unit\", \"baseline\", \"ratio\", \"parameters\"):
        assert k in f, (k, f)
    assert isinstance(f[\"value\"], (int, float)) and isinstance(f[\"parameters\"], dict), f
    assert f[\"min\"] <= f[\"value\"] <= f[\"max\"] or f[\"runs\"] <= 1, f
    if f[\"baseline\"] is not None:
        assert f[\"baseline\"] > 0 and abs(f[\"ratio\"] - f[\"value\"] / f[\"baseline\"]) <= 0.01 * f[\"ratio\"] + 0.001, f
groups = {n.split(\".\")[0] for n in names}
want = {\"tables\"}
if os.environ[\"ROOT\"] == \"1\":
    want |= {\"verifier\", \"memlat\", \"pkt\", \"pkt_ct1000\", \"pkt_mq\", \"pkt_vips\", \"pkt_ct\", \"publish\", \"memory\", \"live\"}
    if os.path.exists(\"'"$O"'/xlbd\"):
        want.add(\"control\")
    if os.environ[\"EDGE\"] == \"1\":
        want.add(\"cluster\")
assert want <= groups, sorted(want - groups)
parts = {p[\"name\"]: p[\"status\"] for p in res[\"parts\"]}
assert \"failed\" not in parts.values(), parts
# the goals the issues set, each on the figure it is for
g = {f[\"name\"]: f[\"goal\"] for f in figs if f.get(\"goal\")}
assert g[\"tables.maglev.M65537.N100\"] == {\"value\": 1000, \"on\": \"value\", \"what\": \"issue 17\"}, g
if os.environ[\"ROOT\"] == \"1\":
    assert g[\"memory.vip_total.M65537\"][\"value\"] == 300 * 1024, g
    assert g[\"pkt.ct_hit\"] == {\"value\": 1.72, \"on\": \"ratio\", \"what\": \"0.6 x Katran (issue 21)\"}, g
    nf = [f for f in figs if f[\"name\"] == \"pkt.new_flow\"][0]
    assert g[\"pkt.new_flow\"][\"floor\"] == nf[\"parameters\"][\"miss_floor_ratio\"], (g, nf)
    assert \"floor\" not in g[\"pkt.ct_hit_rotate\"], g
    assert not [n for n in g if n.startswith(\"pkt_ct1000.\")], g
    if \"control\" in want:
        assert g[\"control.change_to_live\"][\"value\"] == 2 and g[\"control.failover\"][\"value\"] == 0.1, g
        assert \"control.change.build\" not in g, g
" "$tmp/results.json"'
check "the report's goals: a line for each, met exactly when at most the goal" \
	'python3 -c "
import json, re, sys
res = json.load(open(sys.argv[1]))
figs = {f[\"name\"]: f for f in res[\"figures\"] if f.get(\"goal\")}
text = open(sys.argv[2]).read()
sec = text.split(\"== Goals\", 1)[1].split(\"\\n\\n\", 1)[0].splitlines()
rows = {l.split()[0]: l for l in sec[2:] if l.startswith(\"   \") and not l.strip()[0].isdigit()}
assert set(rows) == set(figs), (sorted(rows), sorted(figs))
for n, f in figs.items():
    got = f[\"ratio\"] if f[\"goal\"][\"on\"] == \"ratio\" else f[\"value\"]
    assert (\" met\" in rows[n]) == (got <= f[\"goal\"][\"value\"]), (n, got, rows[n])
    assert (\"over by\" in rows[n]) == (got > f[\"goal\"][\"value\"]), (n, rows[n])
    # a floor is named beside its goal, and said to be above it when it is
    fl = f[\"goal\"].get(\"floor\")
    assert (\"one miss to memory alone\" in rows[n]) == (fl is not None), (n, rows[n])
    if fl is not None:
        assert (\"above the goal\" in rows[n]) == (fl > f[\"goal\"][\"value\"]), (n, rows[n])
met = sum(1 for l in rows.values() if \" met\" in l)
assert re.search(r\"^   %d of %d goals met in this run$\" % (met, len(figs)), text, re.M), text
" "$tmp/results.json" "$tmp/report"'
if ! command -v gnuplot >/dev/null; then
	tap_skip "the report names the machine and the plots are written" "no gnuplot"
else
	check "the report names the machine and the plots are written" \
		'grep -q "^machine: .*cores.*kernel" "$tmp/report" && ls "$tmp"/tables_vs_n.png >/dev/null &&
		 { [[ $root -eq 0 ]] || ls "$tmp"/pkt_paths.png "$tmp"/pkt_vs_vips.png "$tmp"/pkt_vs_ct_fill.png "$tmp"/live_vs_m.png >/dev/null; }'
fi
tap_done
