#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run one command on one of Debian 12's packaged kernels under qemu:
#   tools/vm/run.sh [--kernel SERIES] [--timeout SEC] [--root DIR] -- COMMAND [ARGS...]
#
# SERIES is a kernel series Debian 12 ships: 6.1 (linux-image-amd64, the
# default) or 6.12 (linux-image-6.12-amd64); XLB_VM_KERNEL sets the default.
# The guest boots the newest /boot/vmlinuz-SERIES.* with a tiny busybox
# initramfs (cached in build/vm/), mounts the host's root read-only over
# virtio-9p, makes it the root (switch_root) and runs COMMAND in this
# repository's directory (same absolute path as here), with tmpfs on /tmp
# and /run, bpffs on /sys/fs/bpf, and /lib/modules/<version> of the host
# root for modprobe.
# --root DIR boots the Debian root DIR instead (a debootstrap tree holding
# this kernel's modules) with systemd as PID 1: DIR, read-only over 9p,
# is the lower layer of an overlay whose upper layer is a tmpfs, so the
# guest may change anything and DIR stays as it was; COMMAND runs as a
# service after multi-user.target, in this repository's directory (bound
# read-only at its path), and powers the guest off when it ends.
# Only what COMMAND prints comes back (stdout and stderr, merged, from the
# serial console); the exit status is COMMAND's, 124 on timeout, or 1 when
# the guest failed before COMMAND started (console log kept in build/vm/).
# XLB_VM_APPEND adds kernel parameters.  TCG, not KVM: nested KVM does not
# work on the machines xlb is tested on.
set -euo pipefail

usage() {
	echo "usage: $0 [--kernel SERIES] [--timeout SEC] [--root DIR] -- COMMAND [ARGS...]" >&2
	exit 2
}

