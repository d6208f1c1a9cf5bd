# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Sourced by tests/vm/*.sh (host side), after kernels.sh: the module built
# for a guest's kernel.

# vm_kmod_build SERIES: the tree DKMS would build (make kmod-dkms-src),
# copied to $O/vm/kmod-KVER and built there with W=1 against the headers
# of SERIES' kernel (KVER, the one tools/vm/run.sh boots); the guest of
# that kernel loads $O/vm/kmod-KVER/kmod/xlb_redirect.ko.  Sets
# VM_KMOD_KVER, VM_KMOD_OUT (the build's output) and, when it fails,
# VM_KMOD_WHY.  Non-zero when there is no tree, kernel or headers, or the
# build made no module.
vm_kmod_build() {
	local s=$1 dkms tree

	VM_KMOD_OUT= VM_KMOD_WHY=
	VM_KMOD_KVER=$(vm_kver "$s")
	dkms=$(find "$O"/dkms -mindepth 1 -maxdepth 1 -name 'xlb_redirect-*' \
		-type d 2>/dev/null | head -n 1)
	if [[ -z "$dkms" || -z "$VM_KMOD_KVER" ||
	      ! -d /lib/modules/$VM_KMOD_KVER/build ]]; then
		VM_KMOD_WHY="no tree in $O/dkms, or no kernel or headers for $s: '$VM_KMOD_KVER'"
		return 1
	fi
	tree="$O/vm/kmod-$VM_KMOD_KVER"
	mkdir -p "$O/vm"
	rm -rf "$tree" && cp -r "$dkms" "$tree" && tree=$(cd "$tree" && pwd -P) ||
		{ VM_KMOD_WHY="cannot copy $dkms to $tree"; return 1; }
	# a make of its own, not a job of the make that runs the tier (whose
	# "jobserver unavailable" notice would read as a warning)
	VM_KMOD_OUT=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -C "/lib/modules/$VM_KMOD_KVER/build" M="$tree" W=1 modules 2>&1)
	[[ $? -eq 0 && -f "$tree/kmod/xlb_redirect.ko" ]] ||
		{ VM_KMOD_WHY="the build failed"; return 1; }
}
