#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A backend drained, then removed, under load.  $E2E_HOLD (500) long-lived
# connections through a VIP of four backends (Maglev, IPIP).
#
#   drain b2:  no held connection breaks (b2's stay on it), and none of
#              $E2E_CONNS (1000) new connections reaches b2; the others
#              take their table shares (chi-square, ALPHA = 0.0001).
#   remove b2: exactly the connections b2 held break (their packets now
#              go to another backend, which resets them), counted against
#              the number b2 held; every other connection stays unbroken;
#              new connections never reach b2.
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

HOLD=${E2E_HOLD:-500}
N=${E2E_CONNS:-1000}
ALPHA=0.0001
VIP=$VIP4:80/tcp

sc_begin
sc_serve
sc_xlbd
out=$(sc_vip "$VIP" 4 4 2>&1)
sc_result $? "VIP $VIP with b1..b4" "$out"

# hold_broken: the broken connections of the last progress line
hold_broken() {
	grep '^hold: t=.* open ' "$TOPO_DIR/hold-load.log" | tail -1 |
		sed -n 's/.* broken \([0-9]*\) .*/\1/p'
}

# the number after NAME= in "b1=N b2=N ..."
count_of() {
	sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" <<<"$2"
}

sc_hold_start load c1 "$VIP4:80" "$HOLD" --duration 60 --interval 200 \
	--timeout 2000 >"$work/hold.log" 2>&1
rc=$?
sc_result $rc "$HOLD long-lived connections established and answered" \
	"$(cat "$work/hold.log")"
[[ $rc -eq 0 ]] || tap_bail "no load"

# --- drain ----------------------------------------------------------------------

sc_hold_phase load drain
out=$(xlbctl backend drain "$VIP" "${BACKEND_IP4[1]}" 2>&1)
rc=$?
expect=$(sc_expect "$VIP")
state=$(xlbctl -j backend show "$VIP" | "$TAP_PYTHON" -c '
import json, sys
print(" ".join("%s:%s:%d" % (b["name"], b["state"], b["slots"])
               for b in json.load(sys.stdin)["backends"]))')
sc_result "$([[ $rc -eq 0 && $expect != *b2=* && $state == *b2:drain:0* ]]; echo $?)" \
	"b2 drained: no slots left to it" "$out" "name:state:slots $state"

sc_conns c2 "$VIP4:80" "$N" "$work/conns1.json" --expect "$expect" --alpha "$ALPHA"
out=$(sc_conns_summary "$work/conns1.json" 2>&1 || cat "$work/conns1.json.err")
sc_result "$([[ $(json_get "$work/conns1.json" \
	"j['ok'] and 'b2' not in j['backends']") == True ]]; echo $?)" \
	"drained: $N new connections complete, none to b2, spread as the table (p >= $ALPHA)" "$out"

sleep 0.5
before=$(sc_hold_open load)
b2_held=$(count_of b2 "$before")
broken_drain=$(hold_broken)
sc_result "$([[ ${broken_drain:-x} == 0 && ${b2_held:-0} -gt 0 ]]; echo $?)" \
	"drained: 0 held connections broken, b2 still holds ${b2_held:-?}" \
	"open per backend: $before; broken: ${broken_drain:-?}"

# --- remove ---------------------------------------------------------------------

sc_held_flows c1 "$VIP4" >"$work/flows"
sc_explain <"$work/flows" >"$work/before.json"
sc_hold_phase load remove
t0=$(now_ms)
out=$(xlbctl backend del "$VIP" "${BACKEND_IP4[1]}" 2>&1)
rc=$?
sc_explain <"$work/flows" >"$work/after.json"
# b2's connections break at their next message (every 200 ms); wait until
# they have, or 5 s
for ((i = 0; i < 50; i++)); do
	[[ $(hold_broken) -ge ${b2_held:-1} ]] && break
	sleep 0.1
done
t1=$(now_ms)
sleep 0.5	# a few more messages on every other connection
sc_result $rc "b2 removed under load (its connections broke within $((t1 - t0)) ms)" "$out"

where=$("$TAP_PYTHON" - "$work/before.json" "$work/after.json" <<-'EOF'
	import collections, json, sys
	before = {f["flow"]: f for f in json.load(open(sys.argv[1]))}
	to = collections.Counter(a["backend"] for a in json.load(open(sys.argv[2]))
	                         if before[a["flow"]]["ct"] == "b2")
	print("b2's %d flows now go to %s" % (sum(to.values()), dict(sorted(to.items()))))
EOF
)
sc_conns c2 "$VIP4:80" "$N" "$work/conns2.json" --expect "$(sc_expect "$VIP")" \
	--alpha "$ALPHA"
out=$(sc_conns_summary "$work/conns2.json" 2>&1 || cat "$work/conns2.json.err")
sc_result "$([[ $(json_get "$work/conns2.json" \
	"j['ok'] and 'b2' not in j['backends']") == True ]]; echo $?)" \
	"removed: $N new connections complete, none to b2 (p >= $ALPHA)" "$out"

sc_hold_stop load >"$work/stop.log" 2>&1
out=$(sc_hold_summary load 2>&1 || cat "$work/stop.log")
verdict=$("$TAP_PYTHON" - "$TOPO_DIR/hold-load.json" "${b2_held:-0}" <<-'EOF'
	import json, sys
	j = json.load(open(sys.argv[1]))
	held = int(sys.argv[2])
	ph = {p["name"]: p for p in j["phases"]}
	b2 = j["backends"].get("b2", {"connections": 0, "broken": 0})
	others = sum(v["broken"] for k, v in j["backends"].items() if k != "b2")
	r = {k: v for k, v in ph["remove"]["reasons"].items() if v}
	print("b2 held %d (progress) / %d (final); broken after removal: %d %s, "
	      "of them b2's %d; other backends' broken %d; drain phase broken %d"
	      % (held, b2["connections"], ph["remove"]["broken"], r, b2["broken"],
	         others, ph["drain"]["broken"]))
	ok = (j["established"] == j["connections"] and ph["drain"]["broken"] == 0
	      and b2["connections"] == held > 0 and b2["broken"] == held
	      and ph["remove"]["broken"] == held and others == 0)
	sys.exit(0 if ok else 1)
EOF
)
sc_result $? "removed: exactly b2's connections broke, every other one is unbroken" \
	"$verdict" "$where" "$out"

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
