#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages of `make deb` (build/deb/) installed, used, upgraded
# and purged the way an operator would, on a fresh Debian 12 booted with
# systemd as PID 1.
#
# The root: debootstrap (minbase) from the Debian registry with systemd,
# DKMS, the guest kernel's image and headers and the packages' dependencies
# (tests/vm/lib/debroot.sh), one per kernel, made once and kept in
# build/pkg/ (made anew when missing).  Each run installs both packages
# with apt-get into an overlay above it (build/pkg/inst-KVER/upper, in a
# mount namespace of its own), the way an image is built: DKMS builds the
# module there for the root's kernel, the guest's, at native speed (under
# the guest's software emulation the build alone took minutes).  The
# result boots in a qemu guest of that kernel, each kernel Debian 12 ships
# side by side (tools/vm/run.sh --root: read-only under a tmpfs overlay).
# A qemu guest rather than a container (systemd-nspawn --boot): the
# module must be loaded into the guest's own kernel, and xlbd attaches XDP
# and pins BPF objects in the kernel it runs on; a container shares the
# host's kernel (not a Debian 12 one) with everything else on the machine.
#
# In the guest (--guest): systemd started xlbd.service at boot from its
# unit's ExecStart; systemctl stop and start; xlbctl answering; modprobe
# of the module DKMS built; the example configuration applied;
# `systemctl reload` (SIGHUP, metrics on) applying /etc/xlb/xlb.conf with
# the same xlbd running on; a restart adopting the data path; an upgrade
# with apt-get to the same package with a higher version (the restarted
# xlbd adopts the data path: same pins, same state, routes kept); a purge
# that leaves no xlbd, no pins under /sys/fs/bpf, no routes of protocol
# 250, no XDP program and no file.  Each check is one TAP line; the
# guest's output stays in build/vm/pkg-SERIES.log.  XLB_VM_TIMEOUT
# (seconds) bounds the guest.
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}

