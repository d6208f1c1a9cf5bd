#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The data path on two NICs at once, and what `xlbctl link` says about
# each attachment.  The test network of tests/e2e/lib/topo.sh, plus a
# client segment of its own: client cx behind the LB's second interface
# eth1 (10.201.0.0/24, fd00:201::/64), the backends behind eth0, which
# route cx's addresses via the LB (whose kernel forwards their direct
# answers).  xlbd attaches natively to both.
#
#   - $E2E_CONNS (500) TCP connections from cx over IPv4 and over IPv6, and
#     from c1 on eth0: none fails, each spread as the table says; cx's
#     packets leave eth1 by redirect into eth0, c1's by XDP_TX.
#   - $E2E_HOLD (200) long-lived connections from cx: 0 broken.
#   - counters per link: every frame cx sends goes through eth1's XDP, so
#     eth1's packets grow by exactly what cx's interface sent.
#   - attaching where XDP cannot run in the asked mode (a bridge device,
#     natively) is refused with the reason and changes nothing: the links,
#     the saved state, forwarding; the same device generically attaches.
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

N=${E2E_CONNS:-500}
HOLD=${E2E_HOLD:-200}
ALPHA=0.0001
VIP=$VIP4:80/tcp
VIP_6=[$VIP6]:80/tcp
CX4=10.201.0.11 CX6=fd00:201::11
LB2_4=10.201.0.2 LB2_6=fd00:201::2

sc_begin
sc_serve
sc_xlbd
NS_CX=${TOPO_PREFIX}cx

# cx on eth1 of the LB; the backends answer it through the LB's kernel
up_cx() {
	ip netns add "$NS_CX" || return 1
	topo_at_down "topo_del_ns $NS_CX"
	topo_host_sysctls cx || return 1
	ip -n "$NS_LB" link add eth1 type veth peer name eth0 netns "$NS_CX" ||
		return 1
	in_ns lb bash -e -c "
		ip addr add $LB2_4/24 dev eth1
		ip addr add $LB2_6/64 dev eth1 nodad
		ip link set eth1 up
	" || return 1
	in_ns cx bash -e -c "
		ip link set lo up
		ip addr add $CX4/24 dev eth0
		ip addr add $CX6/64 dev eth0 nodad
		ip link set eth0 up
		ethtool -K eth0 tx off >/dev/null
		ip route add $VIP4_NET via $LB2_4
		ip -6 route add $VIP6_NET via $LB2_6
	" || return 1
	for host in "${BACKENDS[@]}"; do
		in_ns "$host" bash -e -c "
			ip route add 10.201.0.0/24 via $LB_IP4
			ip -6 route add fd00:201::/64 via $LB_IP6
		" || return 1
	done
	for addr in "$LB2_4" "$LB2_6"; do
		topo_ping cx "$addr" || { echo "cx cannot reach $addr"; return 1; }
	done
}
out=$(up_cx 2>&1)
sc_result $? "client cx behind the LB's eth1 (it routes only the VIPs there)" "$out"

out=$(xlbctl link attach eth1 native 2>&1 && xlbctl link show 2>&1)
sc_result "$([[ $? -eq 0 && $out == *eth0*native*yes* && $out == *eth1*native*yes* ]]; echo $?)" \
	"the data path attached natively to eth0 and eth1" "$out"

out=$(sc_vip "$VIP" 4 4 2>&1 && sc_vip "$VIP_6" 6 4 2>&1)
sc_result $? "VIPs $VIP and $VIP_6 with b1..b4" "$out"

# link_field IFNAME EXPR: a Python expression over l, the link's object
link_field() {
	xlbctl -j link show | "$TAP_PYTHON" -c '
import json, sys
l = [x for x in json.load(sys.stdin)["links"] if x["ifname"] == sys.argv[1]][0]
print(eval(sys.argv[2]))' "$1" "$2"
}

# frames cx's eth0 sent, by the kernel's counter (ip: /sys is the host's
# in a namespace entered alone)
cx_sent() {
	in_ns cx ip -s -j link show eth0 | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)[0]["stats64"]["tx"]["packets"])'
}

# cx's sent count and eth1's frame count taken together: cx sends on its
# own now and then (neighbour discovery), so the pair is taken again until
# cx sent nothing while eth1 was read, a settled frame later than the first
# read having had time to arrive
cx_and_eth1() {
	local s1 s2 e i

	for ((i = 0; i < 20; i++)); do
		s1=$(cx_sent)
		sleep 0.2
		e=$(link_field eth1 'l["packets"]')
		s2=$(cx_sent)
		if [[ $s1 == "$s2" ]]; then
			echo "$s1 $e"
			return 0
		fi
	done
	return 1
}

read -r sent0 e1_0 < <(cx_and_eth1)
e1_red0=$(link_field eth1 'l["actions"]["redirect"]')
e0_tx0=$(link_field eth0 'l["actions"]["tx"]')

expect=$(sc_expect "$VIP")
sc_conns cx "$VIP4:80" "$N" "$work/cx4.json" --expect "$expect" --alpha "$ALPHA"
out=$(sc_conns_summary "$work/cx4.json" 2>&1 || cat "$work/cx4.json.err")
sc_result "$([[ $(json_get "$work/cx4.json" "j['ok'] and j['failed'] == 0 and j['completed'] == $N") == True ]]; echo $?)" \
	"cx (eth1), IPv4: $N connections complete, spread as the table (p >= $ALPHA)" "$out"

