#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xlb-backend (tools/xlb-backend) on a host of its own: a namespace with a
# veth to a peer namespace, both made here.  Every e2e run sets up the test
# network's backends with it (tests/e2e/lib/topo.sh); this test pins the
# rest: every bad input is refused with a clear error and changes nothing
# (addresses, routes, sysctls, XDP, files compared before and after), setup
# twice is refused, check finds each broken requirement (with its fix) and
# its probe fails when the packet cannot arrive, teardown restores exactly
# what was there (values set before setup stay, values changed since setup
# stay), and start applies the saved configuration once.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh

XLB_BIN=${XLB_BIN:-${O:-build}}
XB=$(realpath "$XLB_BIN/xlb-backend" 2>/dev/null)
P=xbe$$-
H=${P}h
PEER=${P}p
work=

[[ $(id -u) -eq 0 ]] || tap_bail "needs root"
[[ -x $XB ]] || tap_bail "$XLB_BIN/xlb-backend is missing; run 'make'"

PIN=/sys/fs/bpf/xbe$$-decap

cleanup() {
	rm -f "$PIN"
	ip netns del "$H" 2>/dev/null
	ip netns del "$PEER" 2>/dev/null
	[[ -n $work ]] && rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
work=$(mktemp -d) || exit 1
CONF=$work/backend.conf
STATE=$work/backend.state
FILES=(--config "$CONF" --state "$STATE")

h() { nsenter --net="/var/run/netns/$H" -- "$@"; }
xb() { h "$XB" "$@"; }

# no duplicate address detection: the link-local address would change its
# flags while the state is being compared
ip netns add "$H" && ip netns add "$PEER" &&
	h sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 &&
	ip -n "$H" link add eth0 type veth peer name eth0 netns "$PEER" &&
	ip -n "$H" link set lo up && ip -n "$H" link set eth0 up &&
	ip -n "$PEER" link set lo up && ip -n "$PEER" link set eth0 up &&
	ip -n "$H" addr add 10.77.0.2/24 dev eth0 &&
	ip -n "$H" addr add fd77::2/64 dev eth0 nodad &&
	ip -n "$PEER" addr add 10.77.0.1/24 dev eth0 ||
	tap_bail "cannot make the namespaces"
# a host whose reverse-path filter is strict, as many distributions ship
h sysctl -qw net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.eth0.rp_filter=1 ||
	tap_bail "cannot set rp_filter"

# Everything xlb-backend may change, in a comparable form.
snap() {
	h ip -o addr show | sed 's/valid_lft.*//'
	h ip route show table all
	h ip -6 route show table all | grep -v '^multicast\|^ff00::/8'
	h ip -o link show | sed 's/ qlen [0-9]*//'
	local f
	for f in /proc/sys/net/ipv4/conf/{all,eth0,lo}/{arp_ignore,arp_announce,rp_filter}; do
		echo "$f $(h cat "$f")"
	done
	h cat /proc/net/xlb_redirect 2>/dev/null
	ls "$CONF" "$STATE" 2>/dev/null
}

# refused NAME WANT ARGS...: exit status non-zero, WANT in stderr, nothing
# changed.  In a run of refusals (SNAP set) the state after one is the
# state before the next: one snapshot a case, not two.
SNAP=
refused() {
	local name=$1 want=$2 before after rc err

	shift 2
	before=${SNAP:-$(snap)}
	xb "$@" >"$work/out" 2>"$work/err"
	rc=$?
	err=$(cat "$work/err")
	after=$(snap)
	[[ -z $SNAP ]] || SNAP=$after
	if [[ $rc -ne 0 && $err == *"$want"* && $before == "$after" ]]; then
		tap_ok "refused: $name"
	else
		tap_not_ok "refused: $name" "rc $rc, want '$want' in: $err" \
			"$(diff <(echo "$before") <(echo "$after"))"
	fi
}

# refused_args: a refusal decided from the command line alone, the same
# on every kernel.  tests/vm/backend.sh runs this file again in a guest of
# each kernel Debian 12 ships with XLB_BACKEND_KERNEL_ONLY=1: there only
# the cases that touch the kernel run, these are the host's.
refused_args() {
	[[ -n ${XLB_BACKEND_KERNEL_ONLY:-} ]] || refused "$@"
}

out=$(xb --help)
tap_result "$([[ $? -eq 0 && $out == *setup* && $out == *check* && $out == *teardown* ]]; echo $?)" \
	"--help names the commands and exits 0" "$out"

# every option --help names is offered by the bash completion
# (dist/xlb-backend.bash-completion), and the modes after --mode
opts=$(set -f; for w in $out; do
	[[ $w =~ ^\[?(--[a-z-]+) && ${BASH_REMATCH[1]} != --help ]] &&
		echo "${BASH_REMATCH[1]}"
done | sort -u)
comp=$(bash -c 'source dist/xlb-backend.bash-completion
	for c in setup check; do
		COMP_WORDS=(xlb-backend "$c" --); COMP_CWORD=2; _xlb_backend
		printf "%s\n" "${COMPREPLY[@]}"
	done
	COMP_WORDS=(xlb-backend setup --mode ""); COMP_CWORD=3; _xlb_backend
	echo "${COMPREPLY[*]}"' | sort -u)
lacking=
for w in $opts; do
	[[ $'\n'$comp$'\n' == *$'\n'$w$'\n'* ]] || lacking+=" $w"
done
tap_result "$([[ -n $opts && -z $lacking && $comp == *"xdp redirect none"* ]]; echo $?)" \
	"the bash completion offers every option of --help, and the modes" \
	"lacking: $lacking" "offered: $comp"

V=(10.77.100.1 10.77.101.0/24 fd77:100::1 fd77:101::/64)

# --- bad input ----------------------------------------------------------------
SNAP=$(snap)
for vip in 10.77.100.256 10.77.100.1/33 10.77.100.1/24 224.0.0.1 127.0.0.1 \
	   0.0.0.0 10.0.0.0/8 fe80::1 ff02::1 ::1 fd77::/32 '[10.77.100.1]:80/tcp' \
	   fd77::1:80/tcp 10.77.100.1:99999/tcp 10.77.100.1:80/sctp example.com \
	   10.77.100.1/ ''; do
	refused_args "VIP '$vip'" "VIP '$vip'" setup "${FILES[@]}" --dev eth0 "$vip"
done
refused "an interface that does not exist" "no interface nosuch0" \
	setup "${FILES[@]}" --dev nosuch0 "${V[@]}"
refused "lo as the tunnel interface" "lo cannot be" \
	setup "${FILES[@]}" --dev lo "${V[@]}"
refused_args "no interface" "needs --dev" setup "${FILES[@]}" "${V[@]}"
refused_args "no VIP" "needs --dev IF and at least one VIP" setup "${FILES[@]}" --dev eth0
refused_args "a VIP twice" "given twice" setup "${FILES[@]}" --dev eth0 10.77.100.1 10.77.100.1
refused_args "an interface twice" "given twice" setup "${FILES[@]}" --dev eth0,eth0 10.77.100.1
refused_args "an unknown mode" "not xdp, redirect or none" \
	setup "${FILES[@]}" --mode tunnel --dev eth0 "${V[@]}"
refused_args "an unknown XDP mode" "not auto, native or generic" \
	setup "${FILES[@]}" --xdp-mode offload --dev eth0 "${V[@]}"
refused_args "GUE port 0" "not a port" setup "${FILES[@]}" --gue-port 0 --dev eth0 "${V[@]}"
refused_args "GUE port 70000" "not a port" setup "${FILES[@]}" --gue-port 70000 --dev eth0 "${V[@]}"
refused_args "an allowlist without the module" "--allow is for --mode redirect" \
	setup "${FILES[@]}" --allow 10.77.0.1 --dev eth0 "${V[@]}"
refused_args "a bad allowlist prefix" "--allow '10.77.0.1/16'" \
	setup "${FILES[@]}" --mode redirect --allow 10.77.0.1/16 --dev eth0 "${V[@]}"
refused_args "the module without an allowlist" "needs --allow" \
	setup "${FILES[@]}" --mode redirect --dev eth0 "${V[@]}"
if [[ -e /proc/net/xlb_redirect ]]; then
	tap_skip "refused: the module when it is not loaded" "xlb_redirect is loaded here"
else
	refused "the module when it is not loaded" "xlb_redirect module is not loaded" \
		setup "${FILES[@]}" --mode redirect --allow 10.77.0.1 --dev eth0 "${V[@]}"
fi
refused_args "an unknown command" "unknown command 'stup'" stup "${FILES[@]}"
refused "teardown before setup" "nothing to tear down" teardown "${FILES[@]}"
refused "check with nothing to check" "nothing to check" check "${FILES[@]}"
refused_args "teardown with VIPs" "takes no VIPs" teardown "${FILES[@]}" 10.77.100.1
refused "a state file that cannot be written" "cannot" \
	setup --config "$CONF" --state /proc/xlb-backend/state --dev eth0 "${V[@]}"
SNAP=
# an XDP program on the interface already: never replaced
h ip link set dev eth0 xdpgeneric obj "$XLB_BIN/xlb_decap.bpf.o" sec xdp ||
	tap_bail "cannot attach a program by hand"
refused "an interface that runs an XDP program already" "runs an XDP program already" \
	setup "${FILES[@]}" --dev eth0 "${V[@]}"
h ip link set dev eth0 xdpgeneric off

# --- setup, check -------------------------------------------------------------
# values already right before setup stay, and a VIP local before setup too
h sysctl -qw net.ipv4.conf.eth0.arp_ignore=2
h ip addr add 10.77.100.1/32 dev lo
pristine=$(snap)

xb setup "${FILES[@]}" --dev eth0 "${V[@]}" >"$work/setup.out" 2>&1
rc=$?
tap_result $rc "setup: VIP addresses and prefixes, the decap program on eth0" \
	"$(cat "$work/setup.out")"
[[ $rc -eq 0 ]] || tap_bail "no setup"
tap_diag "$(cat "$work/setup.out")"

st=$(grep -v '^#' "$STATE")
want="sysctl /proc/sys/net/ipv4/conf/all/arp_announce 0 2
sysctl /proc/sys/net/ipv4/conf/all/rp_filter 1 2
sysctl /proc/sys/net/ipv4/conf/eth0/rp_filter 1 2
xdp eth0 "
tap_result "$([[ $st == "$want"* && $st != *arp_ignore* && $st != *"addr 10.77.100.1"* ]]; echo $?)" \
	"the state records what setup changed, not what was set already" "$st"

a=$(h ip -br addr show lo; h ip route show table local type local 10.77.101.0/24;
    h ip -6 route show table local type local fd77:101::/64)
tap_result "$([[ $a == *" 10.77.100.1/32 "* && $a == *" fd77:100::1/128 "* &&
		  $a == *"local 10.77.101.0/24 dev lo"* && $a == *"local fd77:101::/64 dev lo"* ]]; echo $?)" \
	"VIP addresses on lo, VIP prefixes local routes through lo" "$a"
