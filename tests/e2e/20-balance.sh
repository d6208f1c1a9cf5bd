#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xlb end to end: xlbd and xlbctl in the LB namespace, the XDP data path on
# the LB's veth, xlb_decap on four backends, direct server return.
#
# For every VIP family and tunnel (IPv4 and IPv6 VIPs; IPIP, ip6ip6, 4in6,
# 6in4 and GUE over IPv4 and IPv6), $E2E_CONNS (2000) short TCP connections
# from the clients: all must complete with every byte of the echo intact,
# and the count per backend must match the backend's share of the VIP's
# table (`xlbctl -j table show`): Pearson's chi-square test, 3 degrees of
# freedom, rejected at significance ALPHA = 0.0001 per VIP (about 0.1% of
# runs fail by chance over the 10 VIPs).  Then UDP VIPs the same way, large
# transfers that need the LB's "too big" answers (PMTU discovery across the
# tunnel), and 500 long-lived connections that must not break.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh

N=${E2E_CONNS:-2000}
ALPHA=0.0001
X=$XLB_BIN/xlb-traffic

[[ $(id -u) -eq 0 ]] || tap_bail "needs root"
for f in "$X" "$XLB_BIN/xlbd" "$XLB_BIN/xlbctl" "$XLB_BIN/xlb_decap.bpf.o"; do
	[[ -e $f ]] || tap_bail "$f is missing; run 'make'"
done
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT

topo_up >"$work/up.log" 2>&1 || tap_bail "no network: $(cat "$work/up.log")"
topo_serve >"$work/serve.log" 2>&1 || tap_bail "no servers: $(cat "$work/serve.log")"
topo_xlbd_setup >"$work/xlbd.log" 2>&1
rc=$?
tap_result $rc "xlbd in the LB namespace: key, sources, data path on $LB_IF (native)" \
	"$(cat "$work/xlbd.log" "$TOPO_DIR/xlbd.log" 2>/dev/null)"
[[ $rc -eq 0 ]] || tap_bail "no xlbd"
tap_diag "cluster key $TOPO_KEY"

# addr=name for every backend address, for the table's shares
names=()
for i in "${!BACKENDS[@]}"; do
	names+=("${BACKEND_IP4[i]}=${BACKENDS[i]}" "${BACKEND_IP6[i]}=${BACKENDS[i]}")
done

# expect_of VIP: "b1=share,b2=share,..." from the VIP's published table
expect_of() {
	xlbctl -j table show "$1" >"$work/table.json" 2>&1 || return 1
	"$TAP_PYTHON" - "$work/table.json" "${names[@]}" <<-'EOF'
		import json, sys
		t = json.load(open(sys.argv[1]))
		names = dict(a.split("=") for a in sys.argv[2:])
		bs = [b for b in t["backends"] if b["share"] > 0]
		if len(bs) != 4:
		    sys.exit("%d backends in the table, want 4" % len(bs))
		print(",".join("%s=%.6f" % (names[b["addr"]], b["share"]) for b in bs))
	EOF
}

# summary FILE: one line per backend, then the verdict numbers
summary() {
	"$TAP_PYTHON" - "$1" <<-'EOF'
		import json, sys
		j = json.load(open(sys.argv[1]))
		for k, v in sorted(j["backends"].items()):
		    print("%-4s %5d  expected %6.1f" % (k, v["count"], v["expected"] * j["completed"]))
		f = {k: v for k, v in j["failures"].items() if v}
		print("completed %d failed %d %s chi2 %.2f df %d p %.4g in %.2f s" % (
		    j["completed"], j["failed"], f or "", j["chi2"] or -1, j["df"],
		    j["p"], j["seconds"]))
	EOF
}

