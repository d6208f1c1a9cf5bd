#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Health checks end to end.  A VIP of four backends (ring hash, so that the
# property "nothing else moves" is exact) with `health tcp interval 200
# timeout 100 fall 3 rise 2`, and 300 long-lived connections through it.
#
#   b3's server stops: b3 leaves the table after about fall x interval (the
#     time is printed; a bound of 10 s is only a liveness check); new
#     connections avoid it; no other backend's slot changes (2000 flows
#     explained before and after: those not on b3 keep their primary, b3's
#     go to their secondary; other backends' slot counts only grow); only
#     b3's held connections break (its server is gone).
#   b3's server starts again: b3 is back after about rise x interval, with
#     the very table of before (same fingerprint).
#   three of four servers stop (panic 50): panic mode keeps all four in the
#     table (panic_active, the original fingerprint), as designed; when
#     they come back, panic mode ends.
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

INTERVAL=200 FALL=3 RISE=2
VIP=$VIP4:80/tcp
N=${E2E_CONNS:-1000}
ALPHA=0.0001

sc_begin
sc_serve
sc_xlbd
out=$(sc_vip "$VIP" 4 4 algo ring panic 50 health tcp interval $INTERVAL \
	timeout 100 fall $FALL rise $RISE 2>&1)
sc_result $? "VIP $VIP, ring, health tcp interval $INTERVAL timeout 100 fall $FALL rise $RISE" "$out"

# serve_stop HOST: stop the xlb-traffic server of a backend (by pid)
serve_stop() {
	local pid

	for pid in $(ip netns pids "$(topo_ns "$1")"); do
		[[ $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == *"xlb-traffic serve"* ]] &&
			topo_stop "$pid" 2
	done
}

# serve_start HOST: start it again, wait until it listens (5 s)
serve_start() {
	local i

	rm -f "$TOPO_DIR/serve-$1.ready"
	topo_bg "$1" "serve-$1-again" "$SC_X" serve --id "$1" \
		--ready "$TOPO_DIR/serve-$1.ready" --tcp 80 --udp 80
	for ((i = 0; i < 50; i++)); do
		[[ -e $TOPO_DIR/serve-$1.ready ]] && return 0
		sleep 0.1
	done
	return 1
}

# backends_state: "b1:up:in b2:down:out ..." (health, in the table or not)
backends_state() {
	xlbctl -j backend show "$VIP" | "$TAP_PYTHON" -c '
import json, sys
print(" ".join("%s:%s:%s" % (b["name"], b["health"], "in" if b["in_table"] else "out")
               for b in json.load(sys.stdin)["backends"]))'
}

# wait_state STATE...: poll until backends_state has every STATE
# (10 s); prints the milliseconds since T0 (the action's time)
wait_state() {
	local t0=${T0:-$(now_ms)} i s p ok

	for ((i = 0; i < 400; i++)); do
		s=$(backends_state)
		ok=1
		for p in "$@"; do
			[[ " $s " == *" $p "* ]] || ok=0
		done
		if [[ $ok -eq 1 ]]; then
			echo $(($(now_ms) - t0))
			return 0
		fi
		[[ $(now_ms) -gt $((t0 + 10000)) ]] && break
		sleep 0.02
	done
	echo "not within 10 s: $s"
	return 1
}

# Flows to explain: 2000 made-up tuples of c1.
for ((p = 20000; p < 22000; p++)); do
	echo "tcp ${CLIENT_IP4[0]}:$p -> $VIP4:80"
done >"$work/flows"

table_of() {	# table_of OUT: table show as JSON
	xlbctl -j table show "$VIP" >"$1"
}

# compare BEFORE-TABLE BEFORE-FLOWS AFTER-TABLE AFTER-FLOWS GONE: nothing
# moved except the flows of GONE, which went to their secondary
compare() {
	"$TAP_PYTHON" - "$@" <<-'EOF'
		import json, sys
		t0, f0, t1, f1 = (json.load(open(a)) for a in sys.argv[1:5])
		gone = sys.argv[5]
		s0 = {b["name"]: b["slots"] for b in t0["backends"]}
		s1 = {b["name"]: b["slots"] for b in t1["backends"]}
		print("slots before %s" % s0)
		print("slots after  %s" % s1)
		bad = []
		if s1.get(gone, 0) != 0:
		    bad.append("%s still has %d slots" % (gone, s1[gone]))
		for k, v in s0.items():
		    if k != gone and s1.get(k, 0) < v:
		        bad.append("%s lost slots: %d -> %d" % (k, v, s1.get(k, 0)))
		if sum(s0.values()) != sum(s1.values()):
		    bad.append("slot total changed")
		same = to_sec = other = 0
		for a, b in zip(f0, f1):
		    if a["primary"] != gone:
		        if a["primary"] == b["primary"]:
		            same += 1
		        else:
		            bad.append("%s moved: %s -> %s" % (a["flow"], a["primary"], b["primary"]))
		    elif b["primary"] == a["secondary"]:
		        to_sec += 1
		    else:
		        other += 1
		        bad.append("%s of %s went to %s, not its secondary %s" % (
		            a["flow"], gone, b["primary"], a["secondary"]))
		print("%d flows: %d on other backends kept their primary, %d of %s's "
		      "went to their secondary, %d elsewhere" % (len(f0), same, to_sec,
		      gone, other))
		for x in bad[:5]:
		    print(x)
		sys.exit(1 if bad or len(f0) != len(f1) else 0)
	EOF
}