p=$(h ip -j link show dev eth0 | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)[0].get("xdp", {}).get("prog", {}).get("name"))')
tap_result "$([[ $p == xlb_decap ]]; echo $?)" "xlb_decap runs on eth0" "$p"

refused "setup twice" "set up already" setup "${FILES[@]}" --dev eth0 "${V[@]}"

out=$(xb show "${FILES[@]}")
tap_result "$([[ $out == *"vip fd77:101::/64"*"route fd77:101::/64"* && $out == *"dev eth0"* ]]; echo $?)" \
	"show prints the saved configuration and the state" "$out"

xb check "${FILES[@]}" >"$work/check.out" 2>&1
rc=$?
c=$(cat "$work/check.out")
nprobe=$(grep -c '^ok   probe .*delivered to a socket' "$work/check.out")
# A kernel that refuses live frames (EPERM: a policy of the kernel, not a
# fault of the frame) leaves the probes nothing to send through; check
# says so on each, and everything else is still checked.
noinject=$(grep -c "^skip probe .*cannot inject a frame into eth0's receive path: Operation not permitted" \
	"$work/check.out")
if ((noinject == 16)); then
	tap_result "$([[ $rc -eq 0 && $c != *FAIL* ]]; echo $?)" \
		"check: every requirement holds" "rc $rc" "$c"
	tap_skip "check: 16 probes (4 VIPs, IP-in-IP and GUE over IPv4 and IPv6) delivered" \
		"this kernel refuses BPF_PROG_TEST_RUN live frames (EPERM), check skipped all 16 probes saying so"
