#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The data path in generic XDP mode with what generic mode sees that native
# mode does not: GRO aggregates and frames above a page.
#
#   1. GRO on: the LB's eth0 receives TCP through a NAPI with GRO, so
#      generic XDP sees aggregates of many segments, whose IP length is
#      far above the MTU although no packet on the wire was.  Real TCP
#      through a VIP (64 KiB echoes) must complete, and the LB must not
#      answer them "too big" (too_big unchanged once the client's path
#      MTU is right).
#   2. MTU 9000 (LB, b1, the client and their switch ports): an 8000-byte UDP
#      datagram to an IPv6 VIP over GUE over IPv6.  The GUE UDP checksum
#      covers the whole inner packet; a decoder on the backend (a packet
#      socket, RFC 768/8200 checksum computed independently) checks every
#      GUE frame it sees, and that some of them are above 4096 bytes.
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

sc_begin
sc_serve
sc_xlbd

if ! out=$( { xlbctl link detach "$LB_IF" && xlbctl link attach "$LB_IF" generic; } 2>&1); then
	tap_bail "cannot attach in generic mode: $out"
fi

# --- 1. GRO aggregates -------------------------------------------------------
in_ns lb ethtool -K "$LB_IF" gro on >/dev/null 2>&1
gro=$(in_ns lb ethtool -k "$LB_IF" | sed -n 's/^generic-receive-offload: //p')
tap_diag "LB $LB_IF: generic-receive-offload $gro (as the LB left it)"
addr=$(vip4 6)
if ! out=$(sc_vip "$addr:80/tcp" 4 4 2>&1); then
	sc_result 1 "VIP $addr:80/tcp" "$out"
else
	# the client's path MTU settled first: one echo, then the figures
	in_ns c1 "$SC_X" conns --to "$addr:80" -n 2 --concurrency 1 \
		--bytes 65536 --timeout 5000 -j >/dev/null 2>&1
	tb0=$(sc_event too_big)
	in_ns c1 "$SC_X" conns --to "$addr:80" -n 20 --concurrency 4 \
		--bytes 262144 --timeout 10000 -j >"$work/out.json" 2>"$work/err.log"
	tb1=$(sc_event too_big)
	completed=$(json_get "$work/out.json" "j['completed']" 2>/dev/null)
	sc_result "$([[ ${completed:-0} == 20 && $tb1 == "$tb0" ]]; echo $?)" \
		"generic mode, GRO asked for: 20 echoes of 256 KiB complete, no aggregate answered too big" \
		"completed ${completed:-?} of 20; too_big +$((tb1 - tb0)); GRO now $(in_ns lb ethtool -k "$LB_IF" | sed -n 's/^generic-receive-offload: //p')" \
		"$(sc_conns_summary "$work/out.json" 2>&1)" "$(head -3 "$work/err.log")"
fi

# --- 2. above 4096 bytes: the GUE over IPv6 checksum ------------------------
# c1, lb and b1 and their switch ports to 9000.  Native XDP on a veth
# takes no frame above a page: the switch ports' XDP_PASS programs (for
# native XDP_TX, not needed in generic mode) and b1's decapsulator go.
xlbctl set mtu 9000 >/dev/null || tap_bail "set mtu 9000 refused"
in_ns b1 ip link set dev eth0 xdpdrv off
for h in c1 lb b1; do
	ip -n "$NS_SW" link set dev "$h" xdpdrv off
	{ ip -n "$NS_SW" link set dev "$h" mtu 9000 &&
	  in_ns "$h" ip link set dev eth0 mtu 9000; } ||
		tap_bail "cannot set MTU 9000 on $h"
done
addr=$(vip6 5)
if ! out=$(sc_vip "[$addr]:80/udp" 6 1 encap gue 2>&1); then
	sc_result 1 "IPv6 VIP over GUE over IPv6" "$out"
else
	# the decoder: every IPv6/UDP frame to the GUE port on b1's eth0
	in_ns b1 "$TAP_PYTHON" - "$TOPO_GUE_PORT" "$work/gue.txt" >"$work/dec.log" 2>&1 <<-'EOF' &
		import socket, struct, sys, time
		port, out = int(sys.argv[1]), sys.argv[2]
		s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86dd))
		s.bind(("eth0", 0))
		s.settimeout(0.2)
		def csum(b):
		    if len(b) % 2:
		        b += b"\0"
		    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
		    while t >> 16:
		        t = (t & 0xffff) + (t >> 16)
		    return t
		res = []
		end = time.time() + 6
		open(out + ".ready", "w").close()
		while time.time() < end:
		    try:
		        f = s.recv(65535)
		    except socket.timeout:
		        continue
		    ip = f[14:]
		    if len(ip) < 48 or ip[6] != 17:
		        continue
		    plen = struct.unpack("!H", ip[4:6])[0]
		    udp = ip[40:40 + plen]
		    if struct.unpack("!H", udp[2:4])[0] != port:
		        continue
		    pseudo = ip[8:40] + struct.pack("!IxxxB", plen, 17)
		    ok = csum(pseudo + udp) == 0xffff and udp[6:8] != b"\0\0"
		    res.append("%d %s" % (40 + plen, "ok" if ok else "bad"))
		open(out, "w").write("\n".join(res) + "\n")
	EOF
	dec=$!
	for ((i = 0; i < 50; i++)); do
		[[ -f $work/gue.txt.ready ]] && break
		sleep 0.1
	done
	in_ns c1 "$SC_X" udp --to "[$addr]:80" -n 4 --concurrency 1 \
		--bytes 8000 --retries 0 --timeout 1000 -j \
		>"$work/udp.json" 2>"$work/udp.err"
	wait "$dec"
	total=$(grep -c . "$work/gue.txt" 2>/dev/null)
	big=$(awk '$1 > 4096' "$work/gue.txt" 2>/dev/null | grep -c .)
	bad=$(grep -c bad "$work/gue.txt" 2>/dev/null)
	sc_result "$([[ ${big:-0} -ge 4 && ${bad:-1} -eq 0 ]]; echo $?)" \
		"GUE over IPv6 frames above 4096 bytes carry a right UDP checksum (decoded on the backend)" \
		"${total:-0} GUE frames, ${big:-0} above 4096 bytes, ${bad:-?} with a wrong checksum" \
		"sizes: $(tr '\n' ' ' <"$work/gue.txt" 2>/dev/null | cut -c1-200)" \
		"$(head -3 "$work/dec.log")"
fi

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
