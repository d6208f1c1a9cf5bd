# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The xlb test network: the one place that builds and tears down the network
# namespaces the end-to-end tests, the demo and the benchmarks run in.
# Source it from bash, run as root:
#
#   . tests/e2e/lib/topo.sh
#   topo_up [--backends N] [--clients N] [--mtu N] [--no-decap] [--no-check]
#           [--edge N]     # N LB hosts behind a router (tests/e2e/lib/edge.sh)
#   topo_serve                     # xlb-traffic serve on every backend
#   in_ns c1 "$XLB_BIN/xlb-traffic" conns --to "${BACKEND_IP4[0]}:80"
#   topo_down                      # also runs on exit, Ctrl-C, TERM, HUP
#
# topo_up sets traps on EXIT, INT, TERM and HUP that tear down first and
# then run the caller's own traps of the time; topo_down puts the caller's
# traps back.  A script waiting for a long command should run it in the
# background and `wait` (bash runs traps only between commands).
#
# Topology (all hosts are namespaces named $TOPO_PREFIX<host>, one Ethernet
# segment through a bridge in the switch namespace):
#
#   c1 10.200.0.11  fd00:200::11 ─┐
#   c2 10.200.0.12  fd00:200::12 ─┤       switch "sw": bridge br0, one port
#   lb 10.200.0.2   fd00:200::2  ─┼─ br0  per host (named after the host),
#   b1 10.200.0.21  fd00:200::21 ─┤       each with an XDP_PASS program so
#   ...                          ─┤       that frames the LB sends with
#   bN 10.200.0.2N  fd00:200::2N ─┘       XDP_TX are received (NAPI)
#
#   Every host's interface is eth0, MAC 02:00:0a:c8:00:<last octet>.
#   VIPs: 10.200.100.0/24 and fd00:200:100::/64 (VIP4 = 10.200.100.1,
#   VIP6 = fd00:200:100::1).  Clients route them via the LB (10.200.0.2,
#   fd00:200::2).  Backends are set up by build/xlb-backend, as an
#   operator would: the whole VIP ranges local on lo, tunnels stripped by
#   the decap program (XDP on eth0; IPIP, 6in4, 4in6, ip6ip6 and GUE on
#   UDP 6080), and they reply to clients directly, on the segment (direct
#   server return); topo_check runs `xlb-backend check` on each.  The LB forwards (ip_forward, IPv6
#   forwarding) so that the data path's FIB fallback works.
#
# Hosts may be named short (c1, lb, b3, sw) or in full in every helper.
#
# Variables for tests after topo_up:
#   TOPO_PREFIX  namespace prefix, "${TOPO_TAG}<pid>-" (TOPO_TAG: xe2e)
#   TOPO_DIR     a private directory for logs, sockets and state
#   NS_SW NS_LB  the switch and LB namespaces
#   NS_CLIENTS[] NS_BACKENDS[]  client and backend namespaces, in order
#   CLIENTS[] BACKENDS[]        their short names (c1 c2, b1 b2 ...)
#   LB_IF        the LB's interface (in NS_LB), LB_IP4 LB_IP6 its addresses
#   CLIENT_IP4[] CLIENT_IP6[] BACKEND_IP4[] BACKEND_IP6[]
#   VIP4 VIP6    the first VIPs; vip4 N / vip6 N print the N-th
#   XLB_BIN      the build folder (build, or $O)
#   XLBD_SOCK XLBD_INSTANCE XLBD_PID  after topo_xlbd_start
#
# Set TOPO_KEEP_LOGS=1 to keep TOPO_DIR (server and xlbd logs) after
# teardown.  --mtu sets the MTU of the LB, the backends and the switch
# (the underlay); clients keep 1500.
#
# Helpers: in_ns HOST CMD... (nsenter into the network namespace only, so
# /sys/fs/bpf stays the host's), topo_bg HOST NAME CMD... (background
# process, logged to $TOPO_DIR/NAME.log, stopped by topo_down),
# topo_at_down CMD (run at teardown), topo_serve [ARGS] (xlb-traffic serve
# on every backend, ids b1...), topo_xlbd_start [ARGS] (xlbd in the LB
# namespace), topo_xlbd_setup [KEY] (that, plus key, outer sources and the
# data path on LB_IF), xlbctl ARGS (the CLI against it), topo_xlbd_stop,
# topo_ping HOST ADDR, topo_leftovers (prefixes of dead runs), topo_add_lb
# NAME [N] (a second LB host, for tests of several LB hosts).
#
# Leftovers: topo_up first deletes the namespaces of dead runs (prefix
# ${TOPO_TAG}<pid>- whose pid is gone) and refuses to start, with the
# reason, if it cannot.  Namespaces of live runs are left alone.