else
	tap_result "$([[ $rc -eq 0 && $c != *FAIL* && $nprobe -eq 16 ]]; echo $?)" \
		"check: every requirement holds, 16 probes (4 VIPs, IP-in-IP and GUE over IPv4 and IPv6) delivered" \
		"rc $rc, $nprobe probes" "$c"
fi

# broken CASE WANT SETUP-CMD UNDO-CMD: check exits 1 naming WANT with a fix
broken() {
	local name=$1 want=$2 rc c

	h bash -c "$3"
	xb check "${FILES[@]}" >"$work/check.out" 2>&1
	rc=$?
	c=$(cat "$work/check.out")
	h bash -c "$4"
	if [[ $rc -eq 1 && $(grep -c "^FAIL $want" "$work/check.out") -ge 1 &&
	      $(grep "^FAIL $want" "$work/check.out") == *"; fix: "* ]]; then
		tap_ok "check finds $name"
	else
		tap_not_ok "check finds $name" "rc $rc, want 'FAIL $want...; fix:'" "$c"
	fi
}
broken "ARP answers for lo addresses" "arp_ignore eth0" \
	"sysctl -qw net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.eth0.arp_ignore=0" \
	"sysctl -qw net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.eth0.arp_ignore=2"
broken "ARP from other addresses" "arp_announce eth0" \
	"sysctl -qw net.ipv4.conf.all.arp_announce=1" \
	"sysctl -qw net.ipv4.conf.all.arp_announce=2"