# --- in the guest -------------------------------------------------------------
# Prints "@ok NAME", "@not ok NAME" and "# " lines; the host makes TAP of
# them.  "@end" says it got to the end.  BEFORE lists the root's files
# before the install, HARNESS what tools/vm/run.sh adds to them (a regular
# expression).
guest() {
	local up=$1 before=$2 harness=$3
	local kver pid pid2 pins saved saved2 v new left t0

	export DEBIAN_FRONTEND=noninteractive
	kver=$(uname -r)
	echo "# guest kernel $kver, PID 1 is $(readlink /proc/1/exe)"

	# check NAME CMD...: one line, CMD's output as diagnostics on failure
	check() {
		local name=$1 out

		shift
		if out=$("$@" 2>&1); then
			echo "@ok $name"
		else
			echo "@not ok $name"
			tail -n 25 <<<"$out" | sed 's/^/#   /'
			return 1
		fi
	}
	# poll CMD...: until it succeeds, at most 60 tries a second apart
	poll() {
		local i

		for ((i = 0; i < 60; i++)); do
			"$@" >/dev/null 2>&1 && return 0
			sleep 1
		done
		return 1
	}

	check "systemd is PID 1" test "$(cat /proc/1/comm)" = systemd

	# --- the unit, started at boot and by hand ---------------------------
	check "xlbd.service is enabled" systemctl is-enabled xlbd.service
	# enabled; with no saved setup its condition keeps it from running
	check "xlb-backend.service is enabled, not started without a setup" sh -c '
		systemctl is-enabled xlb-backend.service && ! test -e /etc/xlb/backend.conf &&
		systemctl show -P ConditionResult xlb-backend.service | grep -qx no'
	check "xlb-backend runs" xlb-backend --help
	poll xlbctl status
	check "systemd started xlbd.service at boot" systemctl is-active xlbd.service
	check "systemctl stop xlbd" systemctl stop xlbd.service
	check "xlbd.service is inactive, no xlbd runs" sh -c '
		! systemctl is-active xlbd.service && ! pidof xlbd'
	check "systemctl start xlbd" systemctl start xlbd.service
	poll xlbctl status
	check "xlbd.service is active" systemctl is-active xlbd.service
	pid=$(systemctl show -P MainPID xlbd.service)
	check "its main process is /usr/sbin/xlbd, the unit's ExecStart" sh -c "
		test '$pid' -gt 0 && test \"\$(readlink /proc/$pid/exe)\" = /usr/sbin/xlbd &&
		systemctl show -P ExecStart xlbd.service | grep -q 'path=/usr/sbin/xlbd ;'"
	check "xlbctl answers on the default socket" xlbctl status
	# the metrics thread runs (SIGHUP below must not end the process)
	check "xlbd serves metrics on 127.0.0.1:9437" bash -c '
		exec 3<>/dev/tcp/127.0.0.1/9437 &&
		printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && grep -q "^xlb_up 1" <&3'

	# --- the module --------------------------------------------------------
	check "dkms: xlb_redirect installed for $kver" \
		sh -c "dkms status xlb_redirect | grep -F ', $kver, ' | grep ': installed'"
	check "modprobe loads the module DKMS built" modprobe xlb_redirect
	check "the loaded module is DKMS's, for $kver" sh -c "
		modinfo -n xlb_redirect | grep -q '^/lib/modules/$kver/updates/dkms/xlb_redirect.ko' &&
		modinfo -F vermagic xlb_redirect | grep -q '^$kver ' &&
		test -d /sys/module/xlb_redirect && test -e /proc/net/xlb_redirect"
	check "modprobe -r unloads it" modprobe -r xlb_redirect

	# --- a configuration ---------------------------------------------------
	ip link add eth0 type veth peer name eth0p &&
		ip link set eth0 up && ip link set eth0p up &&
		ip addr add 192.0.2.1/24 dev eth0
	check "the example configuration applies (xlbctl restore)" \
		xlbctl restore /usr/share/doc/xlb/examples/xlb.conf
	check "it attached the data path to eth0" sh -c 'ip link show eth0 | grep -q xdp'
	check "a VIP with a backend is announced (a route of protocol 250)" sh -c '
		xlbctl set announce table 100 &&
		xlbctl vip add 198.51.100.20:80/tcp health none &&
		xlbctl backend add 198.51.100.20:80/tcp 10.0.0.31 &&
		for i in $(seq 30); do
			ip route show table 100 proto 250 | grep -q 198.51.100.20 && exit 0
			sleep 1
		done; ip route show table all; exit 1'
	pins=$(find /sys/fs/bpf -mindepth 1 | sort)
	check "the data path is pinned under /sys/fs/bpf/xlb/default" \
		grep -q '^/sys/fs/bpf/xlb/default/' <<<"$pins"

	# --- reload (SIGHUP through the unit, metrics on), restart ---------------
	{ xlbctl save; echo "backend add 198.51.100.20:80/tcp 10.0.0.32"; } >/etc/xlb/xlb.conf
	check "systemctl reload xlbd" systemctl reload xlbd.service ||
		journalctl -u xlbd.service -o cat | tail -n 10 | sed 's/^/#   /'
	check "the reload applied /etc/xlb/xlb.conf" \
		poll sh -c 'xlbctl save | grep -q "10\.0\.0\.32"'
	check "the same xlbd runs on after the reload" sh -c "
		systemctl is-active xlbd.service &&
		test \"\$(systemctl show -P MainPID xlbd.service)\" = $pid &&
		kill -0 $pid && xlbctl status"
	check "journal: xlbd logged the reload" sh -c \
		"journalctl -u xlbd.service -o cat | grep 'reloaded /etc/xlb/xlb.conf (changed)'"
	rm -f /etc/xlb/xlb.conf
	saved=$(xlbctl save)
	pins=$(find /sys/fs/bpf -mindepth 1 | sort)
	check "systemctl restart xlbd" systemctl restart xlbd.service
	poll xlbctl status
	pid2=$(systemctl show -P MainPID xlbd.service)
	check "a new xlbd adopted the data path: same pins, same state" sh -c "
		test '$pid2' -gt 0 && test '$pid2' != '$pid' &&
		test \"\$(find /sys/fs/bpf -mindepth 1 | sort)\" = '$pins' &&
		test \"\$(xlbctl save)\" = '$saved'"
	# the stop wrote the state cache, the start read it, as the unit runs
	check "the restarted xlbd read its state cache (xlbd.8, FILES)" sh -c '
		xlbctl -j status | tr -d " \n" |
			grep -q "\"state_cache\":{[^}]*\"start\":\"used\"" ||
			{ xlbctl -j status | grep -A5 state_cache; exit 1; }'

	# --- upgrade -------------------------------------------------------------
	echo "# boot to here: $(cut -d' ' -f1 /proc/uptime) s"
	t0=$(date +%s)
	v=$(dpkg-deb -f "$up" Version)
	check "apt-get install of xlb $v (an upgrade)" \
		apt-get install -y --no-install-recommends "$up"
	check "xlb $v is installed" \
		test "$(dpkg-query -W -f='${Version}' xlb)" = "$v"
	poll xlbctl status
	new=$(systemctl show -P MainPID xlbd.service)
	check "the upgrade restarted xlbd: active, a new process" sh -c "
		systemctl is-active xlbd.service && test '$new' -gt 0 && test '$new' != '$pid2'"
	check "after the upgrade: the same pins, no other" \
		test "$(find /sys/fs/bpf -mindepth 1 | sort)" = "$pins"
	saved2=$(xlbctl save)
	check "after the upgrade: the same state" test "$saved2" = "$saved"
	check "after the upgrade: the VIP route is still announced" \
		sh -c 'ip route show table 100 proto 250 | grep -q 198.51.100.20'
	check "after the upgrade: dpkg -V xlb finds nothing changed, no file left over" sh -c '
		dpkg -V xlb && test -z "$(find / -xdev -name "*.dpkg-*" 2>/dev/null)"'

	echo "# the upgrade and its checks took $(($(date +%s) - t0)) s"

	# --- purge ---------------------------------------------------------------
	t0=$(date +%s)
	check "apt-get purge of xlb, xlb-backend and xlb-redirect-dkms" \
		apt-get purge -y xlb xlb-backend xlb-redirect-dkms
	echo "# the purge took $(($(date +%s) - t0)) s"
	check "no xlbd runs" sh -c '! pidof xlbd'
	# libxdp keeps its directory /sys/fs/bpf/xdp (empty once nothing is
	# attached) for whatever program it attaches next; xlb's goes
	check "no pins under /sys/fs/bpf, no /sys/fs/bpf/xlb" sh -c '
		left=$(find /sys/fs/bpf -mindepth 1 ! -type d; ls -d /sys/fs/bpf/xlb 2>/dev/null)
		test -z "$left" || { echo "$left"; exit 1; }'
	check "no routes of protocol 250" sh -c '
		left=$(ip -4 route show table all proto 250; ip -6 route show table all proto 250)
		test -z "$left" || { echo "$left"; exit 1; }'
	check "eth0 has no XDP program" sh -c '! ip link show eth0 | grep xdp'
	check "systemd has no xlbd.service, no xlb-backend.service" sh -c '
		! systemctl cat xlbd.service && ! systemctl cat xlb-backend.service'
	check "no state, runtime, DKMS or module files" sh -c "
		left=\$(ls -d /var/lib/xlb /run/xlb /etc/xlb /var/lib/dkms/xlb_redirect \
			/usr/src/xlb_redirect-* 2>/dev/null
			find /lib/modules -name 'xlb_redirect.ko*')
		test -z \"\$left\" || { echo \"\$left\"; exit 1; }"
	# every file of the root now against the fresh root's: what is new
	# besides apt's and dpkg's records, logs, systemd's own state, the
	# private /var/tmp of systemd's own services and /var/backups (the
	# daily dpkg-db-backup.timer: it fires at boot when the root was made
	# on an earlier day)
	left=$(find / -xdev -path /proc -prune -o -print 2>/dev/null | sort |
		comm -13 "$before" - | grep -Ev "$harness" |
		grep -Ev '^/(var/lib/(dpkg|apt|systemd)|var/cache|var/log|var/backups|tmp)(/|$)' |
		grep -Ev '^/var/tmp/systemd-private-[0-9a-f]+-systemd-[a-z-]+\.service-')
	check "no file the packages brought is left" sh -c "
		test -z '$left' || { echo '$left'; exit 1; }"
	echo "@end"
}

