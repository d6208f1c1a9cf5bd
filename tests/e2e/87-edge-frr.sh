#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The edge with FRR as the LB hosts' BGP speaker (docs/edge.md): two LB
# hosts behind the router of tests/e2e/lib/edge.sh (bird2, ECMP, BFD
# 100 ms x 3), each running xlbd in cluster mode with `set announce table
# 100` and FRR (zebra, bfdd, bgpd; EDGE_SPEAKER=frr) with dist/frr-xlb.conf
# as shipped, its addresses filled in.  Issue 15's scenario 1 and the
# announcements with FRR:
#   - every LB host's FRR has the VIP from the kernel table (`redistribute
#     table`) and a BGP session with BFD up to the router, at 100 ms x 3;
#     the router's BFD sessions are up;
#   - the router has one next hop per LB host (ECMP); 1500 connections
#     through it all complete, each LB host carries a share (its counters);
#   - withdraw and announce: `host drain` on lb2 removes its next hop from
#     the router, `host undrain` brings it back, a VIP without a backend
#     is withdrawn by both hosts and announced again when one returns;
#   - BFD: lb2 lost (link down, FRR and xlbd killed): the router drops its
#     next hop, and its session's last error is "BFD session down" (the
#     time is printed; the BGP hold time is 9 s).
# Figures: "# edge-frr: ..." lines.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

CONNS=${E2E_EDGE_CONNS:-1500}
V=$VIP4:80/tcp

command -v etcd >/dev/null || tap_bail "etcd is missing; run 'make deps'"
command -v bird >/dev/null || tap_bail "bird2 is missing; run 'make deps'"
[[ -x /usr/lib/frr/bgpd ]] || tap_bail "frr is missing; run 'make deps'"
EDGE_SPEAKER=frr sc_begin --edge 2 --backends 3 --clients 1
sc_serve
HOSTS=("${EDGE_HOSTS[@]}")
both="${EDGE_ADDR[lb]} ${EDGE_ADDR[lb2]} "
one="${EDGE_ADDR[lb]} "

sc_result 0 "edge with FRR: router (bird2), LB hosts ${HOSTS[*]} with xlbd + FRR, BGP sessions established"

TOPO_KEY=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
out=$(xlbctl_on lb set key "$TOPO_KEY" 2>&1 && xlbctl_on lb2 vip add "$V" encap gue 2>&1)
rc=$?
for i in 0 1 2; do
	out+=$(xlbctl_on lb backend add "$V" "${BACKEND_IP4[i]}" \
		name "${BACKENDS[i]}" 2>&1) || rc=1
done
edge_wait_nexthops "$VIP4" 2 || rc=1
sc_result $rc "a VIP with three backends through etcd: the router has a next hop per LB host ($(edge_nexthops "$VIP4"))" \
	"$out" "$(edge_birdc rt show route 2>&1 | tail -4)"
[[ $rc -eq 0 ]] || tap_bail "no announced VIP"

# --- what FRR has: the VIP from the table, sessions with BFD ---------------

for h in "${HOSTS[@]}"; do
	out=$(edge_vtysh "$h" -c 'show bgp ipv4 unicast json' 2>&1)
	"$TAP_PYTHON" -c '
import json, sys
r = json.loads(sys.argv[1])["routes"]
sys.exit(0 if sys.argv[2] + "/32" in r else 1)' "$out" "$VIP4"
	sc_result $? "$h: FRR's BGP table has $VIP4/32 from table $EDGE_TABLE" \
		"$(edge_vtysh "$h" -c 'show bgp ipv4 unicast' 2>&1)"
	out=$(edge_vtysh "$h" -c 'show bfd peers json' 2>&1)
	"$TAP_PYTHON" -c '
import json, sys
p = [p for p in json.loads(sys.argv[1]) if p["peer"] == sys.argv[2]]
sys.exit(0 if p and p[0]["status"] == "up" and
         p[0]["receive-interval"] == 100 and p[0]["transmit-interval"] == 100 and
         p[0]["detect-multiplier"] == 3 else 1)' "$out" "$ROUTER_IP4"
	sc_result $? "$h: FRR's BFD session to the router is up, 100 ms x 3" "$out"