broken "a strict reverse-path filter" "rp_filter eth0" \
	"sysctl -qw net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.eth0.rp_filter=1" \
	"sysctl -qw net.ipv4.conf.all.rp_filter=2 net.ipv4.conf.eth0.rp_filter=2"
if ((noinject == 16)); then
	tap_skip "check finds a VIP that is not local, and its probes fail" \
		"this kernel refuses live frames: no probe is sent"
else
	broken "a VIP that is not local, and its probes fail" "probe fd77:100::1 GUE over IPv4" \
		"ip addr del fd77:100::1/128 dev lo" \
		"ip addr add fd77:100::1/128 dev lo nodad"
fi
broken "a VIP on eth0 instead of lo" "VIP 10.77.100.1" \
	"ip addr add 10.77.100.1/32 dev eth0" "ip addr del 10.77.100.1/32 dev eth0"
id=$(h ip -j link show dev eth0 | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)[0]["xdp"]["prog"]["id"])')
# kept alive by a pin while detached, then the very program put back
# (teardown detaches only the program setup attached)
broken "no decap program" "decap eth0" \
	"bpftool prog pin id $id $PIN && ip link set dev eth0 xdpdrv off" \
	"bpftool net attach xdpdrv pinned $PIN dev eth0 && rm -f $PIN"

