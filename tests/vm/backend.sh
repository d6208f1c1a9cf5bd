#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xlb-backend (tools/xlb-backend) on each kernel Debian 12 ships (6.1 and
# 6.12, tests/vm/lib/kernels.sh), one qemu guest per kernel, side by side
# (tools/vm/run.sh --kernel SERIES -- tests/vm/backend.sh --guest):
# tests/e2e/15-backend.sh again (the decap program, its probe through live
# frames, the refusals that touch the kernel, teardown; the refusals
# decided from the command line alone are the host's), then what only a guest can load, the
# xlb_redirect module built for that kernel: setup --mode redirect
# switches the module on with the allowlist, check proves delivery with a
# GUE probe through the module, finds a prefix missing from the allowlist
# and the module switched off, and teardown leaves the module as it was,
# including a prefix and the enabled state that were there before setup.
# Every guest line "ok - NAME" / "not ok - NAME" becomes a TAP case here,
# prefixed with the kernel; each guest's output stays in
# build/vm/backend-SERIES.log.
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}

# --- in the guest -------------------------------------------------------------
if [[ "${1:-}" == --guest ]]; then
	KO="$O/vm/backend-kmod-$(uname -r)/kmod/xlb_redirect.ko"
	XB=$(realpath "$O/xlb-backend")
	H=xbv-h
	PEER=xbv-p
	echo "# guest kernel: $(uname -r)"
	modprobe -a udp_tunnel ip6_udp_tunnel veth 2>&1
	echo "# === 15-backend"
	XLB_BACKEND_KERNEL_ONLY=1 tests/e2e/15-backend.sh 2>&1 |
		sed -n 's/^ok [0-9]* - /ok - xdp: /p; s/^not ok [0-9]* - /not ok - xdp: /p; /^#   /p
			s/^1\.\.\([0-9]*\)$/# xdp plan \1/p'
	echo "# === redirect"
	res() {		# res STATUS NAME [DIAG...]
		local st=$1 name=$2
		shift 2
		if [[ $st -eq 0 ]]; then
			echo "ok - redirect: $name"
		else
			echo "not ok - redirect: $name"
			printf '%s\n' "$@" | sed 's/^/#   /'
		fi
	}
	h() { nsenter --net="/var/run/netns/$H" -- "$@"; }
	xb() {		# xb COMMAND ARGS...
		local cmd=$1

		shift
		h "$XB" "$cmd" --config /tmp/xbv.conf --state /tmp/xbv.state "$@"
	}
	if ! insmod "$KO"; then
		res 1 "the module loads ($KO)"
		exit 0
	fi
	ip netns add "$H" && ip netns add "$PEER" &&
		h sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 &&
		ip -n "$H" link add eth0 type veth peer name eth0 netns "$PEER" &&
		ip -n "$H" link set lo up && ip -n "$H" link set eth0 up &&
		ip -n "$PEER" link set eth0 up &&
		ip -n "$H" addr add 10.78.0.2/24 dev eth0 &&
		ip -n "$H" addr add fd78::2/64 dev eth0 nodad
	res $? "namespaces"
	# a prefix allowed and the module on before setup: both must stay
	h sh -c 'echo "allow 10.78.9.0/24" > /proc/net/xlb_redirect'
	before=$(h cat /proc/net/xlb_redirect | grep -v '^[a-z_]* [0-9]*$')
	V=(10.78.100.1 fd78:100::1 10.78.101.0/24)
	out=$(xb setup --mode redirect --allow 10.78.0.1,fd78::1,10.78.9.0/24 \
		--dev eth0 "${V[@]}" 2>&1)
	rc=$?
	st=$(grep -v '^#' /tmp/xbv.state 2>/dev/null)
	res "$([[ $rc -eq 0 && $(h cat /proc/net/xlb_redirect) == *"enabled 1"* &&
		 $st == *"redirect-allow 10.78.0.1"* && $st == *"redirect-allow fd78::1"* &&
		 $st != *"10.78.9.0/24"* && $st == *redirect-enable* ]]; echo $?)" \
		"setup switches the module on and adds the allowlist, not what was there" \
		"$out" "$st"
	out=$(xb check 2>&1)
	rc=$?
	n=$(grep -c '^ok   probe .*the module delivered it' <<<"$out")
	res "$([[ $rc -eq 0 && $n -eq 6 ]]; echo $?)" \
		"check holds, 6 GUE probes (3 VIPs, over IPv4 and IPv6) delivered by the module" \
		"rc $rc, $n probes" "$out"
	h sh -c 'echo "disallow fd78::1" > /proc/net/xlb_redirect'
	out=$(xb check 2>&1)
	rc=$?
	res "$([[ $rc -eq 1 && $out == *"FAIL module allows: fd78::1 is not in the allowlist"*"fix: "* &&
		 $out == *"FAIL probe 10.78.100.1 GUE over IPv6"* ]]; echo $?)" \
		"check finds a prefix missing from the allowlist, and its probes fail" "$out"
	h sh -c 'echo "allow fd78::1" > /proc/net/xlb_redirect; echo disable > /proc/net/xlb_redirect'
	out=$(xb check 2>&1)
	rc=$?
	res "$([[ $rc -eq 1 && $out == *"FAIL module xlb_redirect: loaded but not enabled"* ]]; echo $?)" \
		"check finds the module switched off" "$out"
	h sh -c 'echo enable > /proc/net/xlb_redirect'
	out=$(xb teardown 2>&1)
	rc=$?
	after=$(h cat /proc/net/xlb_redirect | grep -v '^[a-z_]* [0-9]*$')
	res "$([[ $rc -eq 0 && $after == "$before" && $(h cat /proc/net/xlb_redirect) == *"enabled 0"* ]]; echo $?)" \
		"teardown: the module off again, only the prefix that was there before stays" \
		"$out" "before: $before" "after: $after"
	out=$(xb setup --mode redirect --allow 10.78.0.1 --gue-port 7000 --dev eth0 "${V[@]}" 2>&1)
	rc=$?
	res "$([[ $rc -ne 0 && $out == *"listens on port 6080, not 7000"* && ! -e /tmp/xbv.state ]]; echo $?)" \
		"setup refuses a GUE port the module does not listen on" "$out"
	ip netns del "$H"
	ip netns del "$PEER"
	echo "# taint $(cat /proc/sys/kernel/tainted)"
	exit 0