done
up=$(edge_birdc rt show bfd sessions 2>&1 | grep -c ' Up ')
[[ $up -eq 2 ]]
sc_result $? "the router's BFD sessions to both LB hosts are up ($up)" \
	"$(edge_birdc rt show bfd sessions 2>&1)"

# --- 1: spread ------------------------------------------------------------

edge_counters "$V" >"$work/c0"
sc_conns c1 "$VIP4:80" "$CONNS" "$work/s1"
r1=$?
edge_counters "$V" >"$work/c1"
spread=$(edge_spread "$work/c0" "$work/c1" "$CONNS" "$work/s1")
rc=$?
[[ $r1 -eq 0 ]] || rc=1
echo "# edge-frr: 1 spread: $CONNS connections: $spread"
sc_result $rc "1: $CONNS connections through the router: all complete, both LB hosts carry a share" \
	"$spread" "$(sc_conns_summary "$work/s1")"

# --- withdraw and announce ------------------------------------------------

t0=$(now_ms)
out=$(xlbctl_on lb2 host drain 2>&1)
rc=$?
ms=$(edge_nexthops_time "$t0" "$VIP4" "$one") || rc=1
echo "# edge-frr: drain: lb2 withdrawn -> the router without its next hop in $ms ms"
sc_result $rc "host drain on lb2: FRR withdraws, the router drops its next hop ($ms ms)" \
	"$out" "$(edge_vtysh lb2 -c 'show bgp ipv4 unicast' 2>&1)"
t0=$(now_ms)
out=$(xlbctl_on lb2 host undrain 2>&1)
rc=$?
ms=$(edge_nexthops_time "$t0" "$VIP4" "$both") || rc=1
echo "# edge-frr: undrain: next hop back in $ms ms"
sc_result $rc "host undrain on lb2: the router has its next hop again ($ms ms)" "$out"

# a VIP without a usable backend is withdrawn by every host
out=$(for i in 0 1 2; do
	xlbctl_on lb backend set "$V" "${BACKEND_IP4[i]}" state down 2>&1 || echo FAILED
done)
ms=$(edge_nexthops_time "$(now_ms)" "$VIP4" "") || out+=" FAILED"
[[ $out != *FAILED* ]]
sc_result $? "every backend down: both hosts withdraw, the router has no route ($ms ms)" "$out"
out=$(xlbctl_on lb2 backend set "$V" "${BACKEND_IP4[0]}" state active 2>&1)
rc=$?
ms=$(edge_nexthops_time "$(now_ms)" "$VIP4" "$both") || rc=1
sc_result $rc "one backend up again: both hosts announce, two next hops ($ms ms)" "$out"
for i in 1 2; do
	xlbctl_on lb backend set "$V" "${BACKEND_IP4[i]}" state active >/dev/null 2>&1
done

# --- BFD: an LB host lost -------------------------------------------------

edge_watch_nexthops "$VIP4" "$one" "$work/rerouted" &
wpid=$!
edge_host_lose lb2 >"$work/lose.log" 2>&1
rc=$?
wait $wpid || rc=1
if [[ -s $work/rerouted ]]; then
	ms=$(($(cat "$work/rerouted") - $(cat "$TOPO_DIR/lost-at")))
else
	ms="never (next hops $(edge_nexthops "$VIP4"))"
	rc=1
fi
why=$(edge_birdc rt show protocols all lb2 2>&1 | grep -i 'error')
[[ $why == *"BFD session down"* ]] || rc=1
echo "# edge-frr: lb2 lost (link down, FRR and xlbd killed) -> router rerouted in $ms ms (BFD 100 ms x 3; BGP hold time 9 s)"
sc_result $rc "lb2 lost: the router's BFD notices and drops its next hop ($ms ms)" \
	"router: ${why:-no error}" "$(cat "$work/lose.log")"
sc_conns c1 "$VIP4:80" 300 "$work/s2"
sc_result $? "after the loss: 300 connections through lb alone, all complete" \
	"$(sc_conns_summary "$work/s2")"

topo_down >/dev/null 2>&1
left=$(ip netns list | grep -c "^$TOPO_PREFIX")
[[ $left -eq 0 ]]
sc_result $? "teardown removed the router, the LB hosts, FRR, etcd and every namespace" "$left left"
tap_diag "took $((($(now_ms) - t_start) / 1000)) s"
tap_done