xb check "${FILES[@]}" >"$work/check.out" 2>&1
tap_result $? "check holds again once each is put back" "$(cat "$work/check.out")"

# check of a host set up by hand: the same requirements from the command line
xb check "${FILES[@]}" --no-probe --dev eth0 10.77.102.1 >"$work/check.out" 2>&1
rc=$?
tap_result "$([[ $rc -eq 1 && $(cat "$work/check.out") == *"FAIL VIP 10.77.102.1: not local"*"fix: ip addr add 10.77.102.1 dev lo"* ]]; echo $?)" \
	"check of VIPs given on the command line" "$(cat "$work/check.out")"

# --- teardown -----------------------------------------------------------------
xb teardown "${FILES[@]}" >"$work/down.out" 2>&1
rc=$?
after=$(snap)
tap_result "$([[ $rc -eq 0 && $after == "$pristine" ]]; echo $?)" \
	"teardown restores exactly what was there before setup" \
	"$(cat "$work/down.out")" "$(diff <(echo "$pristine") <(echo "$after"))"
a=$(h sysctl -n net.ipv4.conf.eth0.arp_ignore; h ip -br addr show lo)
tap_result "$([[ $a == 2*" 10.77.100.1/32 "* ]]; echo $?)" \
	"values set before setup stay: arp_ignore 2, the VIP that was on lo" "$a"
refused "teardown twice" "nothing to tear down" teardown "${FILES[@]}"

# a value changed after setup is not set back
xb setup "${FILES[@]}" --dev eth0 --xdp-mode generic "${V[@]}" >"$work/setup.out" 2>&1 ||
	tap_bail "no second setup: $(cat "$work/setup.out")"
h sysctl -qw net.ipv4.conf.all.arp_announce=1
xb teardown "${FILES[@]}" >"$work/down.out" 2>&1
rc=$?
a=$(h sysctl -n net.ipv4.conf.all.arp_announce)
tap_result "$([[ $rc -eq 0 && $a == 1 && $(cat "$work/down.out") == *"arp_announce is 1 now"*"left as it is"* ]]; echo $?)" \
	"teardown leaves a value changed since setup, and says so" "arp_announce $a" \
	"$(cat "$work/down.out")"
h sysctl -qw net.ipv4.conf.all.arp_announce=0
after=$(snap)
tap_result "$([[ $after == "$pristine" ]]; echo $?)" "generic mode: teardown restores the rest" \
	"$(diff <(echo "$pristine") <(echo "$after"))"

# --- start (the unit) ---------------------------------------------------------
xb setup "${FILES[@]}" --dev eth0 "${V[@]}" >/dev/null 2>&1 &&
	cp "$CONF" "$work/saved.conf" &&
	xb teardown "${FILES[@]}" >/dev/null 2>&1 &&
	cp "$work/saved.conf" "$CONF" || tap_bail "cannot save a configuration"
xb start "${FILES[@]}" >"$work/start.out" 2>&1
rc=$?
xb check "${FILES[@]}" >"$work/check.out" 2>&1
rc2=$?
tap_result "$([[ $rc -eq 0 && $rc2 -eq 0 ]]; echo $?)" \
	"start applies the saved configuration (as at boot), and check holds" \
	"$(cat "$work/start.out" "$work/check.out")"
before=$(snap)
out=$(xb start "${FILES[@]}" 2>&1)
rc=$?
tap_result "$([[ $rc -eq 0 && $out == *"nothing to do"* && $(snap) == "$before" ]]; echo $?)" \
	"start when set up already changes nothing" "$out"
xb teardown "${FILES[@]}" >/dev/null 2>&1
after=$(snap)
tap_result "$([[ $after == "$pristine" && ! -e $CONF && ! -e $STATE ]]; echo $?)" \
	"teardown forgets the saved configuration" "$(ls "$work")"

tap_done