T0=$(now_ms)
ms_all=$(wait_state b1:up:in b2:up:in b3:up:in b4:up:in)
sc_result $? "every backend healthy and in the table" "after $ms_all ms"
table_of "$work/t0.json"
sc_explain <"$work/flows" >"$work/f0.json"
fp0=$(json_get "$work/t0.json" "j['fingerprint']")

sc_hold_start load c1 "$VIP4:80" 300 --duration 60 --interval 200 \
	--timeout 2000 >"$work/hold.log" 2>&1
rc=$?
sc_result $rc "300 long-lived connections established and answered" \
	"$(cat "$work/hold.log")"
[[ $rc -eq 0 ]] || tap_bail "no load"

# --- b3 goes down ---------------------------------------------------------------

sc_hold_phase load b3_down
T0=$(now_ms)
serve_stop b3
ms_down=$(wait_state b3:down:out b1:up:in b2:up:in b4:up:in)
sc_result $? "b3's server stopped: b3 ejected in $ms_down ms (fall x interval = $((FALL * INTERVAL)) ms)" \
	"$(backends_state)"
table_of "$work/t1.json"
sc_explain <"$work/flows" >"$work/f1.json"
out=$(compare "$work/t0.json" "$work/f0.json" "$work/t1.json" "$work/f1.json" b3 2>&1)
sc_result $? "nothing else moved: only b3's slots and flows changed owner" "$out"

sc_conns c2 "$VIP4:80" "$N" "$work/conns1.json" --expect "$(sc_expect "$VIP")" --alpha "$ALPHA"
out=$(sc_conns_summary "$work/conns1.json" 2>&1 || cat "$work/conns1.json.err")
sc_result "$([[ $(json_get "$work/conns1.json" \
	"j['ok'] and 'b3' not in j['backends']") == True ]]; echo $?)" \
	"b3 down: $N new connections complete, none to b3 (p >= $ALPHA)" "$out"

# --- b3 comes back --------------------------------------------------------------

sc_hold_phase load b3_up
T0=$(now_ms)
serve_start b3 || tap_diag "b3's server did not start again"
ms_up=$(wait_state b3:up:in)
sc_result $? "b3's server back: b3 in the table again in $ms_up ms (rise x interval = $((RISE * INTERVAL)) ms)" \
	"$(backends_state)"
table_of "$work/t2.json"
sc_explain <"$work/flows" >"$work/f2.json"
fp2=$(json_get "$work/t2.json" "j['fingerprint']")
same=$("$TAP_PYTHON" -c '
import json, sys
a, b = (json.load(open(x)) for x in sys.argv[1:3])
print(sum(x["primary"] == y["primary"] for x, y in zip(a, b)))' "$work/f0.json" "$work/f2.json")
sc_result "$([[ $fp2 == "$fp0" && $same == 2000 ]]; echo $?)" \
	"b3 back: the table of before (fingerprint $fp0 -> $fp2, $same of 2000 flows on their first primary)"

sc_conns c2 "$VIP4:80" "$N" "$work/conns2.json" --expect "$(sc_expect "$VIP")" --alpha "$ALPHA"
out=$(sc_conns_summary "$work/conns2.json" 2>&1 || cat "$work/conns2.json.err")
sc_result "$([[ $(json_get "$work/conns2.json" \
	"j['ok'] and j['backends'].get('b3', {}).get('count', 0) > 0") == True ]]; echo $?)" \
	"b3 back: $N new connections complete, b3 takes its share again (p >= $ALPHA)" "$out"

sc_hold_stop load >"$work/stop.log" 2>&1
out=$(sc_hold_summary load 2>&1 || cat "$work/stop.log")
verdict=$("$TAP_PYTHON" - "$TOPO_DIR/hold-load.json" <<-'EOF'
	import json, sys
	j = json.load(open(sys.argv[1]))
	b3 = j["backends"].get("b3", {"connections": 0, "broken": 0})
	others = sum(v["broken"] for k, v in j["backends"].items() if k != "b3")
	print("b3 held %d, %d broke (its server stopped); other backends' broken %d"
	      % (b3["connections"], b3["broken"], others))
	sys.exit(0 if j["established"] == j["connections"] and others == 0
	         and b3["broken"] == b3["connections"] else 1)
EOF
)
sc_result $? "held connections: only b3's broke (their server stopped)" "$verdict" "$out"

# --- panic ----------------------------------------------------------------------

T0=$(now_ms)
for h in b1 b2 b3; do
	serve_stop "$h"
done
ms_panic=$(wait_state b1:down:in b2:down:in b3:down:in b4:up:in)
rc=$?
panic=$(sc_vip_field "$VIP" "v['panic_active'], v['healthy'], v['in_table'], v['fingerprint']")
sc_result "$([[ $rc -eq 0 && $panic == "(True, 1, 4, '$fp0')" ]]; echo $?)" \
	"3 of 4 down (panic 50): all four kept in the table, panic_active (in $ms_panic ms)" \
	"panic_active, healthy, in_table, fingerprint: $panic" \
	"xlbd: $(grep -m1 PANIC "$TOPO_DIR/xlbd.log")" "$(backends_state)"

T0=$(now_ms)
for h in b1 b2 b3; do
	serve_start "$h" || tap_diag "$h's server did not start again"
done
ms_calm=$(wait_state b1:up:in b2:up:in b3:up:in b4:up:in)
rc=$?
panic=$(sc_vip_field "$VIP" "v['panic_active'], v['healthy'], v['in_table'], v['fingerprint']")
sc_result "$([[ $rc -eq 0 && $panic == "(False, 4, 4, '$fp0')" ]]; echo $?)" \
	"servers back: panic mode over in $ms_calm ms, the table of before" \
	"panic_active, healthy, in_table, fingerprint: $panic"

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
