#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The monitoring xlb ships (dist/): the Prometheus alert rules pass
# `promtool check rules`, and `promtool test rules` shows each alert firing
# when it should and quiet when it should not (tests/e2e/lib/
# xlb-alerts.test.yml); with any one rule's expression made never true the
# unit tests fail, so they pin each rule.  The Grafana dashboard is well
# formed JSON whose panels all query something and whose variables are
# defined; every metric name it and the rules use is exported by a live
# xlbd (in a namespace of its own, with VIPs, backends and a health check),
# whose output also passes `promtool check metrics`; and the name check
# is shown to catch a misspelt name.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh

XLB_BIN=${XLB_BIN:-${O:-build}}
RULES=dist/xlb-alerts.yml
RTEST=tests/e2e/lib/xlb-alerts.test.yml
DASH=dist/grafana-xlb.json
NS=xmon$$
work=
pid=

[[ $(id -u) -eq 0 ]] || tap_bail "needs root"
command -v promtool >/dev/null || tap_bail "promtool is missing (tools/deps.sh e2e)"
for f in "$XLB_BIN/xlbd" "$XLB_BIN/xlbctl"; do
	[[ -x $f ]] || tap_bail "$f is missing; run 'make'"
done

cleanup() {
	if [[ -n $pid ]]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	if [[ -e /var/run/netns/$NS ]]; then
		nsenter --net="/var/run/netns/$NS" -- "$XLB_BIN/xlbd" --cleanup \
			--instance "$NS" >/dev/null 2>&1
		ip netns del "$NS"
	fi
	rm -rf "/sys/fs/bpf/xlb/$NS"
	[[ -n $work ]] && rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
work=$(mktemp -d) || exit 1

# --- alert rules --------------------------------------------------------------
out=$(promtool check rules "$RULES" 2>&1)
tap_result "$([[ $? -eq 0 && $out == *"SUCCESS: 5 rules found"* ]]; echo $?)" \
	"promtool check rules: 5 rules" "$out"
out=$(promtool test rules "$RTEST" 2>&1)
tap_result $? "promtool test rules: every alert fires when it should, and only then" "$out"

alerts=$("$TAP_PYTHON" -c '
import sys, yaml
for g in yaml.safe_load(open(sys.argv[1]))["groups"]:
    for r in g["rules"]:
        print(r["alert"])' "$RULES")
want="XlbDaemonDown XlbPanicMode XlbVipNoBackend XlbDropsRising XlbFingerprintsDisagree"
tap_result "$([[ $(echo $alerts) == "$want" ]]; echo $?)" \
	"the rules: daemon down, panic, VIP without backend, drops rising, fingerprints disagree" \
	"got: $(echo $alerts)"

# each rule neutralised in a copy: the unit tests must notice
mkdir -p "$work/t/dist" "$work/t/tests/e2e/lib"
cp "$RTEST" "$work/t/tests/e2e/lib/"
for a in $alerts; do
	"$TAP_PYTHON" - "$RULES" "$a" >"$work/t/dist/xlb-alerts.yml" <<-'EOF'
		import sys, yaml
		doc = yaml.safe_load(open(sys.argv[1]))
		for g in doc["groups"]:
		    for r in g["rules"]:
		        if r["alert"] == sys.argv[2]:
		            r["expr"] = "vector(0) > 1"
		print(yaml.safe_dump(doc))
	EOF
	out=$(promtool test rules "$work/t/tests/e2e/lib/xlb-alerts.test.yml" 2>&1)
	rc=$?
	if [[ $rc -ne 0 && $out == *"alertname: $a,"* ]]; then
		tap_ok "with $a never true, promtool test rules fails on it"
	else
		tap_not_ok "with $a never true, promtool test rules fails on it" "rc $rc" "$out"
	fi
done

# --- dashboard ----------------------------------------------------------------
out=$("$TAP_PYTHON" - "$DASH" 2>&1 <<-'EOF'
	import json, re, sys
	d = json.load(open(sys.argv[1]))
	bad = []
	ids = set()
	defined = {v["name"] for v in d["templating"]["list"]}
	for p in d["panels"]:
	    if p["id"] in ids:
	        bad.append("panel id %d twice" % p["id"])
	    ids.add(p["id"])
	    if not all(k in p.get("gridPos", {}) for k in "hwxy"):
	        bad.append("panel %s: no gridPos" % p.get("title"))
	    if p["type"] == "row":
	        continue
	    exprs = [t.get("expr", "") for t in p.get("targets", [])]
	    if not exprs or not all(exprs):
	        bad.append("panel %s: a target without a query" % p["title"])
	    for e in exprs:
	        for v in re.findall(r"\$(\w+)", e):
	            if v not in defined and not v.startswith("__"):
	                bad.append("panel %s: $%s is no variable" % (p["title"], v))
	        if e.count("(") != e.count(")"):
	            bad.append("panel %s: unbalanced parentheses" % p["title"])
	print("%d panels, variables %s" % (len(ids), sorted(defined)))
	if bad:
	    print("\n".join(bad))
	    sys.exit(1)
EOF
)
tap_result $? "the dashboard is well formed JSON: every panel queries, every variable is defined" "$out"

# --- a live xlbd --------------------------------------------------------------
ip netns add "$NS" && ip -n "$NS" link set lo up || tap_bail "no namespace"
nsenter --net="/var/run/netns/$NS" -- "$XLB_BIN/xlbd" --instance "$NS" \
	--socket "$work/xlbd.sock" --state-dir "$work" \
	--metrics 127.0.0.1:9437 >"$work/xlbd.log" 2>&1 &
pid=$!
for ((i = 0; i < 100; i++)); do
	[[ -S $work/xlbd.sock ]] && break
	sleep 0.1
done
[[ -S $work/xlbd.sock ]] || tap_bail "xlbd did not start: $(cat "$work/xlbd.log")"
ctl() { nsenter --net="/var/run/netns/$NS" -- "$XLB_BIN/xlbctl" -s "$work/xlbd.sock" "$@"; }
ctl set key 00112233445566778899aabbccddeeff >/dev/null &&
	ctl vip add 10.0.0.1:80/tcp health tcp interval 200 timeout 100 >/dev/null &&
	ctl backend add 10.0.0.1:80/tcp 10.0.1.1 >/dev/null &&
	ctl backend add 10.0.0.1:80/tcp 10.0.1.2 weight 2 >/dev/null &&
	ctl vip add 10.0.0.2:53/udp >/dev/null ||
	tap_bail "cannot configure xlbd: $(cat "$work/xlbd.log")"
# a health check result and a connection count show up within seconds
for ((i = 0; i < 100; i++)); do
	nsenter --net="/var/run/netns/$NS" -- curl -sf http://127.0.0.1:9437/metrics \
		>"$work/metrics" 2>/dev/null
	grep -q '^xlb_backend_check_rtt_seconds' "$work/metrics" &&
		grep -q '^xlb_conntrack_entries' "$work/metrics" && break
	sleep 0.1
done
out=$(promtool check metrics <"$work/metrics" 2>&1)
tap_result $? "promtool check metrics on a live xlbd's /metrics" "$out"

# names WANT-FILE...: the xlb_* names the files' queries use that the live
# output lacks
missing() {
	"$TAP_PYTHON" - "$work/metrics" "$@" <<-'EOF'
		import json, re, sys, yaml
		have = set()
		for line in open(sys.argv[1]):
		    m = re.match(r"(xlb_[a-z0-9_]+)", line)
		    if m:
		        have.add(m.group(1))
		used = {}
		def walk(x, where):
		    if isinstance(x, dict):
		        for k, v in x.items():
		            if k in ("expr", "query", "definition") and isinstance(v, str):
		                for n in re.findall(r"\bxlb_[a-z0-9_]+", v):
		                    used.setdefault(n, where)
		            else:
		                walk(v, where)
		    elif isinstance(x, list):
		        for v in x:
		            walk(v, where)
		for f in sys.argv[2:]:
		    walk(json.load(open(f)) if f.endswith(".json") else yaml.safe_load(open(f)), f)
		print("# %d names used, %d exported" % (len(used), len(have)))
		for n in sorted(used):
		    if n not in have:
		        print("%s (%s)" % (n, used[n]))
	EOF
}
out=$(missing "$DASH" "$RULES")
tap_result "$([[ $(grep -vc '^#' <<<"$out") -eq 0 && $out == "# "[1-9]* ]]; echo $?)" \
	"every metric the dashboard and the rules use is exported by a live xlbd" "$out"

sed 's/xlb_vip_packets_total/xlb_vip_pakets_total/' "$DASH" >"$work/bad.json"
out=$(missing "$work/bad.json")
tap_result "$([[ $out == *"xlb_vip_pakets_total ("* ]]; echo $?)" \
	"the name check catches a misspelt metric" "$out"

tap_done
