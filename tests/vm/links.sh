#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The data path on a bond and on a VLAN, in a qemu guest: this host's
# kernel has no bonding and no 8021q (no loadable modules), Debian's
# kernels have both.  The guest runs tests/e2e/87-bond.sh (bond0,
# active-backup, native XDP on the bond, a failover under held
# connections) and tests/e2e/87-vlan.sh (clients and backends on VLAN 100,
# the LB on a VLAN device over a trunk, generic XDP), $E2E_CONNS (100)
# connections a client and $E2E_HOLD (50) held ones each, then checks
# that no namespace and no XDP dispatcher is left.
#
# Both kernels, side by side, as the tier's other scripts: under software
# emulation a guest takes about two minutes for both scenarios, one core
# each, so one kernel alone would leave the other core idle for as long.
# Every guest line
# "ok N - NAME" / "not ok N - NAME" becomes a TAP case here, prefixed with
# the kernel and the scenario; the guest's whole output stays in
# build/vm/links-SERIES.log.  Run as root on the host.
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}

# --- in the guest -------------------------------------------------------------
if [[ "${1:-}" == --guest ]]; then
	echo "# guest kernel: $(uname -r)"
	# bash's <(...) and the test libraries' `done < <(...)` need /dev/fd
	[[ -e /dev/fd ]] || ln -s /proc/self/fd /dev/fd
	modprobe -a udp_tunnel ip6_udp_tunnel veth bridge bonding 8021q
	for t in bond vlan; do
		echo "# === $t"
		E2E_CONNS=${E2E_CONNS:-100} E2E_HOLD=${E2E_HOLD:-50} \
			tests/e2e/87-$t.sh 2>&1 |
			sed "s/^\\(not ok\\|ok\\) [0-9]* - /\\1 - $t: /; s/^1\\.\\.\\([0-9]*\\)\$/# $t plan \\1/"
	done
	echo "# namespaces left: $(ip netns list | grep -c '^xe2e')"
	echo "# xdp pins left: $(ls /sys/fs/bpf/xdp 2>/dev/null | tr '\n' ' ')"
	exit 0
fi

TIMEOUT=${XLB_VM_TIMEOUT:-900}
. tests/lib/tap.sh
. tests/vm/lib/pins.sh
. tests/vm/lib/kernels.sh

mkdir -p "$O/vm"
for s in "${VM_SERIES[@]}"; do
	rm -f "$O/vm/links-$s.rc"
	(
		t0=$(date +%s)
		tools/vm/run.sh --kernel "$s" --timeout "$TIMEOUT" -- \
			tests/vm/links.sh --guest >"$O/vm/links-$s.log" 2>&1
		echo "$? $(($(date +%s) - t0))" >"$O/vm/links-$s.rc"
	) &
done
wait
for s in "${VM_SERIES[@]}"; do
	log="$O/vm/links-$s.log"
	read -r rc took <"$O/vm/links-$s.rc"
	echo "# vm: $s: guest boot and run took ${took:-?} s (status ${rc:-?})"
	while IFS= read -r line; do
		case "$line" in
		"ok - "*"# SKIP"*)
			tap_not_ok "$s: ${line#ok - } (the guest's kernel should have it)" ;;
		"ok - "*)
			tap_ok "$s: ${line#ok - }" ;;
		"not ok - "*)
			tap_not_ok "$s: ${line#not ok - }" ;;
		"Bail out!"*)
			tap_not_ok "$s: ${line}" ;;
		"#   "*|"# guest kernel"*)
			echo "$line" ;;
		esac
	done <"$log"
	for t in bond vlan; do
		grep -q "^# $t plan [0-9]" "$log" ||
			tap_not_ok "$s: $t: the scenario finished (status ${rc:-?}; whole output in $log)"
	done
	left=$(sed -n 's/^# namespaces left: //p' "$log")
	[[ $left == 0 ]]
	tap_result $? "$s: teardown removed every namespace" "${left:-not reported} left"
	xdp_pins_left "$s" "$log"
done
tap_done