TOPO_TAG=${TOPO_TAG:-xe2e}
XLB_ROOT=${XLB_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
XLB_BIN=${XLB_BIN:-$XLB_ROOT/${O:-build}}
TOPO_RUN_DIR=${TOPO_RUN_DIR:-/run/xlb-topo}

TOPO_NET4=10.200.0
TOPO_NET6=fd00:200:
VIP4_NET=10.200.100.0/24
VIP6_NET=fd00:200:100::/64
VIP4=10.200.100.1
VIP6=fd00:200:100::1
LB_IF=eth0
LB_IP4=$TOPO_NET4.2
LB_IP6=${TOPO_NET6}:2
# shellcheck disable=SC2034	# for callers: the decap program's GUE port
TOPO_GUE_PORT=6080

TOPO_PREFIX=
TOPO_DIR=
TOPO_UP=0
TOPO_EDGE=0
TOPO_PIDS=()
TOPO_AT_DOWN=()
XLBD_PID=
XLBD_SOCK=
XLBD_INSTANCE=

topo_log() { echo "# topo: $*" >&2; }
topo_err() { echo "topo: error: $*" >&2; }

vip4() { echo "10.200.100.$1"; }
vip6() { echo "fd00:200:100::$(printf %x "$1")"; }

# The full namespace name of a host ("lb" or "${TOPO_PREFIX}lb").
topo_ns() {
	case "$1" in
	"$TOPO_PREFIX"*) echo "$1" ;;
	*) echo "$TOPO_PREFIX$1" ;;
	esac
}

# in_ns HOST CMD...: run CMD in HOST's network namespace only.
in_ns() {
	local ns

	ns=$(topo_ns "$1")
	shift
	nsenter --net="/var/run/netns/$ns" -- "$@"
}

# The start time (clock ticks since boot) of a process, or nothing.
topo_starttime() {
	local stat

	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	# fields after "(comm) ": state is 3, starttime is 22
	awk '{ print $20 }' <<<"$stat"
}

# Is the run with this pid alive?  Its marker file holds its start time, so
# a recycled pid does not keep a dead run's leftovers.
topo_run_alive() {
	local pid=$1 marker=$TOPO_RUN_DIR/$TOPO_TAG$1 want

	[[ -d /proc/$pid ]] || return 1
	[[ -f $marker ]] || return 0
	want=$(cat "$marker" 2>/dev/null)
	[[ "$want" == "$(topo_starttime "$pid")" ]]
}

# Prefixes of runs whose process is gone, one per line.
topo_leftovers() {
	local ns pid seen=" "

	while read -r ns _; do
		[[ $ns =~ ^${TOPO_TAG}([0-9]+)- ]] || continue
		pid=${BASH_REMATCH[1]}
		[[ $seen == *" $pid "* ]] && continue
		seen+="$pid "
		[[ $pid == "$$" ]] && continue
		topo_run_alive "$pid" && continue
		echo "$TOPO_TAG$pid-"
	done < <(ip netns list 2>/dev/null)
}

# Stop every process in a namespace (by pid), then delete it.
topo_del_ns() {
	local ns=$1 pids i sig=TERM

	for i in 1 2 3 4 5 6 7 8 9 10; do
		pids=$(ip netns pids "$ns" 2>/dev/null)
		[[ -z $pids ]] && break
		[[ $i -gt 5 ]] && sig=KILL
		# shellcheck disable=SC2086
		kill -$sig $pids 2>/dev/null
		sleep 0.2
	done
	ip netns del "$ns" 2>/dev/null
	[[ ! -e /var/run/netns/$ns ]]
}

