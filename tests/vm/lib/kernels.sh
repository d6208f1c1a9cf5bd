# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Sourced by tests/vm/*.sh (host side): the kernels the guest tier runs on.
#
# VM_SERIES: the kernel series, each in a guest of its own; Debian 12
# ships both (linux-image-amd64 is 6.1, linux-image-6.12-amd64 is 6.12).
# XLB_VM_KERNELS="6.1" narrows the tier to one of them.
# shellcheck disable=SC2034  # used by the scripts that source this
read -r -a VM_SERIES <<<"${XLB_VM_KERNELS:-6.1 6.12}"

# vm_kver SERIES: the release tools/vm/run.sh boots for SERIES (the newest
# /boot/vmlinuz-SERIES.*), or nothing.
vm_kver() {
	local k

	k=$(find /boot -maxdepth 1 -name "vmlinuz-$1.*" -printf '%f\n' 2>/dev/null |
		sort -V | tail -n 1)
	echo "${k#vmlinuz-}"
}
