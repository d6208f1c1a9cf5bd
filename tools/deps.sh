#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian 12 packages xlb needs, by purpose:
#
#   tools/deps.sh [--check | --missing] [GROUP...]
#
# GROUPs (none: all of them): build (make: compilers, libraries), unit (the
# unit tiers: the kselftest harness, python3, the man page checks, plots),
# fuzz, bpf, net, daemon, e2e (real traffic, make demo), vm (qemu guests
# of Debian's kernels 6.1 and 6.12), kmod (the module's kernel headers,
# both kernels), pkg (make deb; the vm tier's test of the packages in a
# Debian 12 root), bench.  Without an option it installs what is missing
# (as root; idempotent: it asks apt only for what dpkg does not have).
# --check installs nothing and fails, naming the missing packages;
# --missing prints them (nothing when all are there).
set -euo pipefail

declare -A GROUP=(
	[build]="make gcc clang llvm pkg-config libbpf-dev bpftool libxdp-dev
		 libelf-dev zlib1g-dev libjson-c-dev libmicrohttpd-dev libmnl-dev
		 libcurl4-openssl-dev libcap-dev libxxhash-dev"
	[unit]="linux-source-6.1 xz-utils python3 groff-base man-db gnuplot-nox"
	[fuzz]="libclang-rt-14-dev"
	[bpf]="iproute2"
	[net]="iproute2"
	[daemon]="iproute2 curl etcd-server etcd-client prometheus python3-prometheus-client"
	[e2e]="iproute2 ethtool socat curl nginx-light wrk python3 xdp-tools
	       etcd-server etcd-client bird2 frr bpftool prometheus python3-yaml"
	[vm]="qemu-system-x86 linux-image-amd64 linux-image-6.12-amd64
	      busybox-static kmod cpio linux-source-6.1 linux-source-6.12
	      xz-utils"
	[kmod]="linux-headers-amd64 linux-headers-6.12-amd64"
	[pkg]="debhelper dh-dkms dpkg-dev lintian debootstrap
	       debian-archive-keyring"
	[bench]="gnuplot-nox python3"
)
ORDER="build unit fuzz bpf net daemon e2e vm kmod pkg bench"

mode=install
case ${1:-} in
--check | --missing) mode=${1#--}; shift ;;
-h | --help) sed -n '4,16s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
groups=("$@")
[[ ${#groups[@]} -gt 0 ]] || read -r -a groups <<<"$ORDER"

wanted=()
for g in "${groups[@]}"; do
	if [[ -z ${GROUP[$g]+x} ]]; then
		echo "deps: no group '$g'; the groups are: $ORDER" >&2
		exit 2
	fi
	read -r -a p <<<"$(echo ${GROUP[$g]})"
	wanted+=("${p[@]}")
done

missing=()
for p in $(printf '%s\n' "${wanted[@]}" | sort -u); do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if [[ $mode == missing ]]; then
	echo "${missing[*]}"
	exit 0
fi
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $mode == check || $(id -u) -ne 0 ]]; then
	echo "deps: missing Debian packages (for ${groups[*]}): ${missing[*]}" >&2
	echo "deps: as root: make deps (everything), or tools/deps.sh ${groups[*]}" >&2
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
