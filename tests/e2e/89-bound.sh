#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Bounded loads (docs/datapath.md, "Bounded loads") with real TCP
# connections, four backends, nine clients.
#
# Hot spot: a VIP hashing on the source address; c1 stands for many users
# behind one NAT and opens half of all connections, c2..c9 the other half,
# in $ROUNDS rounds of $BATCH connections from c1 and $BATCH from one of
# the others, $PACE s apart (longer than xlbd's 100 ms round, so that each
# round sees the marks of the one before).  The connections stay open.
# The busiest backend's established connections (counted on the backends
# themselves) over the mean, printed for the VIP without a bound and with
# bound 1.25; with it, no backend holds more than its capacity,
# ceil(1.25 x (total + 1) / 4), plus one round's batch (the counting's
# slack: a round's connections open within one interval).  The data
# path's counts (xlbctl backend show) equal the backends' own, and no held
# connection breaks.
#
# Uniform flows: a 5-tuple VIP with bound 1.25 and $UNIFORM connections
# from one client: the share the bound sends elsewhere (the "bounded"
# event over the new flows) is printed, and is at most 2%.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

ROUNDS=${E2E_BOUND_ROUNDS:-12}
BATCH=6
PACE=0.3
UNIFORM=${E2E_BOUND_UNIFORM:-800}
VIP=$VIP4:80/tcp
# a fixed key: the clients' slots are the same in every run
TOPO_KEY=5a17c0ffee0ddba11b00dedc0ffee0de

sc_begin --backends 4 --clients 9
sc_serve
sc_xlbd
out=$(sc_vip "$VIP" 4 4 hash src 2>&1)
sc_result $? "VIP $VIP, hash src, with b1..b4" "$out"

# established connections to port 80 on each backend: "b1=N b2=N ..."
backend_counts() {
	local i n s=""

	for i in "${!BACKENDS[@]}"; do
		n=$(in_ns "${BACKENDS[i]}" ss -Htn state established \
			"( sport = :80 )" | wc -l)
		s+="${BACKENDS[i]}=$n "
	done
	echo "${s% }"
}

# the data path's counts and marks of the VIP's backends: "b1=N[!] ..."
dp_counts() {
	xlbctl -j backend show "$1" | "$TAP_PYTHON" -c '
import json, sys
print(" ".join("%s=%d%s" % (b["name"], b["connections"],
                            "!" if b["full"] else "")
               for b in json.load(sys.stdin)["backends"]))'
}

# max, mean and max/mean of "b1=N ..."
spread() {
	"$TAP_PYTHON" -c '
import sys
n = [int(w.split("=")[1].rstrip("!")) for w in sys.argv[1].split()]
m = sum(n) / len(n)
print("%d %.2f %.2f %d" % (max(n), m, max(n) / m if m else 0, sum(n)))' "$1"
}

# the data path's counts back to zero once connections are gone (10 s)
drained() {
	local i c

	for ((i = 0; i < 100; i++)); do
		c=$(dp_counts "$VIP")
		[[ $c =~ ^(b[0-9]=0 ?)+$ ]] && return 0
		sleep 0.1
	done
	echo "left: $c"
	return 1
}

