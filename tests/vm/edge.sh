#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Issue 15's scenario 5 with the second chance: an LB host lost while the
# table changes, backends running xlb_redirect (kmod/), in a qemu guest of
# each kernel the tier boots (tests/vm/lib/kernels.sh; the module needs a
# kernel it was built for, tests/vm/lib/kmod.sh).  tests/e2e/86-edge.sh
# runs the same scenario on this host with the backends' plain
# decapsulation, where the moved share breaks.
#
# The smallest faithful version of the edge, in the test network of
# tests/e2e/lib/topo.sh (no bird2, no etcd: what the scenario needs of them
# is that flows move between LB hosts computing the same answer):
#   - two LB hosts, lb and lb2 (topo_add_lb), each with its own xlbd and
#     data path, the same key, VIP 10.200.100.1:80/tcp (Maglev, GUE) with
#     b1..b3, given to both;
#   - ECMP in front of them: c1's route to the VIPs has a next hop per LB
#     host, with fib_multipath_hash_policy=1 (the 4-tuple picks the host,
#     as the router of the edge does); losing lb2 is its link going down
#     and its next hop removed from that route (what BFD makes the router
#     do), then its xlbd stopped and its data path removed;
#   - backends b1..b4 with xlb_redirect (allowing the segment's sources),
#     no decapsulation program.
# HOLD connections held from c1, b4 added on both LB hosts (their
# connection tables keep their own flows), then lb2 lost: its flows reach
# lb, which picks by the new table; those whose new primary is not their
# backend land on a backend that does not know them, and the module
# forwards them to the slot's secondary, their old backend.  Expected:
# the flows tests/e2e/lib/flows.py fate predicts (moved, another backend
# picked) are many (the scenario has teeth), the module forwarded packets,
# and 0 broken except, per flow, those whose secondary is not their old
# backend either (Maglev gives the old owner as secondary for nearly every
# slot a join takes; such a flow is printed).  One "# EDGE" line of
# figures.
#
# Run as root on the host: tests/vm/edge.sh (XLB_VM_KERNELS=6.1 for one
# kernel; make test-vm builds what it needs).  The guest's whole output
# stays in build/vm/edge-SERIES.log.
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}
HOLD=${XLB_VM_EDGE_HOLD:-200}

