# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# What the demos (tools/demo.sh, tools/demo-cluster.sh) check before they
# start.  Source from the top of the tree, with O set.
#
#   demo_preflight NAME SECONDS TOOL...
#
# sets DURATION from SECONDS (the demo's first argument; else $DURATION,
# else 60; 1..86400) and exits with a clear message when it is bad (status
# 2), when not root, when a program of the build ($O) is missing (run
# `make NAME`, which builds first) or a TOOL is not on PATH (`make deps`).

demo_preflight() {
	local name=$1 f t

	DURATION=${2:-${DURATION:-60}}
	shift 2
	if ! [[ $DURATION =~ ^[0-9]+$ ]] || ((DURATION < 1 || DURATION > 86400)); then
		echo "usage: tools/$name.sh [SECONDS]   (about how long the demo runs; default 60)" >&2
		exit 2
	fi
	if [[ $(id -u) -ne 0 ]]; then
		echo "$name: needs root (network namespaces, XDP); run 'sudo make $name'" >&2
		exit 1
	fi
	for f in xlbd xlbctl xlb-traffic xlb_decap.bpf.o; do
		if [[ ! -e $O/$f ]]; then
			echo "$name: $O/$f is missing; run 'make $name' (it builds first)" >&2
			exit 1
		fi
	done
	for t in "$@"; do
		if ! command -v "$t" >/dev/null; then
			echo "$name: $t is missing; run 'make deps'" >&2
			exit 1
		fi
	done
}