# run NAME: the rounds of held connections; then the figures (RUN_*)
run() {
	local name=$1 r c h i bad=0 broken=0 j

	RUN_HOLDS=()
	for ((r = 0; r < ROUNDS; r++)); do
		c=c$((2 + r % 8))
		for h in "c1" "$c"; do
			j=$name-$r-$h
			sc_hold_start "$j" "$h" "$VIP4:80" "$BATCH" \
				--duration 120 --interval 500 --timeout 3000 \
				>>"$work/hold-$name.log" 2>&1 || bad=1
			RUN_HOLDS+=("$j")
		done
		sleep "$PACE"
	done
	sleep 0.3
	RUN_BE=$(backend_counts)
	RUN_DP=$(dp_counts "$VIP")
	for j in "${RUN_HOLDS[@]}"; do
		sc_hold_stop "$j" >>"$work/hold-$name.log" 2>&1 || bad=1
		i=$("$TAP_PYTHON" -c '
import json, sys
j = json.load(open(sys.argv[1]))
print(sum(p["broken"] for p in j["phases"]))' "$TOPO_DIR/hold-$j.json" 2>/dev/null)
		broken=$((broken + ${i:-1}))
	done
	RUN_BROKEN=$broken
	RUN_BAD=$bad
}

# --- hot spot, without a bound, then with bound 1.25 --------------------------

for b in off 1.25; do
	out=$(xlbctl vip set "$VIP" bound "$b" 2>&1)
	sc_result $? "bound $b" "$out"
	name=$([[ $b == off ]] && echo off || echo on)	# no dot: a variable name
	run "$name"
	read -r max mean ratio total <<<"$(spread "$RUN_BE")"
	dp=${RUN_DP//!/}
	tap_diag "bound $b: backends' connections $RUN_BE, data path $RUN_DP (! full)"
	tap_diag "bound $b: busiest/mean = $max/$mean = $ratio"
	sc_result "$([[ $RUN_BAD -eq 0 && $total -eq $((2 * ROUNDS * BATCH)) ]]; echo $?)" \
		"bound $b: all $((2 * ROUNDS * BATCH)) connections open" \
		"open $total; $(tail -5 "$work/hold-$name.log")"
	sc_result "$([[ $dp == "$RUN_BE" ]]; echo $?)" \
		"bound $b: the data path counts each backend's connections exactly" \
		"backends $RUN_BE; data path $RUN_DP"
	sc_result "$([[ $RUN_BROKEN -eq 0 ]]; echo $?)" \
		"bound $b: no held connection broke" "broken $RUN_BROKEN"
	if [[ $b == off ]]; then
		# the workload is a hot spot: without a bound it shows
		sc_result "$("$TAP_PYTHON" -c "import sys; sys.exit(not $ratio >= 1.5)"; echo $?)" \
			"no bound: the hot spot puts $ratio x the mean on one backend" ""
	else
		cap=$(((125 * (total + 1) + 399) / 400))
		sc_result "$([[ $max -le $((cap + BATCH)) ]]; echo $?)" \
			"bound 1.25: busiest $max <= capacity $cap + one round's $BATCH" \
			"backends $RUN_BE"
	fi
	out=$(drained 2>&1)
	sc_result $? "bound $b: the counts return to 0 once the connections close" "$out"
done

# --- uniform flows ---------------------------------------------------------------

U=$(vip4 2):80/tcp
out=$(sc_vip "$U" 4 4 bound 1.25 2>&1)
sc_result $? "VIP $U, 5-tuple, bound 1.25" "$out"
ev0=$(sc_event bounded)
nf0=$(sc_vip_field "$U" 'v["stats"]["new_flows"]')
sc_hold_start uni c2 "$(vip4 2):80" "$UNIFORM" --duration 120 --interval 1000 \
	--timeout 3000 >"$work/uni.log" 2>&1
rc=$?
sleep 0.3
counts=$(xlbctl -j backend show "$U" | "$TAP_PYTHON" -c '
import json, sys
print(" ".join("%s=%d" % (b["name"], b["connections"])
               for b in json.load(sys.stdin)["backends"]))')
ev1=$(sc_event bounded)
nf1=$(sc_vip_field "$U" 'v["stats"]["new_flows"]')
sc_hold_stop uni >>"$work/uni.log" 2>&1
moved=$((ev1 - ev0))
flows=$((nf1 - nf0))
share=$("$TAP_PYTHON" -c "print('%.2f' % (100.0 * $moved / max($flows, 1)))")
read -r max mean ratio total <<<"$(spread "$counts")"
tap_diag "uniform, bound 1.25: $counts, busiest/mean $ratio; $moved of $flows new flows sent to the secondary ($share%)"
sc_result "$([[ $rc -eq 0 && $flows -ge $UNIFORM ]] &&
	"$TAP_PYTHON" -c "import sys; sys.exit(not $moved <= 0.02 * $flows)"; echo $?)" \
	"uniform flows: the bound moves $share% of $flows new flows (at most 2%)" \
	"$(tail -3 "$work/uni.log")"

tap_done