if [[ "${1:-}" == --guest ]]; then
	shift
	guest "$@"
	exit 0
fi

# --- on the host --------------------------------------------------------------
TIMEOUT=${XLB_VM_TIMEOUT:-1200}
. tests/lib/tap.sh
. tests/vm/lib/kernels.sh
. tests/vm/lib/debroot.sh

deb_dir="$O/deb"
[[ "$deb_dir" == /* ]] || deb_dir="$PWD/$deb_dir"
shopt -s nullglob
xlb=("$deb_dir"/xlb_*_amd64.deb)
dkms=("$deb_dir"/xlb-redirect-dkms_*_all.deb)
backend=("$deb_dir"/xlb-backend_*_amd64.deb)
shopt -u nullglob
if [[ ${#xlb[@]} -ne 1 || ${#dkms[@]} -ne 1 || ${#backend[@]} -ne 1 ]]; then
	tap_not_ok "one xlb, xlb-backend and xlb-redirect-dkms package each in $deb_dir (make deb)"
	tap_done
	exit 1
fi

# make deb's lintian report: no error, no warning
if [[ ! -f "$deb_dir/lintian.txt" ]]; then
	tap_not_ok "lintian: no error, no warning (no $deb_dir/lintian.txt; make deb)"
elif grep -qE '^[EW]: ' "$deb_dir/lintian.txt"; then
	tap_not_ok "lintian: no error, no warning" "$(grep -E '^[EW]: ' "$deb_dir/lintian.txt")"
else
	tap_ok "lintian: no error, no warning"
fi

pkg="$O/pkg"
[[ "$pkg" == /* ]] || pkg="$PWD/$pkg"
mkdir -p "$pkg" "$O/vm"
tmp=$(mktemp -d)
insts=()
trap 'rm -rf "$tmp" "${insts[@]}"' EXIT

# the upgrade: the same package with a higher version
ver=$(dpkg-deb -f "${xlb[0]}" Version)
up_name="xlb_${ver}+1_amd64.deb"
if dpkg-deb -R "${xlb[0]}" "$tmp/x" &&
   sed -i "s/^Version: .*/Version: ${ver}+1/" "$tmp/x/DEBIAN/control" &&
   dpkg-deb -b --root-owner-group "$tmp/x" "$tmp/$up_name" >/dev/null; then
	tap_ok "xlb $ver repacked as ${ver}+1 for the upgrade"
else
	tap_not_ok "xlb $ver repacked as ${ver}+1 for the upgrade"
fi

# what the packages depend on, in every root (the guest has no network)
mapfile -t deps < <(for d in "${xlb[0]}" "${dkms[0]}" "${backend[0]}"; do
	dpkg-deb -f "$d" Depends; done)
mapfile -t deps < <(printf '%s\n' "${deps[@]}" | tr ',' '\n' |
	sed 's/^ *//; s/[ (|:].*//' | grep -v '^$' | sort -u)

# What run.sh adds to the root: the repository's path and its parents, the
# command's unit, the mask of the serial console's getty.
harness='/etc/systemd/system/(multi-user\.target\.wants/)?(xlb-vm|serial-getty@ttyS0)\.service'
for ((;;)); do
	p=${p:-$PWD}
	harness+="|$(sed 's/[][\.*^$+?(){}|]/\\&/g' <<<"$p")"
	p=$(dirname "$p")
	[[ "$p" != / ]] || break
done
harness="^($harness)\$"
xlb_name=${xlb[0]##*/} dkms_name=${dkms[0]##*/} backend_name=${backend[0]##*/}

# pkg_series SERIES: a root of Debian 12 with that series' kernel (each
# its own, kept in build/pkg/), the packages installed into an overlay
# above it, the guest booting it
pkg_series() {
	local series=$1 kver root inst up out t0 log install_log rc ended line

	kver=$(vm_kver "$series")
	root="$pkg/root-$kver"
	inst="$pkg/inst-$kver"
	rm -rf "$inst"
	mkdir -p "$inst"/{upper,work,merged,debs}
	up="$inst/debs/$up_name"
	cp "$tmp/$up_name" "$up" 2>/dev/null
	t0=$(date +%s)
	if [[ -z "$kver" ]] || ! out=$(debroot_ensure "$root" "$kver" "${deps[@]}" 2>&1); then
		tap_not_ok "$series: a Debian 12 root for kernel ${kver:-$series} in $root" "$out"
		return 1
	fi
	tap_ok "$series: a Debian 12 root for kernel $kver in $root ($(($(date +%s) - t0)) s)" "$out"

	# In one mount namespace: the install overlay, apt-get install in
	# it, the guest booting it (qemu's 9p sees the overlay).  All of it
	# is unmounted when the namespace ends.
	log="$O/vm/pkg-$series.log"
	install_log="$PWD/$O/vm/pkg-$series-install.log"
	[[ "$O" != /* ]] || install_log="$O/vm/pkg-$series-install.log"
	cp "${xlb[0]}" "${dkms[0]}" "${backend[0]}" "$inst/debs/"
	export root inst series TIMEOUT harness up install_log xlb_name dkms_name backend_name
	unshare --mount --propagation private -- bash -c '
		. tests/vm/lib/debroot.sh
		mount -t overlay overlay \
			-o "lowerdir=$root,upperdir=$inst/upper,workdir=$inst/work" "$inst/merged" ||
			exit 1
		(cd "$inst/merged" && find . -xdev -path ./proc -prune -o -print |
			sed "s|^\.||; s|^$|/|" | sort) >"$inst/before"
		mkdir -p "$inst/merged/tmp/debs"
		cp "$inst/debs/$xlb_name" "$inst/debs/$dkms_name" "$inst/debs/$backend_name" \
			"$inst/merged/tmp/debs/"
		t0=$(date +%s)
		if debroot_chroot "$inst/merged" apt-get install -y --no-install-recommends \
			"/tmp/debs/$xlb_name" "/tmp/debs/$dkms_name" "/tmp/debs/$backend_name" \
			>"$install_log" 2>&1; then
			echo "@ok apt-get install of xlb, xlb-backend and xlb-redirect-dkms into the root ($(($(date +%s) - t0)) s, the DKMS build included)"
		else
			echo "@not ok apt-get install of xlb, xlb-backend and xlb-redirect-dkms into the root ($install_log)"
			tail -n 20 "$install_log" | sed "s/^/#   /"
			exit 0
		fi
		rm -rf "$inst/merged/tmp/debs"
		tools/vm/run.sh --kernel "$series" --timeout "$TIMEOUT" --root "$inst/merged" -- \
			tests/vm/pkg.sh --guest "$up" "$inst/before" "$harness"
		echo "@rc $?"
	' >"$log" 2>&1
	rc=1 ended=0
	while IFS= read -r line; do
		case "$line" in
		"@ok "*)     tap_ok "$series: ${line#@ok }" ;;
		"@not ok "*) tap_not_ok "$series: ${line#@not ok }" ;;
		"@end")      ended=1 ;;
		"@rc "*)     rc=${line#@rc } ;;
		"#"*)        echo "$line" ;;
		esac
	done <"$log"
	if [[ $rc -eq 0 && $ended -eq 1 ]]; then
		tap_ok "$series: the guest ran every step"
	else
		tap_not_ok "$series: the guest ran every step (run.sh status $rc; $log)" \
			"$(grep -v '^[@#]' "$log" | tail -n 20)"
	fi
}

# The series side by side, each in a subshell of its own: the two
# debootstraps wait mostly on the registry, and each guest takes a core.
# Their cases are numbered on here, one series after the other.
for s in "${VM_SERIES[@]}"; do
	insts+=("$pkg/inst-$(vm_kver "$s")")
	pkg_series "$s" >"$tmp/tap-$s" 2>&1 &
done
wait
for s in "${VM_SERIES[@]}"; do
	tap_replay "$tmp/tap-$s"
done
tap_done
