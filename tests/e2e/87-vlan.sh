#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The data path on a VLAN.  The test network of tests/e2e/lib/topo.sh with
# the switch made VLAN-aware: clients and backends on access ports of VLAN
# 100 (untagged), the LB's port a trunk that carries VLAN 100 tagged.  The
# LB's addresses are on eth0.100, its VLAN device over the trunk eth0, and
# xlbd attaches to eth0.100 (generic XDP: a VLAN device has no native
# mode); what the program sends goes out of eth0.100, tagged on the trunk.
#
#   - the LB's switch port carries VLAN 100 only, tagged, and every frame
#     the trunk eth0 sends comes from eth0.100 (their counters agree; eth0
#     has no address of its own);
#   - attaching natively to eth0.100 is refused with the reason and
#     changes nothing; generically it attaches;
#   - $E2E_CONNS (500) TCP connections from c1 and c2: none fails, spread as
#     the table says, and eth0.100's counters saw them;
#   - $E2E_HOLD (100) long-lived connections: 0 broken.
#
# Needs 8021q in the kernel: this host's may have none (loadable modules
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
VID=100

sc_require
if ! unshare -n sh -c 'ip link add xv0 type veth peer name xv1 &&
		ip link add link xv0 name xv0.2 type vlan id 2' 2>/dev/null; then
	tap_skip "a VLAN under the data path" \
		"this kernel has no 8021q (tests/vm/links.sh runs it in a guest)"
	tap_done
	exit 0
fi

sc_begin --clients 2

mkvlan() {
	local p i

	in_ns sw bash -e -c "
		ip link set br0 type bridge vlan_filtering 1
		bridge vlan add dev lb vid $VID
		bridge vlan del dev lb vid 1
	" || return 1
	for p in "${CLIENTS[@]}" "${BACKENDS[@]}"; do
		in_ns sw bash -e -c "
			bridge vlan add dev $p vid $VID pvid untagged
			bridge vlan del dev $p vid 1
		" || return 1
	done
	in_ns lb bash -e -c "
		ip addr flush dev eth0
		sysctl -qw net.ipv6.conf.eth0.disable_ipv6=1
		ip link add link eth0 name eth0.$VID type vlan id $VID
		ip addr add $LB_IP4/24 dev eth0.$VID
		ip addr add $LB_IP6/64 dev eth0.$VID nodad
		ip link set eth0.$VID up
	" || return 1
	# a loaded guest may answer a ping late: a few tries each (bounded)
	for p in "${CLIENTS[@]}" "${BACKENDS[@]}"; do
		for ((i = 0; i < 5; i++)); do
			topo_ping "$p" "$LB_IP4" && continue 2
		done
		echo "$p cannot reach the LB"
		return 1
	done
}
out=$(mkvlan 2>&1)
sc_result $? "VLAN $VID: clients and backends untagged, the LB on eth0.$VID over a trunk" "$out"
trunk=$(in_ns sw bridge -j vlan show dev lb 2>&1)
sc_result "$("$TAP_PYTHON" -c '
import json, sys
v = json.loads(sys.argv[1])[0]["vlans"]
sys.exit(not (len(v) == 1 and v[0]["vlan"] == int(sys.argv[2]) and
              "Egress Untagged" not in v[0].get("flags", [])))' "$trunk" "$VID" 2>&1; echo $?)" \
	"the LB's switch port carries only VLAN $VID, tagged" "$trunk"

# topo_xlbd_setup without its native attachment (not in $(...): it sets
# the socket's variables)
topo_xlbd_start >"$work/xlbd.log" 2>&1 &&
	xlbctl set key "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" >>"$work/xlbd.log" 2>&1 &&
	xlbctl set src4 "$LB_IP4" >>"$work/xlbd.log" 2>&1 &&
	xlbctl set src6 "$LB_IP6" >>"$work/xlbd.log" 2>&1
rc=$?
sc_result $rc "xlbd in the LB namespace" "$(cat "$work/xlbd.log")"
[[ $rc -eq 0 ]] || tap_bail "no xlbd: $(cat "$TOPO_DIR/xlbd.log" 2>/dev/null)"
sc_serve

saved=$(xlbctl save 2>&1)
out=$(xlbctl link attach eth0.$VID native 2>&1)
rc=$?
sc_result "$([[ $rc -ne 0 && $out == *eth0.$VID* && $out == *native* && $(xlbctl save 2>&1) == "$saved" && $(xlbctl -j link show) != *eth0.$VID* ]]; echo $?)" \
	"native XDP on eth0.$VID is refused with the reason; links and state unchanged" "$out"
