#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# QUIC connection-ID routing end to end (docs/quic.md): xlbd, the XDP
# program, decapsulation and sockets on the backends, with QUIC-shaped
# datagrams (tests/e2e/lib/quic.py; no QUIC stack is packaged for Debian
# 12).  Every backend answers with its name.  For each of $E2E_QUIC (40)
# connections per family, c1 sends an Initial (long header) from a fresh
# port; then short headers carrying the answering backend's server ID come
# from another address of c1 and from c1's own on fresh ports, as after
# NAT rebinding or migration.
#
#   - quic VIP: every Initial and short header is answered, every short
#     header by the backend its server ID names (0 misrouted); unknown
#     IDs are answered too (by the table); the VIP's counters count each
#     outcome.
#   - the same traffic to a VIP not marked quic goes by the 5-tuple: most
#     moved short headers reach another backend (what the feature is for).
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

N=${E2E_QUIC:-40}
MOVES=3
QPY=$XLB_ROOT/tests/e2e/lib/quic.py
C1_MOVED4=10.200.0.31 C1_MOVED6=fd00:200::31

sc_begin
sc_xlbd

serve_all() {
	local i host addr port ready
	for ((i = 0; i < ${#BACKENDS[@]}; i++)); do
		host=${BACKENDS[i]}
		for addr in "$VIP4" "$VIP6"; do
			for port in 443 444; do
				ready=$TOPO_DIR/q-$host-${addr//:/_}-$port.ready
				topo_bg "$host" "q-$host-${addr//:/_}-$port" "$TAP_PYTHON" \
					"$QPY" serve "$host" "$addr" "$port" "$ready"
			done
		done
	done
	for ((i = 0; i < 50; i++)); do
		[[ $(ls "$TOPO_DIR"/q-*.ready 2>/dev/null | wc -l) -eq $((${#BACKENDS[@]} * 4)) ]] &&
			return 0
		sleep 0.1
	done
	echo "servers did not start"; return 1
}
out=$(serve_all 2>&1)
sc_result $? "a QUIC-shaped UDP server on every backend, VIP ports 443 and 444" "$out"

out=$(in_ns c1 bash -e -c "
	ip addr add $C1_MOVED4/24 dev eth0
	ip addr add $C1_MOVED6/64 dev eth0 nodad
" 2>&1)
sc_result $? "c1 has a second address to move to" "$out"

# server IDs: 3 octets, rotation 1, 4 octets of nonce
sids='{"b1": "0000b1", "b2": "0000b2", "b3": "0000b3", "b4": "0000b4"}'
setup() {
	local vip i
	for vip in "$VIP4:443/udp" "[$VIP6]:443/udp"; do
		xlbctl vip add "$vip" quic on quic-cr 1 quic-sid-len 3 quic-nonce-len 4 || return 1
		for ((i = 0; i < 4; i++)); do
			if [[ $vip == "$VIP4"* ]]; then ip=${BACKEND_IP4[i]}; else ip=${BACKEND_IP6[i]}; fi
			xlbctl backend add "$vip" "$ip" name "b$((i + 1))" quic-id "0000b$((i + 1))" || return 1
		done
	done
	sc_vip "$VIP4:444/udp" 4 4 && sc_vip "[$VIP6]:444/udp" 6 4
}
out=$(setup 2>&1)
sc_result $? "quic VIPs on port 443 (backends b1..b4 with server IDs 0000b1..0000b4), plain ones on 444" "$out"

# plan FAMILY: the JSON plan of quic.py
plan() {
	local a m
	if [[ $1 == 4 ]]; then a=${CLIENT_IP4[0]} m=$C1_MOVED4; else a=${CLIENT_IP6[0]} m=$C1_MOVED6; fi
	printf '{"cr": 1, "sid": %s, "nonce_len": 4, "conns": %d, "src_initial": ["%s"], "src_moved": ["%s", "%s"], "moves": %d, "unknown": %d}' \
		"$sids" "$N" "$a" "$m" "$a" "$MOVES" "$N"
}

stats() {	# stats VIP FIELD: a counter of the VIP's quic stats
	sc_vip_field "$1" "v['quic']['stats']['$2']"
}

for fam in 4 6; do
	if [[ $fam == 4 ]]; then vip=$VIP4 vq="$VIP4:443/udp"; else vip=$VIP6 vq="[$VIP6]:443/udp"; fi
	b0=$(stats "$vq" by_cid) l0=$(stats "$vq" long_header) u0=$(stats "$vq" unknown_id)
	in_ns c1 timeout 120 "$TAP_PYTHON" "$QPY" run "$vip" 443 "$(plan $fam)" \
		>"$work/q$fam.json" 2>"$work/q$fam.err"
	out=$(cat "$work/q$fam.json" "$work/q$fam.err")
	sc_result "$([[ $(json_get "$work/q$fam.json" "j['initials'] == $N and j['initial_lost'] == 0 and j['moved'] == $N * 2 * $MOVES and j['moved_lost'] == 0 and j['misrouted'] == 0 and len(j['per_backend']) >= 2") == True ]]; echo $?)" \
		"IPv$fam quic VIP: $N Initials answered, all $((N * 2 * MOVES)) moved short headers reached the backend their server ID names" "$out"
	sc_result "$([[ $(json_get "$work/q$fam.json" "j['unknown'] == $N and j['unknown_lost'] == 0") == True ]]; echo $?)" \
		"IPv$fam quic VIP: $N short headers of unknown server IDs answered (by the table)" "$out"
	b1=$(stats "$vq" by_cid) l1=$(stats "$vq" long_header) u1=$(stats "$vq" unknown_id)
	sc_result "$([[ $((b1 - b0)) -ge $((N * 2 * MOVES)) && $((l1 - l0)) -ge $N && $((u1 - u0)) -ge $N && $((b1 - b0)) -le $((3 * N * 2 * MOVES)) ]]; echo $?)" \
		"IPv$fam quic VIP counted by outcome: by_cid $((b1 - b0)), long_header $((l1 - l0)), unknown_id $((u1 - u0))" \
		"$(xlbctl vip show "$vq" | grep quic)"
	m=$(in_ns lb curl -s http://127.0.0.1:9437/metrics |
		grep -F "xlb_vip_quic_packets_total{vip=\"$vq\",outcome=\"by_cid\"}")
	sc_result "$([[ ${m##* } -eq $b1 ]]; echo $?)" \
		"IPv$fam quic VIP: /metrics says the same by_cid" "$m"

	in_ns c1 timeout 120 "$TAP_PYTHON" "$QPY" run "$vip" 444 "$(plan $fam)" \
		>"$work/p$fam.json" 2>"$work/p$fam.err"
	out=$(cat "$work/p$fam.json" "$work/p$fam.err")
	sc_result "$([[ $(json_get "$work/p$fam.json" "j['moved_lost'] == 0 and j['misrouted'] > j['moved'] // 4") == True ]]; echo $?)" \
		"IPv$fam plain VIP: the same moved datagrams go by the 5-tuple, most to another backend" "$out"
done

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
