# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Sourced by tests/vm/*.sh (host side), after tests/lib/tap.sh.

# xdp_pins_left SERIES LOG [WHY]: one TAP line from the guest's
# "# xdp pins left: NAMES" line in LOG.  A program still attached when its
# namespace goes leaves libxdp's dispatcher pinned under /sys/fs/bpf/xdp,
# and with it the program and its maps (the module scenario's connection
# tables: 140 MB a case in a 1 GB guest).
xdp_pins_left() {
	local s=$1 log=$2 why=${3:-} line names

	if ! line=$(grep -m1 '^# xdp pins left:' "$log"); then
		tap_not_ok "$s: no XDP dispatcher is left pinned after the programs (not reported${why:+: $why})"
		return
	fi
	names=${line#\# xdp pins left:}
	if [[ -z ${names// /} ]]; then
		tap_ok "$s: no XDP dispatcher is left pinned after the programs"
	else
		tap_not_ok "$s: no XDP dispatcher is left pinned after the programs"
		echo "#   /sys/fs/bpf/xdp:$names"
	fi
}