out=$(xlbctl link attach eth0.$VID generic 2>&1 && xlbctl link show 2>&1)
sc_result "$([[ $? -eq 0 && $out == *eth0.$VID*generic*yes* ]]; echo $?)" \
	"the data path attached generically to eth0.$VID" "$out"

out=$(sc_vip "$VIP" 4 4 2>&1)
sc_result $? "VIP $VIP with b1..b4" "$out"

link_packets() {
	xlbctl -j link show | "$TAP_PYTHON" -c '
import json, sys
l = [x for x in json.load(sys.stdin)["links"] if x["ifname"] == sys.argv[1]][0]
print(l["packets"], l["actions"]["tx"])' "$1"
}
# frames of eth0 (the trunk) whose protocol is not 802.1Q: by the kernel's
# per-protocol count there is none, so the LB's trunk counters with the
# VLAN device's: every frame eth0 took, eth0.100 sent.  A veth counts a
# frame its peer's queue had no room for as dropped, not sent, and the
# VLAN device above it as sent: eth0's figure is the two together.
sent_of() {
	in_ns lb ip -s -j link show "$1" | "$TAP_PYTHON" -c '
import json, sys
tx = json.load(sys.stdin)[0]["stats64"]["tx"]
print(tx["packets"] + (tx["dropped"] if sys.argv[1] == "took" else 0))' "${2:-sent}"
}

# the trunk's and the VLAN device's counts at one moment: health checks
# and neighbour traffic go on while they are read, so both are read twice
# until neither moved in between (bounded, only against a link that never
# rests)
both_sent() {
	local i e v e2 v2

	for ((i = 0; i < 100; i++)); do
		e=$(sent_of eth0 took) v=$(sent_of eth0.$VID)
		e2=$(sent_of eth0 took) v2=$(sent_of eth0.$VID)
		[[ $e == "$e2" && $v == "$v2" ]] && break
	done
	echo "$e2 $v2"
}

read -r p0 tx0 <<<"$(link_packets eth0.$VID)"
read -r e0 v0 <<<"$(both_sent)"
expect=$(sc_expect "$VIP")
for c in c1 c2; do
	sc_conns "$c" "$VIP4:80" "$N" "$work/$c.json" --expect "$expect" --alpha "$ALPHA"
	out=$(sc_conns_summary "$work/$c.json" 2>&1 || cat "$work/$c.json.err")
	sc_result "$([[ $(json_get "$work/$c.json" "j['ok'] and j['failed'] == 0 and j['completed'] == $N") == True ]]; echo $?)" \
		"$c through VLAN $VID: $N connections complete, spread as the table (p >= $ALPHA)" "$out"
done
read -r p1 tx1 <<<"$(link_packets eth0.$VID)"
sc_result "$([[ $((tx1 - tx0)) -ge $((2 * N * 5)) && $((p1 - p0)) -ge $((tx1 - tx0)) ]]; echo $?)" \
	"eth0.$VID counted them: $((p1 - p0)) packets, $((tx1 - tx0)) sent back out by XDP_TX" \
	"$(xlbctl link show 2>&1)"
read -r e1 v1 <<<"$(both_sent)"
sc_result "$([[ $((e1 - e0)) -eq $((v1 - v0)) && $((v1 - v0)) -ge $((tx1 - tx0)) ]]; echo $?)" \
	"every frame the trunk eth0 took meanwhile came from eth0.$VID, tagged: $((e1 - e0)) of $((v1 - v0))" \
	"$(in_ns lb ip -s link show eth0)"

sc_hold_start vlan c1 "$VIP4:80" "$HOLD" --duration 10 --interval 200 \
	--timeout 3000 >"$work/hold.log" 2>&1
rc=$?
sc_result $rc "$HOLD long-lived connections through VLAN $VID" "$(cat "$work/hold.log")"
sleep 2
sc_hold_stop vlan
out=$(sc_hold_summary vlan 2>&1)
sc_result "$([[ $(json_get "$TOPO_DIR/hold-vlan.json" "j['established'] == j['connections'] == $HOLD and sum(b['broken'] for b in j['backends'].values()) == 0") == True ]]; echo $?)" \
	"$HOLD held connections: 0 broken" "$out"

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
