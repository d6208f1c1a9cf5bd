#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xlb-bench path: xlb on a real path, in the test network of
# tests/e2e/lib/topo.sh (client c1, the LB, backend b1, one bridge).
# `build/xlb-bench [-j] [--quick] path` execs this script.
#
#   tools/xlb-bench/path.sh [-j] [--quick] [--rounds N] [--window S] [pps] [cps]
#
# pps  Forwarded packets per second through the LB's veth.  c1 sends UDP to
#      a VIP with `xlb-bench path gen` (pktgen in XDP: the reflect program
#      run by BPF_PROG_TEST_RUN with live frames), pinned to the last CPU.
#      The LB's XDP program encapsulates (IPIP, ip6ip6) and sends each
#      packet back out of its veth toward a backend whose next hop is the
#      LB's own MAC, which the bridge drops (it never sends a frame back out
#      of the port it came in on), as it drops the baseline's reflected
#      frames: after the LB nothing differs between the two.  Counted at
#      the LB: the veth's XDP_TX + XDP_REDIRECT frames (ethtool -S) over a
#      window of WINDOW seconds, 0.3 s after the program changed.  Baseline:
#      build/xlb_reflect.bpf.o (XDP_TX, untouched) on the same veth in
#      xlb's place.  One generator runs through a whole case while the LB's
#      program alternates xlb, reflect, reflect, xlb ...; a round is two
#      adjacent windows.  64- and 1400-byte frames (Ethernet header to
#      payload, no FCS), IPv4 and IPv6.  The generator's CPU does the whole
#      path in softirq (both veth hops and the bridge), so the figures are
#      the path's rate on one CPU, of which the LB's program is a part; the
#      ratio is what xlb costs on that path (goal >= 0.85).  Skipped, with
#      the kernel's answer, where the kernel refuses live frames (some
#      refuse them with EPERM).
# cps  Connections per second through a VIP to nginx on b1 (wrk, one
#      thread, 64 connections, "Connection: close": one connection per
#      request); baseline: the same directly to b1's own address, no LB.
#      Client, LB, bridge and server share the machine's CPUs, so the LB's
#      extra hop (two veth crossings, the bridge, encapsulation) costs
#      connections per second here that a separate LB host would not.
#
# Medians over ROUNDS rounds (default 5; windows of 1 s for pps, 2 s for
# cps; --quick: 1 round of 1 s windows, the smoke mode); the ratio is the
# median of the rounds' own ratios, each round measuring figure and
# baseline back to back.  Prints one line per figure, or with -j one JSON
# object per figure (bench, name, value, unit, statistic, min, max, runs,
# baseline, ratio, baseline_is, params), as the other xlb-bench
# subcommands.  Progress goes to standard error.  Needs root; takes about
# 80 s (--quick: 15 s).
# shellcheck disable=SC2317,SC2119  # functions run as part_$p or by traps; helpers without arguments
set -u
cd "$(dirname "$0")/../.." || exit 1

usage() {
	echo "usage: tools/xlb-bench/path.sh [-j] [--quick] [--rounds N] [--window S] [pps] [cps]"
}

JSON=0 QUICK=0 ROUNDS='' WINDOW='' PARTS=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	-j|--json) JSON=1 ;;
	--quick) QUICK=1 ;;
	--rounds) ROUNDS=${2:-}; shift ;;
	--window) WINDOW=${2:-}; shift ;;
	pps|cps) PARTS+=("$1") ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