fi

# --- on the host --------------------------------------------------------------
TIMEOUT=${XLB_VM_TIMEOUT:-900}
. tests/lib/tap.sh
. tests/vm/lib/kernels.sh

[[ -x $O/xlb-backend ]] || tap_bail "$O/xlb-backend is missing; run 'make'"
dkms=$(find "$O"/dkms -mindepth 1 -maxdepth 1 -name 'xlb_redirect-*' -type d 2>/dev/null | head -n 1)
[[ -n $dkms ]] || tap_bail "no DKMS tree in $O/dkms (make kmod-dkms-src)"
mkdir -p "$O"/vm
# The module built for each kernel here, then one guest per kernel, side
# by side (each keeps one host core busy), then each guest's cases.
ran=()
for s in "${VM_SERIES[@]}"; do
	kver=$(vm_kver "$s")
	tree="$O/vm/backend-kmod-$kver"
	if [[ -z $kver || ! -d /lib/modules/$kver/build ]]; then
		tap_not_ok "$s: the module builds (no kernel or headers: '$kver')"
		continue
	fi
	rm -rf "$tree" && cp -r "$dkms" "$tree" && tree=$(cd "$tree" && pwd -P)
	if ! out=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		   make -C "/lib/modules/$kver/build" M="$tree" modules 2>&1); then
		tap_not_ok "$s: the module builds ($kver)" "$out"
		continue
	fi
	ran+=("$s")
	rm -f "$O/vm/backend-$s.rc"
	(
		tools/vm/run.sh --kernel "$s" --timeout "$TIMEOUT" -- \
			tests/vm/backend.sh --guest >"$O/vm/backend-$s.log" 2>&1
		echo $? >"$O/vm/backend-$s.rc"
	) &
done
wait
for s in "${ran[@]}"; do
	log="$O/vm/backend-$s.log"
	rc=$(cat "$O/vm/backend-$s.rc" 2>/dev/null)
	k=$(sed -n 's/^# guest kernel: //p' "$log" | head -n 1)
	tap_result "$([[ $rc -eq 0 && $k == "$s".* ]]; echo $?)" \
		"$s: the guest ran (kernel ${k:-?}, run.sh status ${rc:-?})" "$(tail -n 20 "$log")"
	# every case of 15-backend.sh's plan, and the module's seven
	nx=0 nr=0
	while IFS= read -r line; do
		case $line in
		"ok - "*) tap_ok "$s: ${line#ok - }" ;;
		"not ok - "*) tap_not_ok "$s: ${line#not ok - }" ;;
		"#   "*) echo "$line" ;;
		esac
		case $line in
		"ok - xdp: "* | "not ok - xdp: "*) nx=$((nx + 1)) ;;
		"ok - redirect: "* | "not ok - redirect: "*) nr=$((nr + 1)) ;;
		esac
	done <"$log"
	plan=$(sed -n 's/^# xdp plan //p' "$log" | head -n 1)
	tap_result "$([[ -n $plan && $nx -eq $plan && $nr -eq 7 ]]; echo $?)" \
		"$s: the guest reported its cases ($nx of 15-backend.sh's ${plan:-?}, $nr of the module's 7)"
	taint=$(sed -n 's/^# taint //p' "$log" | head -n 1)
	tap_result "$([[ $taint =~ ^[0-9]+$ ]] && (( (taint & (512 | 128 | 32 | 16)) == 0 )); echo $?)" \
		"$s: no kernel warning or oops (taint '${taint:-?}')"
done
tap_done