timeout_s=300
series=${XLB_VM_KERNEL:-6.1}
sysroot=
while [[ $# -gt 0 ]]; do
	case "$1" in
	--kernel) [[ $# -ge 2 ]] || usage
		  series=$2; shift 2 ;;
	--kernel=*) series=${1#--kernel=}; shift ;;
	--timeout) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -gt 0 ]] || usage
		   timeout_s=$2; shift 2 ;;
	--timeout=*) timeout_s=${1#--timeout=}
		     [[ "$timeout_s" =~ ^[0-9]+$ && "$timeout_s" -gt 0 ]] || usage
		     shift ;;
	--root) [[ $# -ge 2 && -n "$2" ]] || usage
		sysroot=$2; shift 2 ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
[[ $# -gt 0 ]] || usage
[[ "$series" =~ ^[0-9]+\.[0-9]+$ ]] || usage

ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
out=${O:-build}
[[ "$out" == /* ]] || out="$ROOT/$out"
VMDIR="$out/vm"

die() { echo "vm: $*" >&2; exit 1; }

for tool in qemu-system-x86_64 timeout cpio modprobe; do
	command -v "$tool" >/dev/null || die "$tool not found; run 'make deps'"
done
BUSYBOX=/bin/busybox
[[ -x $BUSYBOX && "$(ldd "$BUSYBOX" 2>&1 || true)" == *"not a dynamic"* ]] ||
	die "$BUSYBOX is missing or not static; install busybox-static ('make deps')"

# --- kernel ---------------------------------------------------------------
shopt -s nullglob
kernels=(/boot/vmlinuz-"$series".*)
shopt -u nullglob
KERNEL=
[[ ${#kernels[@]} -eq 0 ]] || KERNEL=$(printf '%s\n' "${kernels[@]}" | sort -V | tail -n 1)
[[ -n "$KERNEL" ]] || die "no /boot/vmlinuz-$series.*; install linux-image-amd64 and linux-image-6.12-amd64 ('make deps')"
KVER=${KERNEL#/boot/vmlinuz-}
[[ -f /lib/modules/$KVER/modules.dep ]] ||
	die "/lib/modules/$KVER/modules.dep missing (kernel $KVER half installed?)"
[[ "$ROOT$VMDIR" != *[[:space:]]* ]] ||
	die "paths with white space are not supported: $ROOT, $VMDIR"
case "$VMDIR/" in
/dev/* | /proc/* | /sys/*)
	die "$VMDIR is hidden in the guest (a fresh mount there); choose another O" ;;
esac

if [[ -n "$sysroot" ]]; then
	[[ -d "$sysroot" ]] || die "--root $sysroot: no such directory"
	sysroot=$(cd "$sysroot" && pwd -P)
	[[ "$sysroot" != *[[:space:]]* ]] || die "paths with white space are not supported: $sysroot"
	[[ -x "$sysroot/lib/systemd/systemd" ]] || die "--root $sysroot: no /lib/systemd/systemd there"
	[[ -f "$sysroot/lib/modules/$KVER/modules.dep" ]] ||
		die "--root $sysroot: no modules of the guest's kernel $KVER there"
fi

mkdir -p "$VMDIR"

# --- kernel image (cached) ------------------------------------------------
# Booting the bzImage spends most of the boot decompressing it under TCG.
# The uncompressed vmlinux inside boots directly (PVH entry) in a third of
# the time; fall back to the bzImage if it cannot be extracted.
boot_kernel=$KERNEL
VMLINUX="$VMDIR/vmlinux-$KVER"
kkey=$(stat -L -c '%n %s %Y' "$KERNEL")
if [[ -f "$VMLINUX" && "$(cat "$VMLINUX.key" 2>/dev/null)" == "$kkey" ]]; then
	boot_kernel=$VMLINUX
elif off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$KERNEL" 2>/dev/null | head -n 1 | cut -d: -f1) &&
     [[ -n "$off" ]]; then
	rm -f "$VMLINUX" "$VMLINUX.key"
	tail -c +$((off + 1)) "$KERNEL" | xz -dc --single-stream >"$VMLINUX.tmp.$$" 2>/dev/null || true
	notes=$(readelf -n "$VMLINUX.tmp.$$" 2>/dev/null || true)
	# XEN_ELFNOTE_PHYS32_ENTRY (18): the PVH entry point qemu boots
	if [[ "$notes" =~ Xen[^$'\n']*\(0x00000012\)|PHYS32_ENTRY ]]; then
		mv "$VMLINUX.tmp.$$" "$VMLINUX"
		echo "$kkey" >"$VMLINUX.key"
		boot_kernel=$VMLINUX
	else
		rm -f "$VMLINUX.tmp.$$"
	fi
fi

# --- initramfs (cached; rebuilt when any input changes) -------------------
# Module load order from modprobe, each module once, dependencies first.
mapfile -t MODULES < <(modprobe -a -S "$KVER" --show-depends virtio_pci 9pnet_virtio 9p overlay |
		       awk '$1 == "insmod" && !seen[$2]++ { print $2 }')
[[ ${#MODULES[@]} -gt 0 ]] || die "modprobe found no virtio/9p modules for $KVER"

# The guest's /init (busybox ash).  The command comes from the host at run
# time (a script in build/vm/, read over 9p), so the image does not change
# per command.
read -r -d '' INIT <<'EOF' || true
#!/bin/busybox sh
/bin/busybox mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
export PATH=/bin
fail() { echo "xlb-vm: $*"; poweroff -f; }
mount -t proc proc /proc || fail "mounting proc"
echo 1 >/proc/sys/kernel/printk
for m in $(cat /modules.order); do
	insmod "/modules/$m" || fail "insmod $m"
done
script= nonce= root= sysroot=
for w in $(cat /proc/cmdline); do
	case "$w" in
	xlb.sysroot=*) sysroot=${w#xlb.sysroot=} ;;
	xlb.script=*) script=${w#xlb.script=} ;;
	xlb.nonce=*)  nonce=${w#xlb.nonce=} ;;
	xlb.root=*)   root=${w#xlb.root=} ;;
	esac
done
[ -n "$script" ] && [ -n "$nonce" ] || fail "no xlb.script/xlb.nonce on the command line"
if [ -n "$sysroot" ]; then
	# --root: the Debian root under a tmpfs overlay, the repository bound
	# read-only at its path, COMMAND as a service, systemd as PID 1
	mkdir -p /host /ovl
	mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose host /host ||
		fail "mounting the host's root (9p)"
	mount -t tmpfs ovl /ovl || fail "mounting the overlay's tmpfs"
	mkdir -p /ovl/upper /ovl/work
	mount -t overlay overlay -o "lowerdir=/host$sysroot,upperdir=/ovl/upper,workdir=/ovl/work" /mnt ||
		fail "mounting the overlay of $sysroot"
	[ -n "$root" ] || fail "no xlb.root on the command line"
	mkdir -p "/mnt$root"
	mount --bind "/host$root" "/mnt$root" || fail "binding the repository"
	u=/mnt/etc/systemd/system
	mkdir -p "$u/multi-user.target.wants"
	cat >"$u/xlb-vm.service" <<UNIT
[Unit]
Description=xlb-vm command
After=multi-user.target
[Service]
Type=simple
ExecStart=/bin/bash $script
StandardInput=null
StandardOutput=tty
StandardError=inherit
TTYPath=/dev/ttyS0
UNIT
	ln -s ../xlb-vm.service "$u/multi-user.target.wants/xlb-vm.service"
	# the console is the command's alone
	ln -s /dev/null "$u/serial-getty@ttyS0.service"
	exec switch_root /mnt /lib/systemd/systemd
fi
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose host /mnt ||
	fail "mounting the host's root (9p)"
mount -t proc proc /mnt/proc || fail "mounting /proc"
mount -t sysfs sys /mnt/sys || fail "mounting /sys"
mount -t devtmpfs dev /mnt/dev || fail "mounting /dev"
mkdir -p /mnt/dev/pts /mnt/dev/shm
mount -t devpts devpts /mnt/dev/pts || fail "mounting /dev/pts"
mount -t tmpfs shm /mnt/dev/shm || fail "mounting /dev/shm"
mount -t bpf bpf /mnt/sys/fs/bpf || fail "mounting bpffs"
mount -t tracefs tracefs /mnt/sys/kernel/tracing 2>/dev/null
# The repository may live under /tmp or /run (a CI clone): keep it in view
# across the fresh tmpfs mounts there.
[ -n "$root" ] || fail "no xlb.root on the command line"
mkdir -p /repo
mount --bind "/mnt$root" /repo || fail "binding the repository"
mount -t tmpfs tmp /mnt/tmp || fail "mounting /tmp"
mount -t tmpfs run /mnt/run || fail "mounting /run"
if [ ! -d "/mnt$root" ]; then
	mkdir -p "/mnt$root" || fail "making $root"
	mount --bind /repo "/mnt$root" || fail "binding the repository back"
fi
# The host's root becomes the root (switch_root, not chroot: in a chroot
# the kernel refuses new user namespaces, which the module's tests make).
# The command's script prints the end marker and powers off.
exec switch_root /mnt /bin/bash "$script" </dev/null
EOF

INITRAMFS="$VMDIR/initramfs-$KVER.cpio.gz"
key=$( {
	printf '%s\n' "$INIT" "$KVER"
	stat -L -c '%n %s %Y' "$BUSYBOX" "${MODULES[@]}"
} | sha256sum | cut -d' ' -f1)
if [[ ! -f "$INITRAMFS" || "$(cat "$INITRAMFS.key" 2>/dev/null)" != "$key" ]]; then
	echo "# vm: building $INITRAMFS" >&2
	stage=$(mktemp -d "$VMDIR/initramfs.XXXXXX")
	mkdir -p "$stage"/{bin,dev,proc,sys,mnt,modules}
	cp "$BUSYBOX" "$stage/bin/busybox"
	printf '%s\n' "$INIT" >"$stage/init"
	chmod 755 "$stage/init"
	# busybox insmod wants plain .ko files
	for m in "${MODULES[@]}"; do
		ko=$(basename "$m"); ko=${ko%.xz}; ko=${ko%.zst}
		case "$m" in
		*.ko.xz)  xz -dc "$m" >"$stage/modules/$ko" ;;
		*.ko.zst) zstd -qdc "$m" >"$stage/modules/$ko" ;;
		*)        cp "$m" "$stage/modules/$ko" ;;
		esac
		echo "$ko" >>"$stage/modules.order"
	done
	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
		cpio --quiet -o -H newc -R 0:0 | gzip -1) >"$INITRAMFS.tmp.$$"
	rm -rf "$stage"
	mv "$INITRAMFS.tmp.$$" "$INITRAMFS"
	echo "$key" >"$INITRAMFS.key"
fi

# --- the command, as a script the guest reads over 9p ----------------------
rundir=$(mktemp -d "$VMDIR/run.XXXXXX")
keep_log=0
# shellcheck disable=SC2317  # called by the trap
cleanup() {
	if [[ $keep_log -eq 1 ]]; then rm -f "$rundir/cmd"; else rm -rf "$rundir"; fi
}
trap cleanup EXIT
nonce=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
# how the command's script ends the guest: busybox in the host's root,
# systemd (no waiting for anything) in a --root
poweroff="$BUSYBOX poweroff -f"
[[ -z "$sysroot" ]] || poweroff="systemctl poweroff --force --force"
start_marker="@@xlb-vm start $nonce@@"
end_marker="@@xlb-vm end $nonce rc="
{
	echo '#!/bin/bash'
	echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
	echo 'export HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8 TERM=dumb XLB_VM=1'
	for v in CI O V XLB_VM_STUCK; do
		[[ -n "${!v+set}" ]] && printf 'export %s=%q\n' "$v" "${!v}"
	done
	echo 'ulimit -l unlimited'
	printf 'cd %q || exec %s\n' "$ROOT" "$poweroff"
	printf 'echo %q\n' "$start_marker"
	printf '%q ' "$@"; printf '\n'
	printf 'echo "@@xlb-vm end %s rc=$?@@"\n' "$nonce"
	printf 'exec %s\n' "$poweroff"
} >"$rundir/cmd"

# --- boot -----------------------------------------------------------------
clog="$rundir/console.log"
qlog="$rundir/qemu.log"
state=boot rc=1
t0=$(date +%s.%N) t_start=
shopt -s lastpipe
set +e
# One host thread runs both vCPUs (thread=single).  With one thread per
# vCPU (thread=multi), a 6.12 guest intermittently died with "Oops: int3"
# in udp_destroy_sock+0x33 after the module was reloaded: the kernel
# patches static-key jumps (text_poke) while the other vCPU may be running
# that code, and multi-threaded TCG does not keep such cross-modified code
# coherent between its threads.  Single-threaded TCG runs the vCPUs in turn,
# so no translated block runs while its code changes.  It also keeps one
# guest to one host core, so the two kernels' guests can run side by side.
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 \
	-accel tcg,thread=single -smp 2 -cpu max -m 1G \
	-nographic -no-reboot -nic none \
	-kernel "$boot_kernel" -initrd "$INITRAMFS" \
	-append "console=ttyS0 panic=-1 quiet loglevel=1 ${XLB_VM_APPEND:-} xlb.script=$rundir/cmd xlb.nonce=$nonce xlb.root=$ROOT${sysroot:+ xlb.sysroot=$sysroot systemd.show_status=0}" \
	-virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
	</dev/null 2>"$qlog" |
while IFS= read -r line || [[ -n "$line" ]]; do
	line=${line%$'\r'}
	printf '%s\n' "$line" >>"$clog"
	case $state in
	boot)
		if [[ "$line" == *"$start_marker"* ]]; then
			state=run t_start=$(date +%s.%N)
		fi ;;
	run)
		if [[ "$line" == *"$end_marker"* ]]; then
			[[ -n "${line%%"$end_marker"*}" ]] && printf '%s\n' "${line%%"$end_marker"*}"
			rc=${line##*"$end_marker"}
			rc=${rc%%@@*}
			state=ended
		else
			printf '%s\n' "$line"
		fi ;;
	esac
done
qrc=${PIPESTATUS[0]}
set -e
t1=$(date +%s.%N)

case $state in
ended)
	awk -v k="$KVER" -v a="$t0" -v b="$t_start" -v c="$t1" 'BEGIN {
		printf "# vm: %s: command started %.1f s after boot, ran %.1f s\n",
		       k, b - a, c - b }' >&2
	[[ "$rc" =~ ^[0-9]+$ ]] || rc=1
	exit "$rc" ;;
esac
keep_log=1
if [[ $qrc -eq 124 || $qrc -eq 137 ]]; then
	[[ $state == boot ]] && what="still booting" || what="COMMAND still running"
	echo "vm: timed out after $timeout_s s ($what); console log: $clog" >&2
	exit 124
fi
if [[ $state == boot ]]; then
	echo "vm: the guest never reached the start marker (qemu exit status $qrc); last console lines:" >&2
else
	echo "vm: the guest stopped before COMMAND finished (qemu exit status $qrc); last console lines:" >&2
fi
tail -n 20 "$clog" | sed 's/^/vm:   /' >&2
[[ -s "$qlog" ]] && sed 's/^/vm: qemu: /' "$qlog" >&2
echo "vm: console log: $clog" >&2
exit 1
