#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Path MTU discovery through the encapsulating LB, per family and tunnel.
# 20-balance.sh checks that 64 KiB echoes complete and that the LB counted
# "too big" answers over all VIPs; this test checks each case on its own,
# and that the client really got the answer:
#
#   a client (MTU 1500) sends full-size TCP segments to the VIP; the LB
#   (underlay MTU 1500) cannot add its tunnel header, answers ICMP
#   fragmentation needed / ICMPv6 packet too big (its too_big counter
#   grows), the client accepts the answer and caches the path MTU the LB
#   announced (1500 minus the tunnel's overhead: `ip route get` shows it;
#   nothing else could have told it that number), and every transfer
#   completes with every byte intact.  (The client's own ICMP counters are
#   no evidence: its kernel also counts the notices it gives itself for
#   segments queued before the MTU dropped.)
#
# Cases: IPv4 VIP over IPIP (overhead 20), GUE over IPv4 (44) and 4in6
# (40); IPv6 VIP over ip6ip6 (40), GUE over IPv6 (88) and 6in4 (20).
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

sc_begin
sc_serve
sc_xlbd

too_big() {
	xlbctl -j stats | "$TAP_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["events"]["too_big"])'
}

# pmtu HOST ADDR: the path MTU HOST has cached toward ADDR, or 1500
pmtu() {
	local r

	r=$(in_ns "$1" ip route get "$2")
	if [[ $r =~ mtu\ ([0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		echo 1500
	fi
}

# NAME|VIP (address)|ENCAP|FAMILY|OVERHEAD|CLIENT
while IFS='|' read -r name addr encap fam over client; do
	if [[ $addr == *:* ]]; then
		spec="[$addr]:80/tcp" to="[$addr]:80"
		in_ns "$client" ip -6 route flush cache >/dev/null 2>&1
	else
		spec="$addr:80/tcp" to="$addr:80"
		in_ns "$client" ip route flush cache >/dev/null 2>&1
	fi
	if ! out=$(sc_vip "$spec" "$fam" 4 encap "$encap" 2>&1); then
		sc_result 1 "$name: VIP $spec" "$out"
		continue
	fi
	tb0=$(too_big) mtu0=$(pmtu "$client" "$addr")
	in_ns "$client" "$SC_X" conns --to "$to" -n 20 --concurrency 10 \
		--bytes 65536 --timeout 10000 -j >"$work/out.json" 2>"$work/err.log"
	tb1=$(too_big) mtu1=$(pmtu "$client" "$addr")
	completed=$(json_get "$work/out.json" "j['completed']" 2>/dev/null)
	want=$((1500 - over))
	sc_result "$([[ ${completed:-0} == 20 && $((tb1 - tb0)) -gt 0 &&
		$mtu0 == 1500 && $mtu1 == "$want" ]]; echo $?)" \
		"$name: 20 echoes of 64 KiB complete; the LB answered too big, the client got it and uses MTU $want" \
		"LB too_big +$((tb1 - tb0)); client path MTU $mtu0 -> $mtu1 (want $want)" \
		"$(sc_conns_summary "$work/out.json" 2>&1)" "$(head -3 "$work/err.log")"
done <<EOF
IPv4 VIP, IPIP|$(vip4 1)|ipip|4|20|c1
IPv4 VIP, GUE over IPv4|$(vip4 2)|gue|4|44|c2
IPv6 VIP, ip6ip6|$(vip6 1)|ipip|6|40|c1
IPv6 VIP, GUE over IPv6|$(vip6 2)|gue|6|88|c2
IPv4 VIP, 4in6|$(vip4 3)|ipip|6|40|c1
IPv6 VIP, 6in4|$(vip6 3)|ipip|4|20|c2
EOF

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