# vip_up SPEC ENCAP FAMILY: the VIP with the four backends of that family
vip_up() {
	local spec=$1 encap=$2 fam=$3 ip out

	out=$(xlbctl vip add "$spec" encap "$encap" 2>&1) || { echo "$out"; return 1; }
	for i in "${!BACKENDS[@]}"; do
		if [[ $fam == 4 ]]; then ip=${BACKEND_IP4[i]}; else ip=${BACKEND_IP6[i]}; fi
		out=$(xlbctl backend add "$spec" "$ip" 2>&1) || { echo "$out"; return 1; }
	done
}

# balance NAME SPEC TO ENCAP FAMILY CLIENT MODE
balance() {
	local name=$1 spec=$2 to=$3 encap=$4 fam=$5 client=$6 mode=$7 expect out

	if ! out=$(vip_up "$spec" "$encap" "$fam") ||
	   ! expect=$(expect_of "$spec" 2>&1); then
		tap_result 1 "$name: VIP $spec" "$out" "${expect:-}"
		return
	fi
	in_ns "$client" "$X" "$mode" --to "$to" -n "$N" --concurrency 32 \
		--bytes 512 --timeout 3000 --expect "$expect" --alpha "$ALPHA" \
		-j -v >"$work/out.json" 2>"$work/err.log"
	out=$(summary "$work/out.json" 2>&1 || cat "$work/out.json" "$work/err.log")
	tap_result "$([[ $(json_get "$work/out.json" "j['ok']") == True ]]; echo $?)" \
		"$name: $N $mode complete intact, spread matches the table (p >= $ALPHA)" \
		"$out" "$(head -5 "$work/err.log")"
}

tcp_vips=()
# NAME SPEC TO ENCAP BACKEND-FAMILY CLIENT
while IFS='|' read -r name spec to encap fam client; do
	balance "$name" "$spec" "$to" "$encap" "$fam" "$client" conns
	tcp_vips+=("$to")
done <<EOF
IPv4 VIP, IPIP|$VIP4:80/tcp|$VIP4:80|ipip|4|c1
IPv6 VIP, ip6ip6|[$VIP6]:80/tcp|[$VIP6]:80|ipip|6|c2
IPv4 VIP, GUE over IPv4|$(vip4 2):80/tcp|$(vip4 2):80|gue|4|c1
IPv6 VIP, GUE over IPv6|[$(vip6 2)]:80/tcp|[$(vip6 2)]:80|gue|6|c2
IPv4 VIP, 4in6 (IPv6 backends)|$(vip4 3):80/tcp|$(vip4 3):80|ipip|6|c1
IPv6 VIP, 6in4 (IPv4 backends)|[$(vip6 3)]:80/tcp|[$(vip6 3)]:80|ipip|4|c2
IPv4 VIP, GUE over IPv6|$(vip4 4):80/tcp|$(vip4 4):80|gue|6|c1
IPv6 VIP, GUE over IPv4|[$(vip6 4)]:80/tcp|[$(vip6 4)]:80|gue|4|c2
EOF

balance "UDP IPv4 VIP, GUE over IPv4" "$VIP4:80/udp" "$VIP4:80" gue 4 c2 udp
balance "UDP IPv6 VIP, ip6ip6" "[$VIP6]:80/udp" "[$VIP6]:80" ipip 6 c1 udp

# Large transfers: 1500-byte client packets do not fit the tunnel; the LB
# answers "too big" and the clients' PMTU discovery does the rest.
bad=()
for to in "${tcp_vips[@]}"; do
	in_ns c1 "$X" conns --to "$to" -n 20 --concurrency 10 --bytes 65536 \
		--timeout 10000 -j >"$work/out.json" 2>&1
	[[ $(json_get "$work/out.json" "j['completed']") == 20 ]] ||
		bad+=("$to: $(cat "$work/out.json")")
done
xlbctl -j stats >"$work/stats.json" 2>&1
events=$(json_get "$work/stats.json" \
	"' '.join('%s=%s' % kv for kv in j['events'].items() if kv[1])" 2>&1)