# --- in the guest -------------------------------------------------------------
if [[ "${1:-}" == --guest ]]; then
	. tests/lib/tap.sh
	echo "# guest kernel: $(uname -r)"
	# bash's <(...) and the test libraries' `done < <(...)` need /dev/fd
	[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
	modprobe -a udp_tunnel ip6_udp_tunnel veth bridge
	insmod "$O/vm/kmod-$(uname -r)/kmod/xlb_redirect.ko" ||
		tap_bail "the module does not load"
	. tests/e2e/lib/topo.sh
	. tests/e2e/lib/scenario.sh
	V=$VIP4:80/tcp
	LB2_IP4=10.200.0.3

	sc_begin --backends 4 --no-decap
	out=$(topo_add_lb lb2 3 2>&1)
	sc_result $? "a second LB host lb2 ($LB2_IP4)" "$out"
	for b in "${BACKENDS[@]}"; do
		in_ns "$b" sh -c 'printf "allow 10.200.0.0/24 fd00:200::/64\nenable\n" \
			>/proc/net/xlb_redirect' || tap_bail "xlb_redirect on $b"
	done
	sc_serve
	sc_xlbd
	LB2_SOCK=$TOPO_DIR/lb2.sock
	mkdir -p "$TOPO_DIR/lb2-state"
	topo_bg lb2 xlbd-lb2 "$XLB_BIN/xlbd" --instance "${TOPO_PREFIX}lb2" \
		--socket "$LB2_SOCK" --state-dir "$TOPO_DIR/lb2-state"
	LB2_PID=$TOPO_LAST_PID
	for ((i = 0; i < 300; i++)); do
		[[ -S $LB2_SOCK ]] && break
		sleep 0.1
	done
	xlbctl2() { in_ns lb2 "$XLB_BIN/xlbctl" -s "$LB2_SOCK" "$@"; }
	out=$(xlbctl2 set key "$TOPO_KEY" 2>&1 && xlbctl2 set src4 "$LB2_IP4" 2>&1 &&
		xlbctl2 link attach eth0 native 2>&1 &&
		sc_vip "$V" 4 3 encap gue 2>&1 &&
		xlbctl2 vip add "$V" encap gue 2>&1)
	rc=$?
	for i in 0 1 2; do
		out+=$(xlbctl2 backend add "$V" "${BACKEND_IP4[i]}" \
			name "${BACKENDS[i]}" 2>&1) || rc=1
	done
	fa=$(xlbctl -j vip show "$V" | "$TAP_PYTHON" -c \
		'import json, sys; print(json.load(sys.stdin)["vips"][0]["fingerprint"])')
	fb=$(xlbctl2 -j vip show "$V" | "$TAP_PYTHON" -c \
		'import json, sys; print(json.load(sys.stdin)["vips"][0]["fingerprint"])')
	[[ -n $fa && $fa == "$fb" ]] || rc=1
	sc_result $rc "lb and lb2: the same key, $V with b1..b3, one fingerprint ($fa, $fb)" "$out"
	[[ $rc -eq 0 ]] || tap_bail "no LB hosts"

	# ECMP over both LB hosts, by the 4-tuple
	in_ns c1 sysctl -qw net.ipv4.fib_multipath_hash_policy=1 &&
		in_ns c1 ip route replace "$VIP4_NET" \
			nexthop via "$LB_IP4" nexthop via "$LB2_IP4"
	sc_result $? "c1 routes the VIPs over lb and lb2 (ECMP, L4 hash)" \
		"$(in_ns c1 ip route show "$VIP4_NET")"

	# explain_all TAG HOST=SOCKET...: each host's explain of the held flows
	explain_all() {
		local tag=$1 a

		shift
		for a in "$@"; do
			sc_explain "${a#*=}" <"$work/flows" >"$work/ex-$tag-${a%%=*}.json" ||
				return 1
		done
	}
	# "lb N lb2 N": the held flows whose freshest entry is on each host
	carriers() {
		"$TAP_PYTHON" - "$work/ex-0-lb.json" "$work/ex-0-lb2.json" <<-'EOF'
			import json, sys
			a, b = (json.load(open(p)) for p in sys.argv[1:3])
			age = lambda e: e["ct_age_ms"] if e["ct_valid"] else float("inf")
			n = sum(age(x) < age(y) for x, y in zip(a, b))
			m = sum(age(y) < age(x) for x, y in zip(a, b))
			print(n, m)
		EOF
	}

	sc_hold_start v c1 "$VIP4:80" "$HOLD" --duration 300 --interval 1000 \
		>"$work/hold.log" 2>&1
	rc=$?
	sleep 2		# every connection sent since it was established
	sc_held_flows c1 "$VIP4" >"$work/flows"
	explain_all 0 lb="$XLBD_SOCK" lb2="$LB2_SOCK" || rc=1
	read -r n1 n2 < <(carriers)
	[[ $n1 -gt 0 && $n2 -gt 0 ]] || rc=1
	sc_result $rc "$HOLD connections held from c1: $n1 through lb, $n2 through lb2" \
		"$(cat "$work/hold.log")"
	[[ $rc -eq 0 ]] || tap_bail "no held connections"

	sc_hold_phase v change-lose
	out=$(xlbctl backend add "$V" "${BACKEND_IP4[3]}" name "${BACKENDS[3]}" 2>&1 &&
		xlbctl2 backend add "$V" "${BACKEND_IP4[3]}" name "${BACKENDS[3]}" 2>&1)
	rc=$?
	n1=$(sc_in_table "$V" 4 xlbctl) || rc=1
	n2=$(sc_in_table "$V" 4 xlbctl2) || rc=1
	out+=" (backends in the live tables: lb $n1, lb2 $n2)"
	explain_all 1 lb="$XLBD_SOCK" lb2="$LB2_SOCK" || rc=1
	sc_result $rc "${BACKENDS[3]} joins on both LB hosts under the held connections" "$out"

	fwd() {
		local b n=0 c

		for b in "${BACKENDS[@]}"; do
			c=$(in_ns "$b" awk '$1 == "forwarded" { print $2 }' /proc/net/xlb_redirect)
			n=$((n + ${c:-0}))
		done
		echo "$n"
	}
	f0=$(fwd)
	in_ns lb2 ip link set eth0 down &&
		in_ns c1 ip route replace "$VIP4_NET" via "$LB_IP4"
	rc=$?
	topo_stop "$LB2_PID" 10
	in_ns lb2 "$XLB_BIN/xlbd" --cleanup --instance "${TOPO_PREFIX}lb2" \
		--state-dir "$TOPO_DIR/lb2-state" >>"$TOPO_DIR/xlbd-lb2.log" 2>&1 || rc=1
	sleep 5		# every held connection sent at least four times since
	explain_all 2 lb="$XLBD_SOCK" || rc=1
	echo "[]" >"$work/ex-2-lb2.json"	# lb2 is gone
	sc_held_flows c1 "$VIP4" >"$work/alive"
	f1=$(fwd)
	"$TAP_PYTHON" "$SC_FLOWS_PY" fate "$work/alive" \
		lb="$work/ex-0-lb.json:$work/ex-1-lb.json:$work/ex-2-lb.json" \
		lb2="$work/ex-0-lb2.json:$work/ex-1-lb2.json:$work/ex-2-lb2.json" \
		>"$work/fate.json" || rc=1
	sc_result $rc "lb2 lost: link down, next hop gone, xlbd stopped, data path removed"

	read -r n moved changed pred unsave broken < <("$TAP_PYTHON" -c '
import json, sys
f = json.load(open(sys.argv[1]))
print(f["flows"], f["moved"], f["changed"], len(f["predicted"]),
      len(f["unsaveable"]), len(f["broken"]))' "$work/fate.json")
	echo "# EDGE lb2 lost while b4 joined, xlb_redirect on the backends: $moved of $n held flows changed LB host; $changed of $n have a new primary; $pred moved to a backend that does not know them (broken with plain decapsulation); $broken broken (expected $unsave: no second chance for them either); $((f1 - f0)) packets forwarded by the module"
	[[ $pred -gt 0 && $moved -gt 0 ]]
	sc_result $? "$pred of the $moved flows that changed LB host reach a backend that does not know them"
	[[ $((f1 - f0)) -gt 0 ]]
	sc_result $? "the backends forwarded their packets to the old backend ($((f1 - f0)) packets)"
	"$TAP_PYTHON" -c '
import json, sys
f = json.load(open(sys.argv[1]))
sys.exit(0 if sorted(f["broken"]) == sorted(f["unsaveable"]) and
         not f["lost"] else 1)' "$work/fate.json"
	sc_result $? "$broken of $HOLD held connections broken: only those without a second chance ($unsave)" \
		"broken flows: $(json_get "$work/fate.json" '" ".join(j["broken"]) or "none"')" \
		"without a second chance: $(json_get "$work/fate.json" '" ".join(j["unsaveable"]) or "none"')"
	sc_hold_stop v >"$work/stop.log" 2>&1
	sc_result $? "the held connections stopped with a result" "$(cat "$work/stop.log")" \
		"$(sc_hold_summary v 2>&1)"
	b=$(json_get "$TOPO_DIR/hold-v.json" 'j["broken"]')
	[[ $b == "$unsave" ]]
	sc_result $? "the hold saw $b broken" "$(sc_hold_summary v)"
	topo_down >/dev/null 2>&1
	left=$(ip netns list | grep -c "^$TOPO_TAG")
	[[ $left -eq 0 ]]
	sc_result $? "teardown removed every namespace" "$left left"
	echo "# xdp pins left: $(ls /sys/fs/bpf/xdp 2>/dev/null | tr '\n' ' ')"
	tap_done
	exit
fi

# --- on the host --------------------------------------------------------------
TIMEOUT=${XLB_VM_TIMEOUT:-1200}
. tests/lib/tap.sh
. tests/vm/lib/pins.sh
. tests/vm/lib/kernels.sh
. tests/vm/lib/kmod.sh

# The module built for each kernel here, then one guest per kernel, side
# by side (each keeps one host core busy), then each guest's cases.
ran=()
for s in "${VM_SERIES[@]}"; do
	if ! vm_kmod_build "$s"; then
		tap_not_ok "$s: the module for the guest's kernel ($VM_KMOD_WHY)"
		grep -iE 'warning|error' <<<"$VM_KMOD_OUT" | head -n 20 | sed 's/^/#   /'
		continue
	fi
	ran+=("$s")
	rm -f "$O/vm/edge-$s.rc"
	(
		t0=$(date +%s)
		tools/vm/run.sh --kernel "$s" --timeout "$TIMEOUT" -- \
			tests/vm/edge.sh --guest >"$O/vm/edge-$s.log" 2>&1
		echo "$? $(($(date +%s) - t0))" >"$O/vm/edge-$s.rc"
	) &
done
wait
for s in "${ran[@]}"; do
	log="$O/vm/edge-$s.log"
	read -r rc took <"$O/vm/edge-$s.rc"
	echo "# vm: $s: guest boot and run took ${took:-?} s (status ${rc:-?})"
	# the guest's cases, each prefixed with the kernel
	while IFS= read -r line; do
		case "$line" in
		"ok "[0-9]*)
			c=${line#ok }; tap_ok "$s: ${c#* - }" ;;
		"not ok "[0-9]*)
			c=${line#not ok }; tap_not_ok "$s: ${c#* - }" ;;
		"Bail out!"*)
			tap_not_ok "$s: ${line}" ;;
		"#   "*|"# EDGE"*|"# guest kernel"*)
			echo "$line" ;;
		esac
	done <"$log"
	grep -q '^1\.\.[0-9]' "$log" ||
		tap_not_ok "$s: the guest's scenario finished (status ${rc:-?}; whole output in $log)"
	xdp_pins_left "$s" "$log"
done
tap_done
