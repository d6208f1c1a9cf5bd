#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A backend added under load.  $E2E_HOLD (500) long-lived connections
# through a VIP of four backends (Maglev, IPIP); the fifth backend is added
# while they run.  Every held connection must stay unbroken on its backend
# (the connection table keeps the flows the new table gives to b5: they are
# counted with `xlbctl explain` on the connections' real tuples), and new
# connections must reach b5 in its share of the new table (chi-square,
# ALPHA = 0.0001).  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

HOLD=${E2E_HOLD:-500}
N=${E2E_CONNS:-2000}
ALPHA=0.0001
VIP=$VIP4:80/tcp

sc_begin --backends 5
sc_serve
sc_xlbd
out=$(sc_vip "$VIP" 4 4 2>&1)
sc_result $? "VIP $VIP with b1..b4 (b5 is up but not a member)" "$out"

# --- the load -------------------------------------------------------------------

# (not in $(...): the helper keeps the pid in this shell)
sc_hold_start load c1 "$VIP4:80" "$HOLD" --duration 60 --interval 200 \
	--timeout 3000 >"$work/hold.log" 2>&1
rc=$?
sc_result $rc "$HOLD long-lived connections established and answered" \
	"$(cat "$work/hold.log")"
[[ $rc -eq 0 ]] || tap_bail "no load"
sc_held_flows c1 "$VIP4" >"$work/flows"
sc_explain <"$work/flows" >"$work/before.json"
fp0=$(sc_vip_field "$VIP" "v['fingerprint'], v['generation']")

# --- the change -----------------------------------------------------------------

sc_hold_phase load add
t0=$(now_ms)
out=$(xlbctl backend add "$VIP" "${BACKEND_IP4[4]}" name b5 2>&1)
rc=$?
t1=$(now_ms)
fp1=$(sc_vip_field "$VIP" "v['fingerprint'], v['generation']")
expect=$(sc_expect "$VIP")
sc_result "$([[ $rc -eq 0 && $expect == *b5=* ]]; echo $?)" \
	"backend b5 added under load, in the new table" "$out" \
	"xlbctl backend add took $((t1 - t0)) ms; fingerprint, generation" \
	"$fp0 -> $fp1" "shares: $expect"

# Held flows whose slot the new table gives to b5: the connection table
# must keep each on the backend it had.
sc_explain <"$work/flows" >"$work/after.json"
out=$("$TAP_PYTHON" - "$work/before.json" "$work/after.json" <<-'EOF'
	import json, sys
	before = {f["flow"]: f for f in json.load(open(sys.argv[1]))}
	after = json.load(open(sys.argv[2]))
	moved = kept = 0
	bad = []
	for a in after:
	    b = before[a["flow"]]
	    if a["primary"] != "b5":
	        continue
	    moved += 1
	    if (b["ct"] and a["ct"] == b["ct"] and a["ct_valid"]
	            and a["backend"] == b["ct"]):
	        kept += 1
	    else:
	        bad.append("%s: before %s, after %s" % (a["flow"], b, a))
	print("%d held flows: %d now have b5 as primary in the table, %d of them "
	      "kept on their backend by the connection table" % (
	          len(after), moved, kept))
	for x in bad[:5]:
	    print(x)
	sys.exit(0 if len(after) > 0 and moved > 0 and kept == moved else 1)
EOF
)
sc_result $? "the connection table keeps the held flows the new table gives to b5" "$out"

# New connections, from the other client, while the held ones go on.
sc_conns c2 "$VIP4:80" "$N" "$work/conns.json" --expect "$expect" --alpha "$ALPHA"
out=$(sc_conns_summary "$work/conns.json" 2>&1 || cat "$work/conns.json.err")
b5=$(json_get "$work/conns.json" "j['backends'].get('b5', {}).get('count', 0)" 2>/dev/null)
sc_result "$([[ $(json_get "$work/conns.json" "j['ok']" 2>/dev/null) == True &&
	${b5:-0} -gt 0 ]]; echo $?)" \
	"$N new connections: all complete, b5 takes its table share (p >= $ALPHA)" "$out"

# Every held connection exchanges a few more messages after the change.
sleep 1
sc_hold_stop load >"$work/stop.log" 2>&1
out=$(sc_hold_summary load 2>&1 || cat "$work/stop.log")
sc_result "$([[ $(json_get "$TOPO_DIR/hold-load.json" \
	"j['ok'] and j['established'] == $HOLD and j['broken'] == 0 and j['phases'][-1]['replies'] >= $HOLD") == True ]]
	echo $?)" "0 of $HOLD held connections broken by the addition, all answered after it" "$out"

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
