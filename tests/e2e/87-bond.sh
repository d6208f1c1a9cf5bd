#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The data path on a bond.  The test network of tests/e2e/lib/topo.sh with
# the LB's link made a bond: bond0 (active-backup, miimon 20 ms) over eth0
# and a second veth eth1 into the same switch, the LB's addresses and MAC
# on bond0, and xlbd attached natively to bond0 (XDP runs on the slaves).
#
#   - `xlbctl link show` lists bond0 natively attached, its slaves under it.
#   - $E2E_CONNS (500) TCP connections from c1 and from c2: none fails, each
#     spread as the table says; the active slave counted them, the backup
#     slave forwarded none (it sees only what the switch floods).
#   - $E2E_HOLD (100) long-lived connections from c1 while the active
#     slave's carrier goes down (its switch port down): the bond fails over
#     to eth1, which counts the packets from then on; 0 broken, and new
#     connections complete through eth1.
#
# Needs bonding in the kernel: this host's may have none (loadable modules
# off); tests/vm/links.sh runs it in a qemu guest of each Debian kernel.
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

N=${E2E_CONNS:-500}
HOLD=${E2E_HOLD:-100}
ALPHA=0.0001
VIP=$VIP4:80/tcp

sc_require
if ! unshare -n ip link add xlbbondtest type bond 2>/dev/null; then
	tap_skip "a bond under the data path" \
		"this kernel has no bonding (tests/vm/links.sh runs it in a guest)"
	tap_done
	exit 0
fi

sc_begin --clients 2

# the bond's active slave
active() {
	in_ns lb cat /proc/net/bonding/bond0 2>/dev/null |
		sed -n 's/^Currently Active Slave: //p'
}

# bond0 in the LB: eth0 and a second veth eth1, both into the switch
mkbond() {
	local h i

	ip -n "$NS_SW" link add lbb type veth peer name eth1 netns "$NS_LB" ||
		return 1
	ip -n "$NS_SW" link set lbb master br0 up || return 1
	ip -n "$NS_SW" link set dev lbb xdpdrv obj "$TOPO_XDP_PASS" sec xdp ||
		return 1
	in_ns lb bash -e -c "
		ip link add bond0 type bond mode active-backup miimon 20 \
			num_grat_arp 3 num_unsol_na 3
		ip addr flush dev eth0
		ip link set eth0 down
		ip link set eth0 master bond0
		ip link set eth1 down
		ip link set eth1 master bond0
		ip link set bond0 type bond primary eth0
		ip link set bond0 address 02:00:0a:c8:00:02
		ip addr add $LB_IP4/24 dev bond0
		ip addr add $LB_IP6/64 dev bond0 nodad
		ip link set bond0 up
	" || return 1
	# the bond takes its slaves at miimon's next look; a loaded guest may
	# answer a ping late: a few tries each (bounded)
	for ((i = 0; i < 50; i++)); do
		[[ $(active) == eth0 ]] && break
		sleep 0.1
	done
	for h in "${CLIENTS[@]}" "${BACKENDS[@]}"; do
		for ((i = 0; i < 10; i++)); do
			topo_ping "$h" "$LB_IP4" && continue 2
			# an entry resolved before the bond: asked for again
			in_ns "$h" ip neigh flush to "$LB_IP4" 2>/dev/null
		done
		echo "$h cannot reach the LB"
		# what the next look needs: where each side sent the frames
		in_ns "$h" ip neigh show
		bridge -n "$NS_SW" fdb show br br0 | grep -i "02:00:0a:c8:00:02"
		in_ns lb cat /proc/net/bonding/bond0
		in_ns lb ip -s link show
		return 1
	done
}
out=$(mkbond 2>&1)
sc_result $? "bond0 (active-backup) over eth0 and eth1 carries the LB's addresses" "$out"
LB_IF=bond0