tap_result ${#bad[@]} "64 KiB echoes through every TCP VIP (PMTU discovery over the tunnel)" \
	"${bad[@]}" "LB events: $events"
too_big=$(json_get "$work/stats.json" "j['events']['too_big']" 2>&1)
malformed=$(json_get "$work/stats.json" "j['events']['malformed']" 2>&1)
tap_result "$([[ $too_big =~ ^[0-9]+$ && $too_big -gt 0 && $malformed == 0 ]]; echo $?)" \
	"the LB answered 'too big' ($too_big) and saw nothing malformed ($malformed)"

# A malformed frame reaches the LB's data path (the switch does not
# validate IP): an IPv4 header with IHL 3 to the VIP, sent raw by c1,
# is dropped and counted as malformed, once.
lb_mac=$(in_ns lb ip -br link show dev "$LB_IF" | awk '{ print $3 }')
c1_mac=$(in_ns c1 ip -br link show dev eth0 | awk '{ print $3 }')
in_ns c1 "$TAP_PYTHON" -c '
import socket, struct, sys
dst, src, saddr, daddr = sys.argv[1:5]
eth = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", "")) + b"\x08\x00"
udp = struct.pack("!HHHH", 40000, 80, 12, 0) + b"junk"
ip = struct.pack("!BBHHHBBH4s4s", 0x43, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                 socket.inet_aton(saddr), socket.inet_aton(daddr))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
s.send(eth + ip + udp)' "$lb_mac" "$c1_mac" "${CLIENT_IP4[0]}" "$VIP4" \
	>"$work/raw.log" 2>&1
rc=$?
m1=""
for _ in $(seq 20); do	# the frame's way through the switch: at most 2 s
	xlbctl -j stats >"$work/stats.json" 2>&1
	m1=$(json_get "$work/stats.json" "j['events']['malformed']" 2>&1)
	[[ $m1 == "$((malformed + 1))" ]] && break
	sleep 0.1
done
tap_result "$([[ $rc -eq 0 && $m1 == "$((malformed + 1))" ]]; echo $?)" \
	"a raw IPv4 header with IHL 3 to $VIP4 reaches the data path: malformed $malformed -> $m1" \
	"$(cat "$work/raw.log")"

# Long-lived connections, a message every 100 ms each, for 3 seconds.
in_ns c1 "$X" hold --to "$VIP4:80" -n 500 --duration 3 --interval 100 -j \
	>"$work/hold.json" 2>"$work/hold.log"
out=$("$TAP_PYTHON" -c '
import json, sys
j = json.load(open(sys.argv[1]))
print("established %d broken %d sends %d replies %d per backend %s" % (
    j["established"], j["broken"], j["sends"], j["replies"],
    {k: v["connections"] for k, v in j["backends"].items()}))' "$work/hold.json" 2>&1)
tap_result "$([[ $(json_get "$work/hold.json" "j['ok']") == True ]]; echo $?)" \
	"500 long-lived connections through the LB for 3 s, none broken" \
	"$out" "$(tail -3 "$work/hold.log")"

# A ping to a VIP address is answered by the LB's data path (icmp_echo),
# IPv4 and IPv6: one echo each (xlb-traffic ping -c 1 tries once), answered
# and counted.
echo_count() {
	xlbctl -j stats >"$work/stats.json" 2>&1 &&
		json_get "$work/stats.json" "j['events']['icmp_echo']"
}
e0=$(echo_count)
in_ns c1 "$X" ping "$VIP4" -c 1 -W 2000 >"$work/ping.log" 2>&1
rc4=$?
in_ns c2 "$X" ping "$VIP6" -c 1 -W 2000 >>"$work/ping.log" 2>&1
rc6=$?
e1=$(echo_count)
tap_result "$([[ $rc4 -eq 0 && $rc6 -eq 0 && $e0 =~ ^[0-9]+$ &&
		 $e1 =~ ^[0-9]+$ && $((e1 - e0)) -eq 2 ]]; echo $?)" \
	"ping $VIP4 and $VIP6: answered by the LB (icmp_echo +2)" \
	"exit status $rc4, $rc6; icmp_echo $e0 -> $e1" "$(cat "$work/ping.log")"

tap_done