expect6=$(sc_expect "$VIP_6")
sc_conns cx "[$VIP6]:80" "$N" "$work/cx6.json" --expect "$expect6" --alpha "$ALPHA"
out=$(sc_conns_summary "$work/cx6.json" 2>&1 || cat "$work/cx6.json.err")
sc_result "$([[ $(json_get "$work/cx6.json" "j['ok'] and j['failed'] == 0 and j['completed'] == $N") == True ]]; echo $?)" \
	"cx (eth1), IPv6: $N connections complete, spread as the table (p >= $ALPHA)" "$out"

sc_conns c1 "$VIP4:80" "$N" "$work/c1.json" --expect "$expect" --alpha "$ALPHA"
out=$(sc_conns_summary "$work/c1.json" 2>&1 || cat "$work/c1.json.err")
sc_result "$([[ $(json_get "$work/c1.json" "j['ok'] and j['failed'] == 0") == True ]]; echo $?)" \
	"c1 (eth0): $N connections complete" "$out"

read -r sent1 e1_1 < <(cx_and_eth1)
e1_red1=$(link_field eth1 'l["actions"]["redirect"]')
e1_tx1=$(link_field eth1 'l["actions"]["tx"]')
e0_tx1=$(link_field eth0 'l["actions"]["tx"]')
show=$(xlbctl link show 2>&1)
sc_result "$([[ -n $sent0 && -n $sent1 && $((e1_1 - e1_0)) -eq $((sent1 - sent0)) && $((sent1 - sent0)) -gt 0 ]]; echo $?)" \
	"eth1 counted every frame cx sent: $((e1_1 - e1_0)) of $((sent1 - sent0))" "$show"
sc_result "$([[ $((e1_red1 - e1_red0)) -ge $((4 * N)) && $e1_tx1 -eq 0 && $((e0_tx1 - e0_tx0)) -ge $((2 * N)) ]]; echo $?)" \
	"cx's packets left eth1 by redirect ($((e1_red1 - e1_red0))), none by XDP_TX; c1's by XDP_TX on eth0 ($((e0_tx1 - e0_tx0)))" "$show"
m=$(in_ns lb curl -s http://127.0.0.1:9437/metrics |
	grep '^xlb_link_xdp_actions_total{link="eth1",action="redirect"}')
sc_result "$([[ -n $m && ${m##* } -ge $e1_red1 ]]; echo $?)" \
	"/metrics counts eth1's redirects as link show does" "$m"

# --- long-lived connections from cx ----------------------------------------------

sc_hold_start links cx "$VIP4:80" "$HOLD" --duration 8 --interval 200 \
	--timeout 2000 >"$work/hold.log" 2>&1
rc=$?
sc_result $rc "$HOLD long-lived connections from cx established and answered" \
	"$(cat "$work/hold.log")"

# --- attaching where XDP cannot run -----------------------------------------------

saved=$(xlbctl save 2>&1)
links=$(xlbctl -j link show | "$TAP_PYTHON" -c '
import json, sys
print(" ".join("%s:%s:%s" % (l["ifname"], l["mode"], l["attached"])
               for l in json.load(sys.stdin)["links"]))')
in_ns lb ip link add xbr0 type bridge && in_ns lb ip link set xbr0 up
out=$(xlbctl link attach xbr0 native 2>&1)
rc=$?
after=$(xlbctl -j link show | "$TAP_PYTHON" -c '
import json, sys
print(" ".join("%s:%s:%s" % (l["ifname"], l["mode"], l["attached"])
               for l in json.load(sys.stdin)["links"]))')
sc_result "$([[ $rc -ne 0 && $out == *xbr0* && $out == *native* && $after == "$links" && $(xlbctl save 2>&1) == "$saved" ]]; echo $?)" \
	"native XDP on a bridge device is refused with the reason; links and state unchanged" \
	"$out" "links before: $links; after: $after"
out=$(xlbctl link attach lo native 2>&1)
sc_result "$([[ $? -ne 0 && -n $out && $(xlbctl save 2>&1) == "$saved" ]]; echo $?)" \
	"native XDP on lo is refused with the reason; state unchanged" "$out"
out=$(xlbctl link attach xbr0 generic 2>&1 && xlbctl link show 2>&1)
sc_result "$([[ $? -eq 0 && $out == *xbr0*generic*yes* ]]; echo $?)" \
	"the same bridge takes the data path generically" "$out"
out=$(xlbctl link detach xbr0 2>&1)
sc_result $? "and lets it go" "$out"

sc_hold_stop links
out=$(sc_hold_summary links 2>&1)
sc_result "$([[ $(json_get "$TOPO_DIR/hold-links.json" "j['established'] == j['connections'] == $HOLD and sum(b['broken'] for b in j['backends'].values()) == 0") == True ]]; echo $?)" \
	"cx's $HOLD held connections: 0 broken while links came and went" "$out"

out=$(sc_conns cx "$VIP4:80" 100 "$work/cx-after.json" && sc_conns_summary "$work/cx-after.json")
sc_result "$([[ $(json_get "$work/cx-after.json" "j['failed'] == 0 and j['completed'] == 100") == True ]]; echo $?)" \
	"cx's new connections still complete" "$out"

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