sc_serve
sc_xlbd
out=$(xlbctl link show 2>&1)
lower=$(xlbctl -j link show | "$TAP_PYTHON" -c '
import json, sys
l = [x for x in json.load(sys.stdin)["links"] if x["ifname"] == "bond0"][0]
print(l["mode"], l["attached"], " ".join(sorted(s["ifname"] for s in l.get("lower", []))))')
sc_result "$([[ $lower == "native True eth0 eth1" ]]; echo $?)" \
	"the data path attached natively to bond0; link show lists eth0 and eth1 under it" \
	"$lower" "$out"

out=$(sc_vip "$VIP" 4 4 2>&1)
sc_result $? "VIP $VIP with b1..b4" "$out"

# slave IFNAME's packets, by `xlbctl link show`
slave_packets() {
	xlbctl -j link show | "$TAP_PYTHON" -c '
import json, sys
l = [x for x in json.load(sys.stdin)["links"] if x["ifname"] == "bond0"][0]
print([s for s in l["lower"] if s["ifname"] == sys.argv[1]][0]["packets"])' "$1"
}

# slave IFNAME's packets sent on (XDP_TX on a bond slave goes out through
# the bond, as a redirect)
slave_sent() {
	xlbctl -j link show | "$TAP_PYTHON" -c '
import json, sys
l = [x for x in json.load(sys.stdin)["links"] if x["ifname"] == "bond0"][0]
a = [s for s in l["lower"] if s["ifname"] == sys.argv[1]][0]["actions"]
print(a["tx"] + a["redirect"])' "$1"
}

e0_0=$(slave_packets eth0)
e1_0=$(slave_sent eth1)
expect=$(sc_expect "$VIP")
for c in c1 c2; do
	sc_conns "$c" "$VIP4:80" "$N" "$work/$c.json" --expect "$expect" --alpha "$ALPHA"
	out=$(sc_conns_summary "$work/$c.json" 2>&1 || cat "$work/$c.json.err")
	sc_result "$([[ $(json_get "$work/$c.json" "j['ok'] and j['failed'] == 0 and j['completed'] == $N") == True ]]; echo $?)" \
		"$c through bond0: $N connections complete, spread as the table (p >= $ALPHA)" "$out"
done
e0_1=$(slave_packets eth0)
e1_1=$(slave_sent eth1)
sc_result "$([[ $((e0_1 - e0_0)) -ge $((2 * N * 5)) && $e1_1 -eq $e1_0 ]]; echo $?)" \
	"the active slave eth0 counted them ($((e0_1 - e0_0)) packets), the backup eth1 forwarded none" \
	"$(xlbctl link show 2>&1)"

# --- failover under held connections --------------------------------------------

sc_hold_start bond c1 "$VIP4:80" "$HOLD" --duration 30 --interval 100 \
	--timeout 3000 >"$work/hold.log" 2>&1
rc=$?
sc_result $rc "$HOLD long-lived connections through bond0" "$(cat "$work/hold.log")"
sc_hold_phase bond failover >/dev/null
e1_2=$(slave_packets eth1)
was=$(active)
ip -n "$NS_SW" link set lb down
for ((i = 0; i < 50; i++)); do
	[[ $(active) == eth1 ]] && break
	sleep 0.1
done
now=$(active)
sc_result "$([[ $was == eth0 && $now == eth1 ]]; echo $?)" \
	"eth0's carrier lost: the bond's active slave is eth1 (was $was, now $now)" ""
sleep 2
e1_3=$(slave_packets eth1)
sc_hold_stop bond
out=$(sc_hold_summary bond 2>&1)
sc_result "$([[ $(json_get "$TOPO_DIR/hold-bond.json" "j['established'] == j['connections'] == $HOLD and sum(b['broken'] for b in j['backends'].values()) == 0") == True ]]; echo $?)" \
	"$HOLD held connections: 0 broken across the failover" "$out"
sc_result "$([[ $((e1_3 - e1_2)) -ge $HOLD ]]; echo $?)" \
	"eth1 counts the packets after the failover ($((e1_3 - e1_2)))" \
	"$(xlbctl link show 2>&1)"
sc_conns c2 "$VIP4:80" "$N" "$work/after.json"
out=$(sc_conns_summary "$work/after.json" 2>&1 || cat "$work/after.json.err")
sc_result "$([[ $(json_get "$work/after.json" "j['failed'] == 0 and j['completed'] == $N") == True ]]; echo $?)" \
	"new connections complete through eth1" "$out"

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