# Delete everything a dead run left: namespaces, pins, marker, directory.
topo_clean_prefix() {
	local prefix=$1 ns rc=0

	# the dead run's data path, if its xlbd got that far: its processes
	# first (a live xlbd holds the instance lock), then xlbd --cleanup
	topo_instance_cleanup "${prefix%-}" "${prefix}lb"
	# the data paths of extra LB hosts (topo_add_lb): instance = namespace
	topo_clean_extra_lbs "$prefix"
	while read -r ns _; do
		[[ $ns == "$prefix"* ]] || continue
		topo_del_ns "$ns" || { topo_err "cannot delete namespace $ns"; rc=1; }
	done < <(ip netns list 2>/dev/null)
	topo_rm_pins "${prefix%-}"
	rm -f "$TOPO_RUN_DIR/${prefix%-}"
	rm -rf "/tmp/${prefix}"????
	return $rc
}

# xlbd pins its state under /sys/fs/bpf/xlb/<instance> (the instance of a
# run is its prefix without the dash); tables and connections die with it.
topo_rm_pins() {
	local inst=$1

	[[ -n $inst && -d /sys/fs/bpf/xlb/$inst ]] && rm -rf "/sys/fs/bpf/xlb/$inst"
	return 0
}

topo_clean_leftovers() {
	local prefix left

	for prefix in $(topo_leftovers); do
		topo_log "deleting leftovers of a dead run: ${prefix}*"
		topo_clean_prefix "$prefix" || {
			topo_err "leftovers of a dead run (${prefix}*) cannot be deleted;" \
				"remove them by hand ('ip netns list', 'ip netns del NAME') and retry"
			return 1
		}
	done
	left=$(topo_leftovers)
	if [[ -n $left ]]; then
		topo_err "leftovers remain after cleanup: $left"
		return 1
	fi
}

# A trivial XDP program (XDP_PASS) for the switch ports: a veth whose peer
# sends XDP_TX/XDP_REDIRECT frames must run NAPI, which XDP turns on.
topo_xdp_pass_obj() {
	local obj=$TOPO_DIR/xdp_pass.bpf.o

	cat >"$TOPO_DIR/xdp_pass.c" <<-'EOF'
		__attribute__((section("xdp"), used)) int xdp_pass(void *ctx)
		{
			return 2;	/* XDP_PASS */
		}
		__attribute__((section("license"), used)) char _license[] = "GPL";
	EOF
	clang -target bpf -O2 -c -o "$obj" "$TOPO_DIR/xdp_pass.c" || return 1
	echo "$obj"
}

# topo_link HOST MAC IP4 IP6 MTU: a veth from the switch to HOST's eth0.
topo_link() {
	local host=$1 mac=$2 ip4=$3 ip6=$4 mtu=$5 ns

	ns=$(topo_ns "$host")
	ip -n "$NS_SW" link add "$host" mtu "$mtu" type veth \
		peer name eth0 netns "$ns" mtu "$mtu" || return 1
	ip -n "$NS_SW" link set "$host" master br0 up || return 1
	# GRO on the port instead does not do it (tried on 6.18: the LB's
	# XDP_TX frames vanished), so every port gets the program.
	ip -n "$NS_SW" link set dev "$host" xdpdrv obj "$TOPO_XDP_PASS" \
		sec xdp || return 1
	in_ns "$host" bash -e -c "
		ip link set lo up
		ip link set eth0 address $mac
		ip addr add $ip4/24 dev eth0
		ip addr add $ip6/64 dev eth0 nodad
		ip link set eth0 up
	" || return 1
}

# Settings every host shares: no reverse path filter, no DAD.
topo_host_sysctls() {
	in_ns "$1" bash -e -c '
		for c in all default lo; do
			sysctl -qw net.ipv4.conf.$c.rp_filter=0
			sysctl -qw net.ipv6.conf.$c.accept_dad=0
		done
		sysctl -qw net.ipv6.conf.all.accept_ra=0 net.ipv6.conf.default.accept_ra=0
	'
}

topo_usage() {
	cat >&2 <<-EOF
		usage: topo_up [--backends 1..9] [--clients 1..9] [--mtu 1280..9000]
		               [--no-decap] [--no-check] [--edge 2..7]
	EOF
}