[[ ${#PARTS[@]} -eq 0 ]] && PARTS=(pps cps)
if [[ $QUICK -eq 1 ]]; then
	ROUNDS=${ROUNDS:-1} WINDOW=${WINDOW:-1} CPS_WINDOW=${WINDOW}
else
	CPS_WINDOW=${WINDOW:-2}
	ROUNDS=${ROUNDS:-5} WINDOW=${WINDOW:-1}
fi
if ! [[ $ROUNDS =~ ^[0-9]+$ && $WINDOW =~ ^[0-9]+$ ]] ||
	((ROUNDS < 1 || ROUNDS > 100 || WINDOW < 1 || WINDOW > 60)); then
	echo "bench-path: --rounds wants 1..100 and --window 1..60 (seconds)" >&2
	exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "bench-path: needs root (network namespaces, XDP)" >&2
	exit 1
fi

export TOPO_TAG=${TOPO_TAG:-xbench}
# shellcheck source=tests/e2e/lib/topo.sh
. tests/e2e/lib/topo.sh
PY=$(command -v /usr/bin/python3 || command -v python3)

for f in xlbd xlbctl xlb-bench xlb-traffic xlb_decap.bpf.o xlb_reflect.bpf.o; do
	if [[ ! -e $XLB_BIN/$f ]]; then
		echo "bench-path: $XLB_BIN/$f is missing; run 'make'" >&2
		exit 1
	fi
done
for t in ethtool bridge; do
	command -v "$t" >/dev/null || { echo "bench-path: $t is missing; run 'make deps'" >&2; exit 1; }
done

log() { echo "# path: $*" >&2; }

# emit NAME UNIT "VALUES" "BASELINES" BASELINE_IS PARAMS-JSON
emit() {
	"$PY" - "$JSON" "$@" <<-'EOF'
		import json, statistics, sys
		js, name, unit, vals, base, base_is, params = sys.argv[1:8]
		v = [float(x) for x in vals.split()]
		b = [float(x) for x in base.split()]
		params = json.loads(params)
		# each round measures the figure and its baseline back to back: the
		# ratio is the median of the rounds' own ratios, robust against a
		# machine whose load changes between rounds
		rat = [x / y for x, y in zip(v, b) if y > 0]
		if rat:
		    params["ratio_is"] = "median of the rounds' ratios (each round: figure and baseline back to back)"
		    params["ratio_min"] = round(min(rat), 4)
		    params["ratio_max"] = round(max(rat), 4)
		    params["baseline_min"] = min(b)
		    params["baseline_max"] = max(b)
		med, bmed = statistics.median(v), statistics.median(b) if b else 0
		ratio = statistics.median(rat) if rat else None
		rec = {"bench": "path", "name": name, "value": round(med, 1), "unit": unit,
		       "statistic": "median", "min": min(v), "max": max(v), "runs": len(v),
		       "baseline": round(bmed, 1) if bmed else None,
		       "ratio": round(ratio, 4) if ratio else None,
		       "baseline_is": base_is, "params": params}
		if js == "1":
		    print(json.dumps(rec, separators=(",", ":")))
		else:
		    s = "%-28s %12.0f %-7s [%.0f .. %.0f]" % (name, med, unit, min(v), max(v))
		    if ratio:
		        s += "  x%.3f [%.2f .. %.2f] of %.0f (%s)" % (
		            ratio, min(rat), max(rat), bmed, base_is)
		    print(s)
		sys.stdout.flush()
	EOF
}

uplog=$(mktemp) || exit 1
if ! topo_up --backends 1 --clients 1 >"$uplog" 2>&1 ||
	! topo_xlbd_setup >>"$uplog" 2>&1; then
	cat "$uplog" >&2
	rm -f "$uplog"
	echo "bench-path: no test network or no xlbd" >&2
	exit 1
fi
rm -f "$uplog"
# (not from /sys: in_ns enters only the network namespace)
mac_of() { in_ns "$1" ip -o link show "$2" | sed -n 's|.* link/ether \([0-9a-f:]*\) .*|\1|p'; }
LB_MAC=$(mac_of lb "$LB_IF")
C1_MAC=$(mac_of c1 eth0)
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
COMMON="\"cpus\":$(nproc),\"cpu\":\"${CPU//\"/}\",\"kernel\":\"$(uname -r)\",\"load_start\":\"$(cut -d' ' -f1-3 /proc/loadavg)\""
rc=0

# ---- pps ---------------------------------------------------------------------
ATTACHED=xlb
GEN_CPU=$(($(nproc) - 1))
SETTLE=0.3

# attach xlb|reflect: the program on the LB's veth
attach() {
	[[ $ATTACHED == "$1" ]] && return 0
	if [[ $1 == reflect ]]; then
		xlbctl link detach "$LB_IF" >/dev/null &&
			in_ns lb ip link set dev "$LB_IF" xdpdrv \
				obj "$XLB_BIN/xlb_reflect.bpf.o" sec xdp || return 1
	else
		in_ns lb ip link set dev "$LB_IF" xdpdrv off &&
			xlbctl link attach "$LB_IF" native >/dev/null || return 1
	fi
	ATTACHED=$1
}

# "forwarded seen time": the veth's XDP_TX + XDP_REDIRECT frames, every
# frame its XDP program saw, and the time
lb_counters() {
	local s t

	s=$(in_ns lb ethtool -S "$LB_IF")
	t=$(date +%s.%N)
	awk -v t="$t" '
		/rx_queue_[0-9]+_xdp_(tx|redirect):/ { f += $2 }
		/rx_queue_[0-9]+_xdp_packets:/ { p += $2 }
		END { print f, p, t }' <<<"$s"
}

# One window, SETTLE seconds after a change: "pps forwarded-share"
window() {
	local f0 p0 t0 f1 p1 t1

	sleep "$SETTLE"
	read -r f0 p0 t0 < <(lb_counters)
	sleep "$WINDOW"
	read -r f1 p1 t1 < <(lb_counters)
	awk -v f="$((f1 - f0))" -v p="$((p1 - p0))" -v t0="$t0" -v t1="$t1" \
		'BEGIN { printf "%.1f %.4f\n", f / (t1 - t0), (p ? f / p : 0) }'
}

# pps_case FAMILY SIZE: one generator for the whole case, pinned to one
# CPU; under it the LB's program alternates xlb, reflect, reflect, xlb ...
# one window each, so every round pairs two adjacent windows
pps_case() {
	local fam=$1 size=$2 src dst gen r pin out x b xs='' bs='' share=1

	if [[ $fam == 4 ]]; then src=${CLIENT_IP4[0]} dst=$VIP4; else src=${CLIENT_IP6[0]} dst=$VIP6; fi
	nsenter --net="/var/run/netns/$(topo_ns c1)" -- taskset -c "$GEN_CPU" \
		"$XLB_BIN/xlb-bench" path gen "$LB_IF" "$C1_MAC" "$LB_MAC" "$src" \
		"$dst" 9 "$size" $((ROUNDS * 2 * (WINDOW + 1) + 5)) \
		>"$TOPO_DIR/gen.out" 2>&1 &
	gen=$!
	for ((r = 0; r < ROUNDS; r++)); do
		for pin in $( ((r % 2)) && echo reflect xlb || echo xlb reflect); do
			if ! attach "$pin"; then
				echo "bench-path: cannot attach $pin to the LB's $LB_IF" >&2
				kill "$gen" 2>/dev/null
				return 1
			fi
			out=$(window)
			if ! kill -0 "$gen" 2>/dev/null; then
				wait "$gen"
				# 3: this kernel refuses live frames (path.c)
				if (($? == 3)); then
					echo "bench-path: pps: skipped, this kernel sends no live frames: $(cat "$TOPO_DIR/gen.out")" >&2
					return 3
				fi
				echo "bench-path: the generator stopped: $(cat "$TOPO_DIR/gen.out")" >&2
				return 1
			fi
			if [[ $pin == xlb ]]; then
				x=${out% *}
				share=$(awk -v a="$share" -v b="${out#* }" 'BEGIN { print (b < a) ? b : a }')
			else
				b=${out% *}
			fi
		done
		xs+=" $x" bs+=" $b"
		log "IPv$fam ${size} B round $((r + 1)): xlb $x pps, reflect $b pps"
	done
	kill "$gen" 2>/dev/null
	wait "$gen" 2>/dev/null
	emit "path.fwd_pps.ipv${fam}_${size}" pps "$xs" "$bs" \
		"xlb_reflect (XDP_TX) on the same veth" \
		"{\"family\":$fam,\"frame_bytes\":$size,\"window_s\":$WINDOW,\"settle_s\":$SETTLE,\"encap\":\"$([[ $fam == 4 ]] && echo ipip || echo ip6ip6)\",\"forwarded_share_min\":$share,\"generator\":\"xlb-bench path gen (BPF_PROG_TEST_RUN live frames) in c1, on CPU $GEN_CPU\",\"counted\":\"LB veth xdp_tx+xdp_redirect\",$COMMON}"
}

part_pps() {
	local fam size

	# The backends sink4 and sink6 are next hops at the LB's own MAC: the
	# bridge drops what comes back to it on the port it came from, as it
	# drops the reflected frames of the baseline.  No learning on the LB's
	# port, so the baseline's frames (the client's source MAC) move nothing.
	if ! { in_ns sw bridge link set dev lb learning off &&
		in_ns sw bridge fdb replace "$LB_MAC" dev lb master static &&
		in_ns lb ip neigh replace 10.200.0.99 lladdr "$LB_MAC" dev "$LB_IF" nud permanent &&
		in_ns lb ip -6 neigh replace fd00:200::99 lladdr "$LB_MAC" dev "$LB_IF" nud permanent &&
		xlbctl vip add "$VIP4:9/udp" encap ipip >/dev/null &&
		xlbctl backend add "$VIP4:9/udp" 10.200.0.99 name sink4 >/dev/null &&
		xlbctl vip add "[$VIP6]:9/udp" encap ipip >/dev/null &&
		xlbctl backend add "[$VIP6]:9/udp" fd00:200::99 name sink6 >/dev/null; }; then
		echo "bench-path: pps: cannot set up the VIPs" >&2
		return 1
	fi
	for fam in 4 6; do
		for size in 64 1400; do
			pps_case "$fam" "$size" || return $?
		done
	done
	attach xlb
}

# ---- cps ---------------------------------------------------------------------
# wrk_cps URL: connections (= requests, "Connection: close") per second
wrk_cps() {
	local out rps errs

	out=$(in_ns c1 wrk -t1 -c64 -d"${CPS_WINDOW}s" --timeout 2s \
		-H 'Connection: close' "$1" 2>&1) || { echo "$out" >&2; return 1; }
	rps=$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")
	errs=$(awk '/Socket errors|Non-2xx/' <<<"$out")
	[[ -n $errs ]] && log "wrk $1: $errs"
	[[ -n $rps ]] || { echo "$out" >&2; return 1; }
	echo "$rps"
}

part_cps() {
	local conf=$TOPO_DIR/nginx.conf b1=${BACKEND_IP4[0]} i r x b xs='' bs=''

	if ! command -v wrk >/dev/null || ! command -v nginx >/dev/null; then
		echo "bench-path: cps needs nginx and wrk; run 'make deps'" >&2
		return 1
	fi
	mkdir -p "$TOPO_DIR/nginx"
	cat >"$conf" <<-EOF
		worker_processes 1;
		pid $TOPO_DIR/nginx/nginx.pid;
		error_log $TOPO_DIR/nginx/error.log;
		events { worker_connections 4096; }
		http {
			access_log off;
			client_body_temp_path $TOPO_DIR/nginx/body;
			proxy_temp_path $TOPO_DIR/nginx/proxy;
			fastcgi_temp_path $TOPO_DIR/nginx/fastcgi;
			uwsgi_temp_path $TOPO_DIR/nginx/uwsgi;
			scgi_temp_path $TOPO_DIR/nginx/scgi;
			server {
				listen 8080 backlog=4096;
				location / { return 200 "ok\n"; }
			}
		}
	EOF
	topo_bg b1 nginx nginx -p "$TOPO_DIR/nginx" -e "$TOPO_DIR/nginx/error.log" \
		-c "$conf" -g 'daemon off;'
	in_ns c1 sysctl -qw net.ipv4.ip_local_port_range="1024 65000" net.ipv4.tcp_tw_reuse=1
	if ! { xlbctl vip add "$VIP4:8080/tcp" encap ipip >/dev/null &&
		xlbctl backend add "$VIP4:8080/tcp" "$b1" name b1 >/dev/null; }; then
		echo "bench-path: cps: cannot set up the VIP" >&2
		return 1
	fi
	for ((i = 0; i < 50; i++)); do
		in_ns c1 curl -fsS -m 1 "http://$VIP4:8080/" >/dev/null 2>&1 && break
		sleep 0.1
	done
	if ! in_ns c1 curl -fsS -m 1 "http://$b1:8080/" >/dev/null ||
	   ! in_ns c1 curl -fsS -m 1 "http://$VIP4:8080/" >/dev/null; then
		echo "bench-path: cps: nginx on b1 does not answer (directly or through the VIP):" >&2
		tail -n 5 "$TOPO_DIR/nginx.log" "$TOPO_DIR/nginx/error.log" >&2
		return 1
	fi
	for ((r = 0; r < ROUNDS; r++)); do
		if ((r % 2)); then
			b=$(wrk_cps "http://$b1:8080/") && x=$(wrk_cps "http://$VIP4:8080/") || return 1
		else
			x=$(wrk_cps "http://$VIP4:8080/") && b=$(wrk_cps "http://$b1:8080/") || return 1
		fi
		xs+=" $x" bs+=" $b"
		log "TCP connections round $((r + 1)): through the VIP $x/s, directly $b/s"
	done
	emit "path.cps.ipv4" conn/s "$xs" "$bs" "directly to the backend, no LB" \
		"{\"family\":4,\"tool\":\"wrk -t1 -c64, Connection: close\",\"server\":\"nginx, 1 worker, on b1\",\"backends\":1,\"encap\":\"ipip\",\"window_s\":$CPS_WINDOW,$COMMON}"
}

[[ $JSON -eq 1 ]] || echo "xlb on a veth path (c1 -> LB -> backend), medians of $ROUNDS round(s); ratio: median of the rounds' own ratios"
for p in "${PARTS[@]}"; do
	"part_$p"
	case $? in
	0) ;;
	3) attach xlb ;;	# skipped, said why; the LB as the next part wants it
	*) echo "bench-path: $p failed" >&2; rc=1 ;;
	esac
done
exit $rc
