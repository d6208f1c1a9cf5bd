#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian 12 packages xlb needs to build, test, demo and benchmark.
# Idempotent: asks apt only for what dpkg does not already have.
set -euo pipefail

PACKAGES=(
	make gcc clang llvm pkg-config
	libclang-rt-14-dev
	libbpf-dev bpftool libxdp-dev xdp-tools libelf-dev zlib1g-dev
	libjson-c-dev libmicrohttpd-dev libmnl-dev libcurl4-openssl-dev
	etcd-server etcd-client
	linux-source-6.1 xz-utils
	iproute2 ethtool socat curl nginx-light wrk
	linux-headers-amd64
	gnuplot-nox python3 groff-base man-db
	qemu-system-x86 linux-image-amd64 busybox-static kmod cpio
)

missing=()
for p in "${PACKAGES[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "deps: missing packages: ${missing[*]}; run 'make deps' as root" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# An old or empty package list fails the install; refresh once and retry.
# Another apt or dpkg at work (a second make on this machine) holds the
# lock: wait for it instead of failing.
apt=(apt-get -o DPkg::Lock::Timeout=600)
if ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; then
	"${apt[@]}" update
	"${apt[@]}" install -y --no-install-recommends "${missing[@]}"
fi