topo_up() {
	local nb=4 nc=2 mtu=1500 decap=1 check=1 i edge=0

	while [[ $# -gt 0 ]]; do
		case "$1" in
		--backends) nb=$2; shift ;;
		--clients) nc=$2; shift ;;
		--mtu) mtu=$2; shift ;;
		--no-decap) decap=0 ;;
		--no-check) check=0 ;;
		--edge) edge=$2; shift ;;
		*) topo_err "unknown option '$1'"; topo_usage; return 2 ;;
		esac
		shift
	done
	if ! [[ $nb =~ ^[1-9]$ && $nc =~ ^[1-9]$ && $mtu =~ ^[0-9]+$ &&
		$edge =~ ^[02-7]$ ]] || ((mtu < 1280 || mtu > 9000)); then
		topo_err "bad option value"; topo_usage; return 2
	fi
	if [[ $(id -u) -ne 0 ]]; then
		topo_err "needs root"; return 1
	fi
	if [[ $TOPO_UP -eq 1 ]]; then
		topo_err "already up ($TOPO_PREFIX); topo_down first"; return 1
	fi
	if [[ ! -x $XLB_BIN/xlb-traffic || ! -x $XLB_BIN/xlb-backend ]]; then
		topo_err "$XLB_BIN/xlb-traffic or xlb-backend is missing; run 'make'"
		return 1
	fi
	topo_clean_leftovers || return 1

	TOPO_PREFIX=$TOPO_TAG$$-
	if ip netns list | grep -q "^$TOPO_PREFIX"; then
		topo_err "namespaces ${TOPO_PREFIX}* exist already (this shell's);" \
			"topo_down first"
		return 1
	fi
	TOPO_DIR=$(mktemp -d "/tmp/${TOPO_PREFIX}XXXX") || return 1
	mkdir -p "$TOPO_RUN_DIR" && topo_starttime $$ >"$TOPO_RUN_DIR/$TOPO_TAG$$"
	TOPO_UP=1
	TOPO_PIDS=() TOPO_AT_DOWN=()
	topo_traps_set

	NS_SW=${TOPO_PREFIX}sw
	NS_LB=${TOPO_PREFIX}lb
	TOPO_EDGE=$edge
	CLIENTS=() BACKENDS=() NS_CLIENTS=() NS_BACKENDS=()
	CLIENT_IP4=() CLIENT_IP6=() BACKEND_IP4=() BACKEND_IP6=()
	for ((i = 1; i <= nc; i++)); do
		CLIENTS+=("c$i") NS_CLIENTS+=("${TOPO_PREFIX}c$i")
		if ((edge)); then	# behind the router
			CLIENT_IP4+=("$EDGE_NET4.1$i") CLIENT_IP6+=("${EDGE_NET6}:1$i")
		else
			CLIENT_IP4+=("$TOPO_NET4.1$i") CLIENT_IP6+=("${TOPO_NET6}:1$i")
		fi
	done
	for ((i = 1; i <= nb; i++)); do
		BACKENDS+=("b$i") NS_BACKENDS+=("${TOPO_PREFIX}b$i")
		BACKEND_IP4+=("$TOPO_NET4.2$i") BACKEND_IP6+=("${TOPO_NET6}:2$i")
	done

	if ! topo_build "$mtu" "$decap"; then
		topo_err "building the topology failed; tearing down"
		topo_down
		return 1
	fi
	if [[ $check -eq 1 ]] && ! topo_check; then
		topo_err "the topology does not pass traffic; tearing down"
		topo_down
		return 1
	fi
	if ((edge)) && ! edge_start "$edge"; then
		topo_err "the edge (router, LB hosts, etcd, bird2) did not come up; tearing down"
		topo_down
		return 1
	fi
	topo_log "up: ${TOPO_PREFIX}{sw,lb,$(IFS=,; echo "${CLIENTS[*]},${BACKENDS[*]}")}" \
		"(mtu $mtu) in $TOPO_DIR"
}

