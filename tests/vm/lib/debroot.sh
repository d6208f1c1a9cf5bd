# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Sourced by tests/vm/pkg.sh (host side): a fresh Debian 12 root to boot
# with tools/vm/run.sh --root, made once and kept (it is only read: the
# guest writes to an overlay above it).
#
# debroot_ensure DIR KVER PACKAGE...: DIR holds a minimal Debian 12
# (debootstrap --variant=minbase from the Debian registry) with systemd,
# the kernel KVER (its image, modules and headers, from bookworm-security
# or bookworm) and PACKAGEs.  What is there already is kept: a root made
# for the same kernel and packages is used as it is, a missing package is
# added, anything else (no root, another kernel) makes it anew.  Prints
# what it does as "# " lines; fails with the reason on stderr.
# DEBROOT_MIRROR is the registry (default http://deb.debian.org/debian).

# The kernel package wants an initramfs generator: the guest boots with
# tools/vm/run.sh's initramfs, and tiny-initramfs makes its unused one in
# no time (initramfs-tools takes minutes).
DEBROOT_BASE="systemd systemd-sysv dbus kmod iproute2 dkms tiny-initramfs"

# debroot_mounts DIR: the mount points inside DIR, or nothing.
debroot_mounts() {
	awk -v d="$1/" 'index($2 "/", d) == 1 { print $2 }' /proc/mounts
}

# debroot_chroot DIR CMD...: CMD in DIR, with /proc, /sys and /dev
# mounted in a mount namespace of its own, so nothing stays mounted
# whatever happens.
debroot_chroot() {
	local dir=$1

	shift
	unshare --mount --propagation private -- sh -c '
		d=$1; shift
		mount -t proc proc "$d/proc" && mount -t sysfs sys "$d/sys" &&
		mount --bind /dev "$d/dev" && mount --bind /dev/pts "$d/dev/pts" &&
		exec chroot "$d" "$@"' sh "$dir" \
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		LANG=C.UTF-8 "$@"
}

debroot_ensure() {
	local dir=$1 kver=$2 mirror=${DEBROOT_MIRROR:-http://deb.debian.org/debian}
	local want have missing p stamp

	shift 2
	stamp="$dir.stamp"
	want=$(printf '%s\n' $DEBROOT_BASE "linux-image-$kver" "linux-headers-$kver" "$@" |
		sort -u | tr '\n' ' ')
	if [[ -n "$(debroot_mounts "$dir")" ]]; then
		echo "debroot: something is mounted inside $dir; not touching it" >&2
		return 1
	fi
	if [[ -f "$stamp" && "$(head -n 1 "$stamp")" != "kernel $kver" ]]; then
		echo "# debroot: $dir was made for another kernel; making it anew"
		rm -rf "$dir" "$stamp"
	fi
	if [[ ! -f "$stamp" ]]; then
		rm -rf "$dir" "$dir.tmp"
		mkdir -p "$(dirname "$dir")"
		echo "# debroot: debootstrap bookworm into $dir ($mirror)"
		# its own mount namespace: a debootstrap that fails leaves
		# nothing mounted in the tree
		if ! unshare --mount --propagation private -- \
			debootstrap --variant=minbase \
			--include="$(echo $DEBROOT_BASE | tr ' ' ,)" \
			bookworm "$dir.tmp" "$mirror" >"$dir.log" 2>&1; then
			echo "debroot: debootstrap failed; the end of $dir.log:" >&2
			tail -n 15 "$dir.log" >&2
			rm -rf "$dir.tmp"
			return 1
		fi
		mv "$dir.tmp" "$dir"
		cat >"$dir/etc/apt/sources.list" <<-EOF
		deb $mirror bookworm main
		deb $mirror bookworm-updates main
		deb http://deb.debian.org/debian-security bookworm-security main
		EOF
		echo "xlb-pkgtest" >"$dir/etc/hostname"
		{
			echo "kernel $kver"
			printf 'package %s\n' $DEBROOT_BASE
		} >"$stamp"
	fi
	have=$(sed -n 's/^package //p' "$stamp" | tr '\n' ' ')
	missing=()
	for p in $want; do
		[[ " $have " == *" $p "* ]] || missing+=("$p")
	done
	[[ ${#missing[@]} -eq 0 ]] && return 0
	echo "# debroot: installing into $dir: ${missing[*]}"
	if ! debroot_chroot "$dir" apt-get update >>"$dir.log" 2>&1 ||
	   ! debroot_chroot "$dir" apt-get install -y --no-install-recommends \
		"${missing[@]}" >>"$dir.log" 2>&1; then
		echo "debroot: installing ${missing[*]} failed; the end of $dir.log:" >&2
		tail -n 15 "$dir.log" >&2
		return 1
	fi
	debroot_chroot "$dir" apt-get clean >>"$dir.log" 2>&1
	printf 'package %s\n' "${missing[@]}" >>"$stamp"
}
