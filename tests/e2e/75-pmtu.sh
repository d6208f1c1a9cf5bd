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
# Then: an mtu that would tell IPv6 clients less than 1280 is refused;
# UDP datagrams above the MTU without DF (fragments) are never answered,
# but tunnelled for the LB's kernel to fragment (bpf/structs.h, "Too
# big").  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

sc_begin
sc_serve
sc_xlbd

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
	tb0=$(sc_event too_big) mtu0=$(pmtu "$client" "$addr")
	in_ns "$client" "$SC_X" conns --to "$to" -n 20 --concurrency 10 \
		--bytes 65536 --timeout 10000 -j >"$work/out.json" 2>"$work/err.log"
	tb1=$(sc_event too_big) mtu1=$(pmtu "$client" "$addr")
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

# --- An IPv6 VIP's clients are never told less than 1280 ------------------
# GUE over IPv6 adds 88 bytes: mtu 1367 would tell them 1279.  Refused,
# with the figures, and the running mtu stays.
mtu_before=$(xlbctl save | sed -n "s/^set mtu //p")
out=$(xlbctl set mtu 1367 2>&1)
rc=$?
mtu_after=$(xlbctl save | sed -n 's/^set mtu //p')
sc_result "$([[ $rc -ne 0 && $out == *"told an MTU of 1279; IPv6 needs at least 1280: set mtu 1368 or more"* &&
	$mtu_before == "$mtu_after" ]]; echo $?)" \
	"set mtu 1367 refused while an IPv6 VIP reaches a backend over GUE over IPv6; the mtu stays" \
	"exit $rc: $out" "mtu before '${mtu_before:-1500}', after '${mtu_after:-1500}'"

# --- An ordinary UDP datagram above the MTU ---------------------------------
# A UDP socket sends 3000 bytes as IPv4 fragments without DF; each
# 1500-byte fragment plus the tunnel's 20 bytes exceeds the underlay.  The
# LB must not answer "fragmentation needed" (the client would drop the
# datagram and lower its path MTU): it tunnels the fragments with DF clear
# and passes them to its kernel, which fragments the tunnel packets
# (forwarding on, and accept_local for its own outer source:
# docs/pmtu.md).  The backends reassemble them in their kernel, so the
# XDP decapsulator, which takes whole tunnel packets only, is detached.
# ip_stat HOST FIELD: the Ip: counter FIELD of /proc/net/snmp in HOST
ip_stat() {
	in_ns "$1" cat /proc/net/snmp | "$TAP_PYTHON" -c '
import sys
rows = [l.split() for l in sys.stdin if l.startswith("Ip:")]
print(rows[1][rows[0].index(sys.argv[1])])' "$2"
}

reasm() {
	local b n=0

	for b in "${BACKENDS[@]}"; do
		n=$((n + $(ip_stat "$b" ReasmOKs)))
	done
	echo "$n"
}

addr=$(vip4 4)
in_ns lb sysctl -qw net.ipv4.conf.all.accept_local=1 \
	"net.ipv4.conf.$LB_IF.accept_local=1"
for b in "${BACKENDS[@]}"; do
	in_ns "$b" ip link set dev eth0 xdpdrv off
done
# the kernel's own IPIP decapsulation, where the kernel has one
ipip=1
for b in "${BACKENDS[@]}"; do
	in_ns "$b" ip link set dev tunl0 up >/dev/null 2>&1 || ipip=0
done
if ! out=$(sc_vip "$addr:80/udp" 4 4 hash 3tuple 2>&1); then
	sc_result 1 "UDP VIP $addr:80 hash 3tuple" "$out"
else
	in_ns c1 ip route flush cache >/dev/null 2>&1
	tb0=$(sc_event too_big) st0=$(sc_event too_big_stack) r0=$(reasm)
	in_ns c1 "$SC_X" udp --to "$addr:80" -n 4 --concurrency 1 \
		--bytes 3000 --retries 0 --timeout 2000 -j \
		>"$work/udp.json" 2>"$work/udp.err"
	tb1=$(sc_event too_big) st1=$(sc_event too_big_stack) r1=$(reasm)
	mtu1=$(pmtu c1 "$addr")
	sc_result "$([[ $tb1 == "$tb0" && $((st1 - st0)) -ge 8 && $mtu1 == 1500 ]]; echo $?)" \
		"4 datagrams of 3000 bytes without DF: no fragmentation needed, the fragments tunnelled for the LB's kernel, the client's path MTU stays 1500" \
		"too_big +$((tb1 - tb0)), too_big_stack +$((st1 - st0)) (want >= 8: two full fragments each); client path MTU $mtu1"
	sc_result "$([[ $((r1 - r0)) -ge 4 ]]; echo $?)" \
		"the backends reassembled the tunnel packets the LB's kernel fragmented" \
		"backends' Ip ReasmOKs +$((r1 - r0)) (want >= 4)"
	completed=$(json_get "$work/udp.json" "j['completed']" 2>/dev/null)
	if [[ $ipip -eq 1 ]]; then
		sc_result "$([[ ${completed:-0} == 4 ]]; echo $?)" \
			"every one of the 4 datagrams delivered and echoed whole, the first one included" \
			"completed ${completed:-?} of 4" "$(head -3 "$work/udp.err")"
	else
		tap_skip "every one of the 4 datagrams delivered and echoed whole" \
			"this kernel has no IPIP (CONFIG_NET_IPIP): the backends cannot decapsulate a reassembled tunnel packet"
	fi
fi

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