topo_build() {
	local mtu=$1 decap=$2 host i

	for host in sw lb "${CLIENTS[@]}" "${BACKENDS[@]}"; do
		ip netns add "$TOPO_PREFIX$host" || return 1
		topo_host_sysctls "$host" || return 1
	done
	TOPO_XDP_PASS=$(topo_xdp_pass_obj) || return 1
	in_ns sw bash -e -c '
		ip link set lo up
		ip link add br0 type bridge stp_state 0 forward_delay 0 \
			mcast_snooping 0
		sysctl -qw net.ipv6.conf.br0.disable_ipv6=1
		# br_netfilter, when loaded, has the bridge validate and trim
		# IP (and hand it to netfilter): malformed headers and Ethernet
		# trailers would never reach the LB.  The setting is per namespace.
		if [ -d /proc/sys/net/bridge ]; then
			sysctl -qw net.bridge.bridge-nf-call-iptables=0 \
				net.bridge.bridge-nf-call-ip6tables=0 \
				net.bridge.bridge-nf-call-arptables=0
		fi
		ip link set br0 up
	' || return 1

	# The LB: forwards, so bpf_fib_lookup() answers for the data path.
	topo_link lb 02:00:0a:c8:00:02 "$LB_IP4" "$LB_IP6" "$mtu" || return 1
	in_ns lb sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv6.conf.all.forwarding=1 || return 1

	if ((TOPO_EDGE)); then
		edge_build_router && edge_route_back lb || return 1
	fi
	for ((i = 0; i < ${#CLIENTS[@]}; i++)); do
		host=${CLIENTS[i]}
		if ((TOPO_EDGE)); then
			edge_build_client "$i" || return 1
			continue
		fi
		# clients keep 1500 whatever the underlay: the LB's "too big"
		# answers and PMTU discovery handle the difference
		topo_link "$host" "02:00:0a:c8:00:$(printf %02x $((11 + i)))" \
			"${CLIENT_IP4[i]}" "${CLIENT_IP6[i]}" 1500 || return 1
		in_ns "$host" bash -e -c "
			ethtool -K eth0 tx off >/dev/null
			ip route add $VIP4_NET via $LB_IP4
			ip -6 route add $VIP6_NET via $LB_IP6
		" || return 1
	done

	for ((i = 0; i < ${#BACKENDS[@]}; i++)); do
		host=${BACKENDS[i]}
		topo_link "$host" "02:00:0a:c8:00:$(printf %02x $((21 + i)))" \
			"${BACKEND_IP4[i]}" "${BACKEND_IP6[i]}" "$mtu" || return 1
		in_ns "$host" bash -e -c "
			ethtool -K eth0 tx off >/dev/null
			for c in all eth0; do
				sysctl -qw net.ipv4.conf.\$c.accept_local=1
			done
		" || return 1
		if ((TOPO_EDGE)); then
			edge_route_back "$host" || return 1
		fi
		topo_backend_setup "$host" "$decap" || return 1
	done
}

# The files of HOST's xlb-backend (configuration, state, output) in TOPO_DIR.
topo_backend_files() {
	echo "--config $TOPO_DIR/backend-$1.conf --state $TOPO_DIR/backend-$1.state"
}

# topo_backend_setup HOST DECAP: the backend as an operator sets one up,
# with xlb-backend (tools/xlb-backend): the VIP ranges local on lo, ARP
# answers only for eth0's own address, with it as source, no strict
# reverse-path filter, and (DECAP 1) xlb_decap on eth0 in native mode.
topo_backend_setup() {
	local host=$1 mode=xdp log=$TOPO_DIR/backend-$1.log

	[[ $2 -eq 1 ]] || mode=none
	# shellcheck disable=SC2046	# the files are two options each
	if ! in_ns "$host" "$XLB_BIN/xlb-backend" setup $(topo_backend_files "$host") \
		--dev eth0 --mode "$mode" $([[ $mode == xdp ]] && echo --xdp-mode native) \
		"$VIP4" "$VIP4_NET" "$VIP6" "$VIP6_NET" >"$log" 2>&1; then
		topo_err "xlb-backend setup failed on $host:"
		sed 's/^/#   /' "$log" >&2
		return 1
	fi
}

# Every host reaches the LB over IPv4 and IPv6 (this also fills the LB's
# neighbour table), the first client reaches every backend, and every
# backend passes `xlb-backend check` (its probes: a tunnel packet of each
# kind through eth0's decap program to each VIP).
topo_check() {
	local host ok=0 i

	for host in "${CLIENTS[@]}" "${BACKENDS[@]}"; do
		if ! topo_ping "$host" "$LB_IP4" || ! topo_ping "$host" "$LB_IP6"; then
			topo_err "$host cannot reach the LB"
			ok=1
		fi
	done
	for ((i = 0; i < ${#BACKENDS[@]}; i++)); do
		if ! topo_ping c1 "${BACKEND_IP4[i]}" ||
		   ! topo_ping c1 "${BACKEND_IP6[i]}"; then
			topo_err "c1 cannot reach ${BACKENDS[i]}"
			ok=1
		fi
	done
	for host in "${BACKENDS[@]}"; do
		# shellcheck disable=SC2046
		if ! in_ns "$host" "$XLB_BIN/xlb-backend" check \
			$(topo_backend_files "$host") >"$TOPO_DIR/check-$host.log" 2>&1; then
			topo_err "xlb-backend check fails on $host:"
			grep -v '^ok' "$TOPO_DIR/check-$host.log" | sed 's/^/#   /' >&2
			ok=1
		fi
	done
	return $ok
}

# topo_ping HOST ADDR: one answered echo within 3 tries (xlb-traffic
# ping: the test hosts need no ping binary).
topo_ping() {
	in_ns "$1" "$XLB_BIN/xlb-traffic" ping -c 3 -W 1000 "$2" >/dev/null 2>&1
}

# topo_bg HOST NAME CMD...: start CMD in HOST's namespace in the background,
# output to $TOPO_DIR/NAME.log; its pid is in TOPO_LAST_PID and is stopped
# by topo_down (or earlier by topo_stop PID).
topo_bg() {
	local host=$1 name=$2 ns

	shift 2
	ns=$(topo_ns "$host")
	nsenter --net="/var/run/netns/$ns" -- "$@" >"$TOPO_DIR/$name.log" 2>&1 &
	TOPO_LAST_PID=$!
	TOPO_PIDS+=("$TOPO_LAST_PID")
}

# topo_stop PID [SECONDS]: TERM, wait, then KILL; returns the exit status.
topo_stop() {
	local pid=$1 t=${2:-5} i rc

	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return; }
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < t * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rc=$?
	return $rc
}

topo_at_down() { TOPO_AT_DOWN+=("$*"); }

# The command of the caller's trap on signal $1, or nothing.
topo_trap_cmd() {
	local t

	t=$(trap -p "$1")
	[[ -n $t ]] || return 0
	eval "set -- $t"	# trap -- CMD SIG
	echo "$3"
}

# Tear down on exit, Ctrl-C, TERM and HUP; the caller's own traps run after
# ours, and topo_down puts them back.
topo_traps_set() {
	TOPO_CALLER_TRAPS=$(trap -p EXIT INT TERM HUP)
	TOPO_CALLER_EXIT=$(topo_trap_cmd EXIT)
	trap 'topo_on_exit' EXIT
	trap 'topo_on_signal INT 130' INT
	trap 'topo_on_signal TERM 143' TERM
	trap 'topo_on_signal HUP 129' HUP
}

topo_traps_restore() {
	trap - EXIT INT TERM HUP
	eval "$TOPO_CALLER_TRAPS"
}

# Teardown runs whole even in a caller that failed under `set -e`: errexit
# would otherwise end the trap at the first command that returns non-zero
# (a server's exit status, a namespace already gone).
topo_on_exit() {
	local cmd=$TOPO_CALLER_EXIT

	set +e
	topo_down
	[[ -n $cmd ]] && eval "$cmd"
}

topo_on_signal() {
	local cmd

	set +e
	topo_down
	cmd=$(topo_trap_cmd "$1")
	[[ -n $cmd ]] && eval "$cmd"
	if [[ $1 == INT ]]; then	# die of SIGINT, as the shell expects
		trap - INT
		kill -INT $$
	fi
	exit "$2"
}

# topo_serve [ARGS...]: build/xlb-traffic serve on every backend, id = the
# backend's short name, TCP and UDP port 80 unless ARGS say otherwise;
# waits until every one listens.
topo_serve() {
	local i host args=("$@") pids=()

	[[ ${#args[@]} -eq 0 ]] && args=(--tcp 80 --udp 80)
	for host in "${BACKENDS[@]}"; do
		rm -f "$TOPO_DIR/serve-$host.ready"
		topo_bg "$host" "serve-$host" "$XLB_BIN/xlb-traffic" serve \
			--id "$host" --ready "$TOPO_DIR/serve-$host.ready" \
			"${args[@]}"
		pids+=("$TOPO_LAST_PID")
	done
	for ((i = 0; i < 50; i++)); do
		local all=1
		for host in "${BACKENDS[@]}"; do
			[[ -f $TOPO_DIR/serve-$host.ready ]] || all=0
		done
		[[ $all -eq 1 ]] && return 0
		sleep 0.1
	done
	topo_err "xlb-traffic serve did not start; see $TOPO_DIR/serve-*.log"
	return 1
}

# topo_xlbd_start [ARGS...]: xlbd in the LB namespace, instance named after
# the run, socket and state in TOPO_DIR, metrics on as the unit runs it
# (127.0.0.1:9437 of the LB namespace); waits for the socket (10 s).
topo_xlbd_start() {
	local i

	XLBD_INSTANCE=${TOPO_PREFIX%-}
	XLBD_SOCK=$TOPO_DIR/xlbd.sock
	mkdir -p "$TOPO_DIR/xlbd-state"
	topo_bg lb xlbd "$XLB_BIN/xlbd" --instance "$XLBD_INSTANCE" \
		--socket "$XLBD_SOCK" --state-dir "$TOPO_DIR/xlbd-state" "$@"
	XLBD_PID=$TOPO_LAST_PID
	for ((i = 0; i < 100; i++)); do
		[[ -S $XLBD_SOCK ]] && return 0
		kill -0 "$XLBD_PID" 2>/dev/null || break
		sleep 0.1
	done
	topo_err "xlbd did not come up:"
	sed 's/^/#   /' "$TOPO_DIR/xlbd.log" >&2
	return 1
}

# xlbctl ARGS...: the CLI against this run's xlbd, in the LB namespace.
xlbctl() {
	in_ns lb "$XLB_BIN/xlbctl" -s "$XLBD_SOCK" "$@"
}

# topo_xlbd_setup [KEY]: topo_xlbd_start, then what every LB here needs:
# the cluster key (TOPO_KEY, random unless given), the LB's addresses as
# outer sources, and the data path on LB_IF (native XDP).
topo_xlbd_setup() {
	TOPO_KEY=${1:-${TOPO_KEY:-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}}
	topo_xlbd_start || return 1
	xlbctl set key "$TOPO_KEY" >/dev/null &&
		xlbctl set src4 "$LB_IP4" >/dev/null &&
		xlbctl set src6 "$LB_IP6" >/dev/null &&
		xlbctl link attach "$LB_IF" native >/dev/null
}

# Stop xlbd (SIGTERM leaves forwarding running, as in production).
topo_xlbd_stop() {
	local rc

	[[ -n $XLBD_PID ]] || return 0
	topo_stop "$XLBD_PID" 10
	rc=$?
	XLBD_PID=
	return $rc
}

# Stop xlbd and remove the data path: detach, unpin (xlbd --cleanup).
topo_xlbd_cleanup() {
	[[ -n $XLBD_INSTANCE ]] || return 0
	topo_xlbd_stop
	if [[ -x $XLB_BIN/xlbd && -e /var/run/netns/$NS_LB ]]; then
		timeout 10 nsenter --net="/var/run/netns/$NS_LB" -- \
			"$XLB_BIN/xlbd" --cleanup --instance "$XLBD_INSTANCE" \
			>>"$TOPO_DIR/xlbd.log" 2>&1
	fi
	topo_rm_pins "$XLBD_INSTANCE"
}

# topo_add_lb NAME [N]: one more LB host on the segment, for tests of
# several LB hosts: namespace ${TOPO_PREFIX}NAME, eth0 with 10.200.0.N and
# fd00:200::N (N 3..9, default 3), MAC 02:00:0a:c8:00:0N, the MTU of lb,
# forwarding on.  Clients still route the VIPs via lb; point a client at
# it with `ip route replace $VIP4_NET via 10.200.0.N` (and -6).  Its xlbd
# must be instance ${TOPO_PREFIX}NAME (the namespace's name): teardown, and
# the leftover cleanup of a dead run, remove that instance's data path.
topo_add_lb() {
	local name=${1:-} n=${2:-3} mtu host

	if ! [[ $name =~ ^[a-z][a-z0-9]{0,7}$ && $n =~ ^[3-9]$ ]]; then
		topo_err "usage: topo_add_lb NAME [3..9]"; return 2
	fi
	[[ $TOPO_UP -eq 1 ]] || { topo_err "topo_up first"; return 1; }
	[[ -e /var/run/netns/$TOPO_PREFIX$name ]] &&
		{ topo_err "host $name exists already"; return 1; }
	mtu=$(ip -n "$NS_LB" -o link show eth0 | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
	ip netns add "$TOPO_PREFIX$name" || return 1
	topo_at_down "topo_extra_lb_down $name"
	topo_host_sysctls "$name" &&
		topo_link "$name" "02:00:0a:c8:00:0$n" "$TOPO_NET4.$n" \
			"${TOPO_NET6}:$n" "${mtu:-1500}" &&
		in_ns "$name" sysctl -qw net.ipv4.ip_forward=1 \
			net.ipv6.conf.all.forwarding=1 || return 1
	if ((TOPO_EDGE)); then
		edge_route_back "$name" || return 1
	fi
	for host in "${CLIENTS[@]}" "${BACKENDS[@]}"; do
		if ! topo_ping "$host" "$TOPO_NET4.$n" ||
		   ! topo_ping "$host" "${TOPO_NET6}:$n"; then
			topo_err "$host cannot reach $name"
			return 1
		fi
	done
}

# Stop every process in namespace NS (its xlbd holds the instance lock,
# which `xlbd --cleanup` needs), then xlbd --cleanup of instance INST in
# it, then the instance's pins.
topo_instance_cleanup() {
	local inst=$1 ns=$2 pids i sig=TERM

	for ((i = 0; i < 20; i++)); do
		pids=$(ip netns pids "$ns" 2>/dev/null)
		[[ -z $pids ]] && break
		[[ $i -ge 10 ]] && sig=KILL
		# shellcheck disable=SC2086
		kill -$sig $pids 2>/dev/null
		sleep 0.1
	done
	if [[ -d /sys/fs/bpf/xlb/$inst && -e /var/run/netns/$ns &&
	      -x $XLB_BIN/xlbd ]]; then
		timeout 10 nsenter --net="/var/run/netns/$ns" -- \
			"$XLB_BIN/xlbd" --cleanup --instance "$inst" >/dev/null 2>&1
	fi
	topo_rm_pins "$inst"
}

# At teardown: stop what runs on an extra LB host (its xlbd), remove its
# data path and the namespace.
topo_extra_lb_down() {
	local ns=$TOPO_PREFIX$1 pid

	for pid in "${TOPO_PIDS[@]}"; do	# ours: reap them
		[[ " $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ') " == *" $pid "* ]] &&
			topo_stop "$pid" 5
	done
	topo_instance_cleanup "$ns" "$ns"
	topo_del_ns "$ns"
}

# The extra LB hosts' instances of a dead run's prefix.
topo_clean_extra_lbs() {
	local d

	for d in /sys/fs/bpf/xlb/"$1"*; do
		[[ -d $d ]] && topo_instance_cleanup "${d##*/}" "${d##*/}"
	done
	return 0
}

# Tear everything down; safe to call twice, and from traps.
topo_down() {
	local - cmd pid ns rc=0

	set +e		# every step runs, whatever the one before returned
	[[ $TOPO_UP -eq 1 ]] || return 0
	TOPO_UP=0
	topo_traps_restore
	for cmd in "${TOPO_AT_DOWN[@]}"; do
		eval "$cmd" || true
	done
	topo_xlbd_cleanup
	for pid in "${TOPO_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${TOPO_PIDS[@]}"; do
		topo_stop "$pid" 5
	done
	for ns in $(ip netns list | awk -v p="$TOPO_PREFIX" 'index($1, p) == 1 { print $1 }'); do
		topo_del_ns "$ns" || { topo_err "cannot delete namespace $ns"; rc=1; }
	done
	topo_rm_pins "${TOPO_PREFIX%-}"
	rm -f "$TOPO_RUN_DIR/${TOPO_PREFIX%-}"
	if [[ -n $TOPO_DIR && -d $TOPO_DIR ]]; then
		if [[ -n ${TOPO_KEEP_LOGS:-} ]]; then
			topo_log "logs kept in $TOPO_DIR"
		else
			rm -rf "$TOPO_DIR"
		fi
	fi
	TOPO_PIDS=() TOPO_AT_DOWN=() XLBD_PID='' XLBD_INSTANCE='' TOPO_EDGE=0
	return $rc
}

# etcd in a namespace of its own, for the cluster mode (topo_etcd_up ...)
# shellcheck source=tests/e2e/lib/etcd.sh
. "$XLB_ROOT/tests/e2e/lib/etcd.sh"
# a router and LB hosts with bird2 in front of them (topo_up --edge N)
# shellcheck source=tests/e2e/lib/edge.sh
. "$XLB_ROOT/tests/e2e/lib/edge.sh"
