# SPDX-License-Identifier: GPL-2.0
# Sourced by tests/vm/*.sh (host side), after tests/lib/tap.sh.

# xdp_pins_left LOG [WHY]: one TAP line from the guest's
# "# xdp pins left: NAMES" line in LOG.  A program still attached when its
# namespace goes leaves libxdp's dispatcher pinned under /sys/fs/bpf/xdp,
# and with it the program and its maps (the module scenario's connection
# tables: 140 MB a case in a 1 GB guest).
xdp_pins_left() {
	local log=$1 why=${2:-} line names

	if ! line=$(grep -m1 '^# xdp pins left:' "$log"); then
		tap_not_ok "6.1: no XDP dispatcher is left pinned after the programs (not reported${why:+: $why})"
		return
	fi
	names=${line#\# xdp pins left:}
	if [[ -z ${names// /} ]]; then
		tap_ok "6.1: no XDP dispatcher is left pinned after the programs"
	else
		tap_not_ok "6.1: no XDP dispatcher is left pinned after the programs"
		echo "#   /sys/fs/bpf/xdp:$names"
	fi
}
