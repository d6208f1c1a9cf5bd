#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two LB hosts with the same configuration compute the same answer for
# every flow without talking to each other (ECMP in front of them may send
# a flow to either).  LB A (lb, 10.200.0.2) and LB B (lb2, 10.200.0.3,
# topo_add_lb) each run their own xlbd (different instance names) with the
# same cluster key and the same VIPs and backends, given to B in the
# opposite order (identity comes from names, not insertion order):
#
#   VIP4 10.200.100.1:80/tcp     maglev, IPIP, b1..b4
#   VIP6 [fd00:200:100::1]:80/tcp  ring, GUE, b1..b4
#
#   - per VIP the same fingerprint on both;
#   - `explain` of 2000 flows per VIP: the same primary and secondary;
#   - real TCP connections from fixed client source ports (300 per VIP),
#     once through A and once through B (the client's route for the VIP
#     ranges is switched between the runs): every flow reaches the same
#     backend both times, the one both LBs' explain names, and the
#     second run went through B only (the LBs' packet counters);
#   - teardown removes both LBs' data paths and every namespace.
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

FLOWS=${E2E_FLOWS:-300}
V4=$VIP4:80/tcp
V6=[$VIP6]:80/tcp
LB2_IP4=10.200.0.3
LB2_IP6=fd00:200::3

sc_begin
topo_add_lb lb2 3 >"$work/lb2.log" 2>&1
rc=$?
sc_result $rc "a second LB host lb2 ($LB2_IP4, $LB2_IP6) on the segment" "$(cat "$work/lb2.log")"
[[ $rc -eq 0 ]] || tap_bail "no second LB"
sc_serve

# LB A: the topology's xlbd
sc_xlbd

# LB B: its own xlbd, instance = its namespace (topo_add_lb cleans it up)
LB2_INSTANCE=${TOPO_PREFIX}lb2
LB2_SOCK=$TOPO_DIR/lb2.sock
xlbctl2() { in_ns lb2 "$XLB_BIN/xlbctl" -s "$LB2_SOCK" "$@"; }
mkdir -p "$TOPO_DIR/lb2-state"
topo_bg lb2 xlbd-lb2 "$XLB_BIN/xlbd" --instance "$LB2_INSTANCE" \
	--socket "$LB2_SOCK" --state-dir "$TOPO_DIR/lb2-state"
for ((i = 0; i < 100; i++)); do
	[[ -S $LB2_SOCK ]] && break
	sleep 0.1
done
out=$(xlbctl2 set key "$TOPO_KEY" 2>&1 && xlbctl2 set src4 "$LB2_IP4" 2>&1 &&
	xlbctl2 set src6 "$LB2_IP6" 2>&1 && xlbctl2 link attach eth0 native 2>&1)
sc_result $? "xlbd on lb2 (instance $LB2_INSTANCE), the same key" "$out" \
	"$(grep -v -e '^<6>' -e libbpf "$TOPO_DIR/xlbd-lb2.log" | head -5)"

# The same configuration: A in order b1..b4, B in the opposite order.
out=$(sc_vip "$V4" 4 4 2>&1 && sc_vip "$V6" 6 4 algo ring encap gue 2>&1)
rc=$?
for v in "$V4" "$V6"; do
	opts=()
	[[ $v == "$V6" ]] && opts=(algo ring encap gue)
	out+=$(xlbctl2 vip add "$v" "${opts[@]}" 2>&1) || rc=1
	for i in 3 2 1 0; do
		if [[ $v == "$V4" ]]; then ip=${BACKEND_IP4[i]}; else ip=${BACKEND_IP6[i]}; fi
		out+=$(xlbctl2 backend add "$v" "$ip" name "${BACKENDS[i]}" 2>&1) || rc=1
	done
done
sc_result $rc "the same VIPs and backends on both LBs (B given the backends in reverse order)" "$out"

# fp CTL: "VIP fingerprint" lines
fp() {
	"$@" -j vip show | "$TAP_PYTHON" -c '
import json, sys
for v in sorted(json.load(sys.stdin)["vips"], key=lambda v: v["vip"]):
    print(v["vip"], v["fingerprint"], v["in_table"])'
}
fa=$(fp xlbctl) fb=$(fp xlbctl2)
sc_result "$([[ -n $fa && $fa == "$fb" ]]; echo $?)" "the same fingerprint per VIP on both LBs" \
	"A: $fa" "B: $fb"

# --- explain --------------------------------------------------------------------

for ((p = 20000; p < 22000; p++)); do
	echo "tcp ${CLIENT_IP4[0]}:$p -> $VIP4:80"
	echo "tcp [${CLIENT_IP6[1]}]:$p -> [$VIP6]:80"
done >"$work/flows"
sc_explain "$XLBD_SOCK" <"$work/flows" >"$work/ea.json"
sc_explain "$LB2_SOCK" <"$work/flows" >"$work/eb.json"
out=$("$TAP_PYTHON" - "$work/ea.json" "$work/eb.json" <<-'EOF'
	import json, sys
	a, b = (json.load(open(f)) for f in sys.argv[1:3])
	same = sum(x["primary"] == y["primary"] and x["secondary"] == y["secondary"]
	           and x["primary"] is not None for x, y in zip(a, b))
	print("%d of %d flows: the same primary and secondary on A and B" % (same, len(a)))
	for x, y in zip(a, b):
	    if (x["primary"], x["secondary"]) != (y["primary"], y["secondary"]):
	        print("%s: A %s/%s, B %s/%s" % (x["flow"], x["primary"], x["secondary"],
	                                         y["primary"], y["secondary"]))
	        break
	sys.exit(0 if same == len(a) == len(b) > 0 else 1)
EOF
)
sc_result $? "explain: both LBs pick the same primary and secondary" "$out"

# --- real flows -----------------------------------------------------------------

# vip_packets CTL VIP: the packets the LB forwarded for VIP
vip_packets() {
	local ctl=$1 vip=$2

	"$ctl" -j stats "$vip" | "$TAP_PYTHON" -c '
import json, sys
print(sum(v["packets"] for v in json.load(sys.stdin)["vips"]))'
}

# run CLIENT SRC DST VIP-SPEC FIRST-PORT FAMILY
run_flows() {
	local client=$1 src=$2 dst=$3 vip=$4 first=$5 fam=$6 a0 b0 a1 b1 a2 b2 out rc

	in_ns "$client" ip -"$fam" route replace "$( [[ $fam == 4 ]] && echo "$VIP4_NET" || echo "$VIP6_NET")" \
		via "$( [[ $fam == 4 ]] && echo "$LB_IP4" || echo "$LB_IP6")"
	a0=$(vip_packets xlbctl "$vip") b0=$(vip_packets xlbctl2 "$vip")
	in_ns "$client" "$TAP_PYTHON" "$SC_FLOWS_PY" connect "$src" "$first" "$FLOWS" \
		"$dst" >"$work/via-a.json" 2>&1
	a1=$(vip_packets xlbctl "$vip") b1=$(vip_packets xlbctl2 "$vip")
	in_ns "$client" ip -"$fam" route replace "$( [[ $fam == 4 ]] && echo "$VIP4_NET" || echo "$VIP6_NET")" \
		via "$( [[ $fam == 4 ]] && echo "$LB2_IP4" || echo "$LB2_IP6")"
	in_ns "$client" "$TAP_PYTHON" "$SC_FLOWS_PY" connect "$src" "$first" "$FLOWS" \
		"$dst" >"$work/via-b.json" 2>&1
	a2=$(vip_packets xlbctl "$vip") b2=$(vip_packets xlbctl2 "$vip")
	# back to LB A
	in_ns "$client" ip -"$fam" route replace "$( [[ $fam == 4 ]] && echo "$VIP4_NET" || echo "$VIP6_NET")" \
		via "$( [[ $fam == 4 ]] && echo "$LB_IP4" || echo "$LB_IP6")"
	for ((p = first; p < first + FLOWS; p++)); do
		if [[ $fam == 4 ]]; then echo "tcp $src:$p -> $dst"; else echo "tcp [$src]:$p -> $dst"; fi
	done >"$work/real-flows"
	sc_explain "$XLBD_SOCK" <"$work/real-flows" >"$work/ra.json"
	sc_explain "$LB2_SOCK" <"$work/real-flows" >"$work/rb.json"
	out=$("$TAP_PYTHON" - "$work/via-a.json" "$work/via-b.json" "$work/ra.json" \
		"$work/rb.json" "$first" "$a0 $a1 $a2" "$b0 $b1 $b2" <<-'EOF'
		import collections, json, sys
		va, vb, ea, eb = (json.load(open(f)) for f in sys.argv[1:5])
		first = int(sys.argv[5])
		a = [int(x) for x in sys.argv[6].split()]
		b = [int(x) for x in sys.argv[7].split()]
		ports = sorted(va, key=int)
		errs = [p for p in ports if va[p].startswith("error") or vb[p].startswith("error")]
		same = sum(va[p] == vb[p] for p in ports if p not in errs)
		expl = sum(va[p] == ea[int(p) - first]["primary"] == eb[int(p) - first]["primary"]
		           for p in ports)
		per = collections.Counter(va.values())
		print("%d flows (source ports %s-%s): %d failed; %d reached the same backend "
		      "via A and via B; %d on the primary both LBs' explain names; per backend %s"
		      % (len(ports), ports[0], ports[-1], len(errs), same, expl,
		         dict(sorted(per.items()))))
		print("VIP packets on A: +%d in run A, +%d in run B; on B: +%d in run A, +%d in run B"
		      % (a[1] - a[0], a[2] - a[1], b[1] - b[0], b[2] - b[1]))
		for p in errs[:3]:
		    print("port %s: via A %s, via B %s" % (p, va[p], vb[p]))
		ok = (not errs and same == len(ports) == expl and len(per) == 4
		      and a[1] - a[0] > 0 and a[2] - a[1] == 0
		      and b[1] - b[0] == 0 and b[2] - b[1] > 0)
		sys.exit(0 if ok else 1)
	EOF
	)
	rc=$?
	echo "$out"
	return $rc
}

out=$(run_flows c1 "${CLIENT_IP4[0]}" "$VIP4:80" "$V4" 30000 4 2>&1)
sc_result $? "IPv4: $FLOWS flows with fixed source ports reach the same backend via A and via B" "$out"
out=$(run_flows c2 "${CLIENT_IP6[1]}" "[$VIP6]:80" "$V6" 30000 6 2>&1)
sc_result $? "IPv6: $FLOWS flows with fixed source ports reach the same backend via A and via B" "$out"

# --- teardown -------------------------------------------------------------------

prefix=$TOPO_PREFIX
main_inst=${TOPO_PREFIX%-}
tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
topo_down
rc=$?
left=$(ip netns list | awk -v p="$prefix" 'index($1, p) == 1 { print $1 }'
	ls -d /sys/fs/bpf/xlb/"$main_inst" /sys/fs/bpf/xlb/"$prefix"* \
		/run/xlb/"$main_inst".* /run/xlb/"$prefix"* 2>/dev/null)
sc_result "$([[ $rc -eq 0 && -z $left ]]; echo $?)" \
	"teardown: both LBs' data paths and every namespace are gone" "left: $left"

tap_done
