# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The edge of the test network (sourced by topo.sh; docs/edge.md): several
# LB hosts behind a router that spreads flows over them by ECMP, as routers
# in front of Katran, GLB or Maglev do.
#
#   topo_up --edge N [--backends B] [--clients C]
#   EDGE_SPEAKER=frr topo_up --edge N ...   # FRR on the LB hosts
#
# builds, besides the segment of topo.sh:
#
#   c1 10.201.0.11 ─┐  client segment        LB segment (br0, as today)
#   c2 10.201.0.12 ─┴─ br1 ── rt ──────────┬─ lb  10.200.0.2  xlbd + bird2
#                      10.201.0.1  10.200.0.1 ├─ lb2 10.200.0.3  xlbd + bird2
#                                          ├─ ...  (N LB hosts in all)
#                                          ├─ etcd 10.200.0.40
#                                          └─ b1.. 10.200.0.21.. (DSR)
#
# - rt: bird2 with a BGP session (and BFD, 100 ms x 3) to every LB host,
#   `merge paths on`, fib_multipath_hash_policy=1: one route per VIP
#   address with a next hop per LB host that announces it, flows spread by
#   their 4-tuple.  It forwards between the two segments.
# - every LB host: xlbd in cluster mode (etcd at ETCD_URL, cluster EDGE_CL,
#   host name = its short name), its own src4/src6, the data path on eth0,
#   `set announce table EDGE_TABLE`; bird2 running dist/bird-xlb.conf, or
#   with EDGE_SPEAKER=frr, FRR (zebra, bgpd, bfdd) running
#   dist/frr-xlb.conf (IPv4 VIPs only: FRR 8.4 imports no IPv6 table).
# - the switch floods no unknown unicast toward LB hosts (a NIC's MAC
#   filter does that on real hardware; XDP on a veth sees every frame).
# - clients: the VIP ranges and the LB segment via rt; the LB segment's
#   hosts reach the clients via rt; backends answer clients directly.
#
# Variables: EDGE_HOSTS (lb lb2 ...), EDGE_ADDR[host], NS_RT, EDGE_TABLE,
# EDGE_CL, ROUTER_IP4.  Helpers:
#   edge_birdc HOST ARGS...     birdc of HOST's bird (rt or an LB host)
#   edge_vtysh HOST ARGS...     vtysh of HOST's FRR (EDGE_SPEAKER=frr)
#   edge_speaker_start HOST     HOST's bird, or FRR (EDGE_SPEAKER=frr)
#   edge_nexthops ADDR          the router's next hops toward ADDR, sorted
#   edge_wait_nexthops ADDR N   until the router has N next hops (10 s)
#   edge_watch_nexthops ADDR WANT FILE   (background) when the next hops
#                               became WANT, ms, into FILE
#   edge_host_lose HOST         link down, bird (or FRR) and xlbd killed
#                               (-9), data path removed: the host is gone
#   edge_host_return HOST       link up, fresh data path (empty connection
#                               table), xlbd, bird
#   edge_nexthops_time T0 ADDR WANT   ms from T0 until the next hops are
#                               WANT (10 s)
#   edge_sock HOST              the control socket of HOST's xlbd
#   edge_counters VIP           "HOST NEW_FLOWS PACKETS" of VIP per LB host
#   edge_spread BEFORE AFTER N CONNS-JSON...   connections spread over the
#                               LB hosts (from edge_counters), all complete
#
# Teardown (topo_down) stops the birds and xlbds, removes their data paths
# and deletes the namespaces, also on failure.

EDGE_TABLE=${EDGE_TABLE:-100}
EDGE_SPEAKER=${EDGE_SPEAKER:-bird}
EDGE_CL=${EDGE_CL:-edge}
EDGE_NET4=10.201.0
EDGE_NET6=fd00:201:
ROUTER_IP4=$TOPO_NET4.1
ROUTER_IP6=${TOPO_NET6}:1
EDGE_HOSTS=()
declare -A EDGE_ADDR=()
declare -A EDGE_SPEAKER_PID=()	# bird's pid, or FRR's three
declare -A EDGE_XLBD_PID=()
NS_RT=

# edge_port_link HOST IFNAME BRIDGE PORT MAC IP4 IP6: a veth from the
# switch's BRIDGE (port PORT) to HOST's IFNAME, as topo_link does for eth0.
edge_port_link() {
	local host=$1 ifn=$2 br=$3 port=$4 mac=$5 ip4=$6 ip6=$7 ns

	ns=$(topo_ns "$host")
	ip -n "$NS_SW" link add "$port" type veth peer name "$ifn" \
		netns "$ns" || return 1
	ip -n "$NS_SW" link set "$port" master "$br" up || return 1
	ip -n "$NS_SW" link set dev "$port" xdpdrv obj "$TOPO_XDP_PASS" \
		sec xdp || return 1
	in_ns "$host" bash -e -c "
		ip link set lo up
		ip link set $ifn address $mac
		ip addr add $ip4/24 dev $ifn
		ip addr add $ip6/64 dev $ifn nodad
		ip link set $ifn up
	"
}

# Before the clients: the router and the client segment (br1).
edge_build_router() {
	in_ns sw bash -e -c '
		ip link add br1 type bridge stp_state 0 forward_delay 0 \
			mcast_snooping 0
		sysctl -qw net.ipv6.conf.br1.disable_ipv6=1
		ip link set br1 up
	' || return 1
	NS_RT=${TOPO_PREFIX}rt
	ip netns add "$NS_RT" && topo_host_sysctls rt || return 1
	topo_link rt 02:00:0a:c8:00:01 "$ROUTER_IP4" "$ROUTER_IP6" 1500 &&
		edge_port_link rt eth1 br1 rtc 02:00:0a:c9:00:01 \
			"$EDGE_NET4.1" "${EDGE_NET6}:1" || return 1
	in_ns rt sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv6.conf.all.forwarding=1 \
		net.ipv4.fib_multipath_hash_policy=1 \
		net.ipv6.fib_multipath_hash_policy=1 >/dev/null
}

# A client behind the router (index i of CLIENTS).
edge_build_client() {
	local i=$1 host=${CLIENTS[$1]}

	edge_port_link "$host" eth0 br1 "$host" \
		"02:00:0a:c9:00:$(printf %02x $((11 + i)))" \
		"${CLIENT_IP4[i]}" "${CLIENT_IP6[i]}" || return 1
	in_ns "$host" bash -e -c "
		ethtool -K eth0 tx off >/dev/null
		ip route add $VIP4_NET via $EDGE_NET4.1
		ip route add $TOPO_NET4.0/24 via $EDGE_NET4.1
		ip -6 route add $VIP6_NET via ${EDGE_NET6}:1
		ip -6 route add ${TOPO_NET6}:/64 via ${EDGE_NET6}:1
	"
}

# The LB segment's hosts reach the client segment through the router.
edge_route_back() {
	in_ns "$1" bash -e -c "
		ip route add $EDGE_NET4.0/24 via $ROUTER_IP4
		ip -6 route add ${EDGE_NET6}:/64 via $ROUTER_IP6
	"
}

# bird.conf of the router: a session per LB host.
edge_router_conf() {
	local h

	cat <<-EOF
		log stderr all;
		debug protocols { states };	# sessions up and down, in the log
		router id $ROUTER_IP4;
		protocol device { }
		protocol kernel {
			ipv4 { import none; export all; };
			merge paths on;
		}
		protocol kernel {
			ipv6 { import none; export all; };
			merge paths on;
		}
		protocol bfd {
			interface "eth0" {
				min rx interval 100 ms;
				min tx interval 100 ms;
				multiplier 3;
			};
		}
		template bgp lbs {
			local $ROUTER_IP4 as 65000;
			bfd on;
			hold time 9;
			keepalive time 3;
			connect retry time 2;
			connect delay time 1;
			error wait time 1, 3;
			ipv4 { import all; export none; };
			ipv6 { import all; export none; };
		}
	EOF
	for h in "${EDGE_HOSTS[@]}"; do
		echo "protocol bgp $h from lbs { neighbor ${EDGE_ADDR[$h]} as 65001; }"
	done
}

# bird.conf of LB host h: dist/bird-xlb.conf with its addresses.
edge_lb_conf() {
	local h=$1 n

	n=${EDGE_ADDR[$h]##*.}
	echo "log stderr all;"		# into TOPO_DIR/bird-HOST.log
	sed -e "s/^define HOST_ADDR = .*/define HOST_ADDR = ${EDGE_ADDR[$h]};/" \
	    -e "s/^define ROUTER_ADDR = .*/define ROUTER_ADDR = $ROUTER_IP4;/" \
	    -e "s/^define XLB_TABLE = .*/define XLB_TABLE = $EDGE_TABLE;/" \
	    -e "s/next hop address 2001:db8::11;/next hop address ${TOPO_NET6}:$n;/" \
	    "$XLB_ROOT/dist/bird-xlb.conf"
}

# edge_bird_start HOST: bird in HOST's namespace, socket in TOPO_DIR.
edge_bird_start() {
	local h=$1 conf=$TOPO_DIR/bird-$1.conf i

	if [[ $h == rt ]]; then
		edge_router_conf >"$conf"
	else
		edge_lb_conf "$h" >"$conf"
	fi
	rm -f "$TOPO_DIR/bird-$h.ctl"
	topo_bg "$h" "bird-$h" bird -f -c "$conf" -s "$TOPO_DIR/bird-$h.ctl" \
		-P "$TOPO_DIR/bird-$h.pid"
	EDGE_SPEAKER_PID[$h]=$TOPO_LAST_PID
	for ((i = 0; i < 50; i++)); do
		[[ -S $TOPO_DIR/bird-$h.ctl ]] && return 0
		kill -0 "$TOPO_LAST_PID" 2>/dev/null || break
		sleep 0.1
	done
	topo_err "bird on $h did not start:"
	sed 's/^/#   /' "$TOPO_DIR/bird-$h.log" >&2
	return 1
}

# edge_speaker_start HOST: the BGP speaker of LB host HOST (the router's
# is bird2 whatever EDGE_SPEAKER says).
edge_speaker_start() {
	if [[ $1 != rt && $EDGE_SPEAKER == frr ]]; then
		edge_frr_start "$1"
	else
		edge_bird_start "$1"
	fi
}

# frr.conf of LB host h: dist/frr-xlb.conf with its addresses and table.
edge_frr_conf() {
	local h=$1

	sed -e "s/192\.0\.2\.11/${EDGE_ADDR[$h]}/g" \
	    -e "s/192\.0\.2\.1\b/$ROUTER_IP4/g" \
	    -e "s/import-table 100\$/import-table $EDGE_TABLE/" \
	    -e "s/redistribute table 100\$/redistribute table $EDGE_TABLE/" \
	    "$XLB_ROOT/dist/frr-xlb.conf"
}

# edge_frr_start HOST: zebra, bfdd and bgpd in HOST's namespace (as the
# frr user, the way Debian runs them), sockets and logs in
# TOPO_DIR/frr-HOST, no configuration of their own; then the host's
# frr.conf through vtysh, as `vtysh -b` loads /etc/frr/frr.conf.
EDGE_FRR=/usr/lib/frr
edge_frr_start() {
	local h=$1 d=$TOPO_DIR/frr-$1 dm pids= i

	rm -rf "$d" && mkdir -p "$d" || return 1
	edge_frr_conf "$h" >"$d/frr.conf"
	# the frr user reaches its folder through TOPO_DIR (mktemp: 0700)
	chown -R frr:frr "$d" && chmod o+x "$TOPO_DIR" || return 1
	for dm in zebra bfdd bgpd; do
		local extra=()

		[[ $dm == bfdd ]] && extra=(--bfdctl "$d/bfdd.sock")
		topo_bg "$h" "frr-$h-$dm" "$EDGE_FRR/$dm" -F datacenter \
			-f /dev/null -i "$d/$dm.pid" -z "$d/zserv.api" \
			--vty_socket "$d" -P 0 "${extra[@]}"
		pids+="$TOPO_LAST_PID "
		for ((i = 0; i < 50; i++)); do
			[[ -S $d/$dm.vty ]] && break
			kill -0 "$TOPO_LAST_PID" 2>/dev/null || break
			sleep 0.1
		done
		if [[ ! -S $d/$dm.vty ]]; then
			EDGE_SPEAKER_PID[$h]=$pids
			topo_err "$dm on $h did not start:"
			sed 's/^/#   /' "$TOPO_DIR/frr-$h-$dm.log" >&2
			return 1
		fi
	done
	EDGE_SPEAKER_PID[$h]=$pids
	edge_vtysh "$h" -f "$d/frr.conf" >"$TOPO_DIR/frr-$h-vtysh.log" 2>&1 || {
		topo_err "FRR on $h refused its configuration:"
		sed 's/^/#   /' "$TOPO_DIR/frr-$h-vtysh.log" >&2
		return 1
	}
}

edge_vtysh() {
	local h=$1

	shift
	in_ns "$h" vtysh --vty_socket "$TOPO_DIR/frr-$h" "$@"
}

edge_birdc() {
	local h=$1

	shift
	in_ns "$h" birdc -s "$TOPO_DIR/bird-$h.ctl" "$@"
}

# edge_xlbd_start HOST: xlbd of LB host HOST in cluster mode; its socket is
# $TOPO_DIR/HOST.sock (lb: XLBD_SOCK), state in $TOPO_DIR/HOST-state.
edge_xlbd_start() {
	local h=$1 i sock inst

	if [[ $h == lb ]]; then
		rm -f "$XLBD_SOCK"
		topo_xlbd_start --etcd "$ETCD_URL" --cluster "$EDGE_CL" \
			--host-name lb || return 1
		EDGE_XLBD_PID[lb]=$XLBD_PID
		return 0
	fi
	sock=$TOPO_DIR/$h.sock inst=$TOPO_PREFIX$h
	mkdir -p "$TOPO_DIR/$h-state"
	rm -f "$sock"	# a killed xlbd's: wait for the new one's
	topo_bg "$h" "xlbd-$h" "$XLB_BIN/xlbd" --instance "$inst" \
		--socket "$sock" --state-dir "$TOPO_DIR/$h-state" \
		--etcd "$ETCD_URL" --cluster "$EDGE_CL" --host-name "$h"
	EDGE_XLBD_PID[$h]=$TOPO_LAST_PID
	for ((i = 0; i < 100; i++)); do
		[[ -S $sock ]] && return 0
		kill -0 "$TOPO_LAST_PID" 2>/dev/null || break
		sleep 0.1
	done
	topo_err "xlbd on $h did not start:"
	tail -5 "$TOPO_DIR/xlbd-$h.log" | sed 's/^/#   /' >&2
	return 1
}

# The host's own settings (kept in its state.conf over restarts).
edge_xlbd_setup() {
	local h=$1 n

	n=${EDGE_ADDR[$h]##*.}
	xlbctl_on "$h" set src4 "${EDGE_ADDR[$h]}" >/dev/null &&
		xlbctl_on "$h" set src6 "${TOPO_NET6}:$n" >/dev/null &&
		xlbctl_on "$h" link attach eth0 >/dev/null &&
		xlbctl_on "$h" set announce table "$EDGE_TABLE" >/dev/null
}

# After topo_up built the segments: the LB hosts, etcd, xlbds and birds.
edge_start() {
	local n=$1 k h

	if ! command -v bird >/dev/null || ! command -v birdc >/dev/null; then
		topo_err "bird2 is missing; run 'make deps'"
		return 1
	fi
	if [[ $EDGE_SPEAKER == frr && ! -x $EDGE_FRR/bgpd ]]; then
		topo_err "frr is missing; run 'make deps'"
		return 1
	fi
	EDGE_HOSTS=(lb) EDGE_ADDR=([lb]=$LB_IP4)
	for ((k = 2; k <= n; k++)); do
		h=lb$k
		topo_add_lb "$h" $((k + 1)) || return 1
		EDGE_HOSTS+=("$h") EDGE_ADDR[$h]=$TOPO_NET4.$((k + 1))
	done
	# No unknown-unicast flooding toward the LB hosts: frames for a host
	# whose port went down must not reach the others (whose XDP sees
	# every frame a veth delivers, whatever its MAC) and hide a failure.
	for h in "${EDGE_HOSTS[@]}"; do
		bridge -n "$NS_SW" link set dev "$h" flood off || return 1
	done
	topo_at_down edge_down
	topo_etcd_up || return 1
	edge_route_back etcd || return 1
	for h in "${EDGE_HOSTS[@]}"; do
		if ! edge_xlbd_start "$h" || ! edge_xlbd_setup "$h"; then
			topo_err "xlbd on $h: no setup"
			return 1
		fi
	done
	edge_bird_start rt || return 1
	for h in "${EDGE_HOSTS[@]}"; do
		edge_speaker_start "$h" || return 1
	done
	edge_wait_sessions
}

# Every BGP session of the router established (20 s).
edge_wait_sessions() {
	local i up

	for ((i = 0; i < 200; i++)); do
		up=$(edge_birdc rt show protocols 2>/dev/null |
			awk '$2 == "BGP" && $6 == "Established"' | wc -l)
		[[ $up -eq ${#EDGE_HOSTS[@]} ]] && return 0
		sleep 0.1
	done
	topo_err "BGP sessions of the router: $up of ${#EDGE_HOSTS[@]} established"
	edge_birdc rt show protocols >&2
	return 1
}

# The router's next hops toward ADDR (its route in the main table), sorted.
edge_nexthops() {
	ip -n "$NS_RT" -4 route show "$1/32" 2>/dev/null |
		grep -o 'via [0-9.]*' | awk '{ print $2 }' | sort | tr '\n' ' '
}

# edge_wait_nexthops ADDR N: until the router has N next hops (10 s).
edge_wait_nexthops() {
	local i

	for ((i = 0; i < 1000; i++)); do
		[[ $(wc -w <<<"$(edge_nexthops "$1")") -eq $2 ]] && return 0
		sleep 0.01
	done
	return 1
}

# edge_watch_nexthops ADDR WANT FILE: in the background, the time (ms)
# at which the router's next hops toward ADDR become WANT (edge_nexthops'
# form) goes to FILE; gives up after 20 s.  Start it before the change.
edge_watch_nexthops() {
	local addr=$1 want=$2 file=$3 i

	rm -f "$file"
	for ((i = 0; i < 4000; i++)); do
		if [[ $(edge_nexthops "$addr") == "$want" ]]; then
			echo $(($(date +%s%N) / 1000000)) >"$file"
			return 0
		fi
		sleep 0.005
	done
	return 1
}

# edge_nexthops_time T0 ADDR WANT: the ms from T0 (ms since the epoch)
# until the router's next hops toward ADDR are WANT (edge_nexthops' form),
# or "never (...)" and non-zero after 10 s.
edge_nexthops_time() {
	local t0=$1 addr=$2 want=$3 i

	for ((i = 0; i < 2000; i++)); do
		if [[ $(edge_nexthops "$addr") == "$want" ]]; then
			echo $(($(date +%s%N) / 1000000 - t0))
			return 0
		fi
		sleep 0.005
	done
	echo "never (next hops $(edge_nexthops "$addr"))"
	return 1
}

# edge_sock HOST: the control socket of HOST's xlbd.
edge_sock() {
	if [[ $1 == lb ]]; then echo "$XLBD_SOCK"; else echo "$TOPO_DIR/$1.sock"; fi
}

# edge_counters VIP: "HOST NEW_FLOWS PACKETS" of VIP on every LB host
# ("HOST 0 0" for a host whose xlbd is gone).
edge_counters() {
	local h vip=$1

	for h in "${EDGE_HOSTS[@]}"; do
		[[ -S $(edge_sock "$h") ]] || { echo "$h 0 0"; continue; }
		xlbctl_on "$h" -j stats "$vip" | "${TAP_PYTHON:-python3}" -c '
import json, sys
v = json.load(sys.stdin)["vips"][0]
print(sys.argv[1], v["new_flows"], v["packets"])' "$h"
	done
}

# edge_spread BEFORE AFTER N CONNS-JSON...: from edge_counters before and
# after, and the `xlb-traffic conns -j` results of the run: "C completed F
# failed; new flows per LB host: ..."; non-zero unless N completed, none
# failed, every LB host took new flows and they add up to N or more.
edge_spread() {
	"${TAP_PYTHON:-python3}" - "$@" <<-'EOF'
		import json, sys
		a = {l.split()[0]: int(l.split()[1]) for l in open(sys.argv[1])}
		b = {l.split()[0]: int(l.split()[1]) for l in open(sys.argv[2])}
		js = [json.load(open(f)) for f in sys.argv[4:]]
		done = sum(j["completed"] for j in js)
		failed = sum(j["failed"] for j in js)
		d = {h: b[h] - a[h] for h in b}
		tot = sum(d.values())
		print("%d completed %d failed; new flows per LB host: %s" % (done, failed,
		      " ".join("%s %d (%.1f%%)" % (h, d[h], 100.0 * d[h] / max(tot, 1))
		               for h in sorted(d))))
		sys.exit(0 if failed == 0 and done == int(sys.argv[3]) and
		         min(d.values()) > 0 and tot >= done else 1)
	EOF
}

# edge_host_lose HOST: the host goes away as a crash would: its link down
# first (nothing it sends reaches the router: BFD must notice; the time,
# in ms, goes to $TOPO_DIR/lost-at), then its bird and xlbd killed, then
# its data path removed.
edge_host_lose() {
	local h=$1 ns

	ns=$(topo_ns "$h")
	in_ns "$h" ip link set eth0 down || return 1
	echo $(($(date +%s%N) / 1000000)) >"$TOPO_DIR/lost-at"
	# shellcheck disable=SC2086	# FRR: three pids
	kill -KILL ${EDGE_SPEAKER_PID[$h]} "${EDGE_XLBD_PID[$h]}" 2>/dev/null
	# shellcheck disable=SC2086
	wait ${EDGE_SPEAKER_PID[$h]} "${EDGE_XLBD_PID[$h]}" 2>/dev/null
	timeout 10 nsenter --net="/var/run/netns/$ns" -- "$XLB_BIN/xlbd" \
		--cleanup --instance "$(edge_instance "$h")" \
		--state-dir "$(edge_state_dir "$h")" >>"$TOPO_DIR/xlbd-$h.log" 2>&1
}

edge_instance() {
	if [[ $1 == lb ]]; then echo "${TOPO_PREFIX%-}"; else echo "$TOPO_PREFIX$1"; fi
}

edge_state_dir() {
	if [[ $1 == lb ]]; then echo "$TOPO_DIR/xlbd-state"; else echo "$TOPO_DIR/$1-state"; fi
}

# edge_host_return HOST: link up, a fresh xlbd (new data path: an empty
# connection table) from its saved state, then its bird.
edge_host_return() {
	local h=$1

	in_ns "$h" ip link set eth0 up || return 1
	edge_xlbd_start "$h" || return 1
	[[ $h == lb ]] && XLBD_PID=${EDGE_XLBD_PID[lb]}
	edge_speaker_start "$h"
}

# Teardown: birds first (no more routes), then the rest goes with topo.sh.
edge_down() {
	local h pid

	for h in rt "${EDGE_HOSTS[@]}"; do
		for pid in ${EDGE_SPEAKER_PID[$h]:-}; do
			topo_stop "$pid" 3
		done
	done
	for h in "${EDGE_HOSTS[@]}"; do
		[[ $h == lb || -z ${EDGE_XLBD_PID[$h]:-} ]] && continue
		topo_stop "${EDGE_XLBD_PID[$h]}" 5
	done
	EDGE_HOSTS=() EDGE_SPEAKER_PID=() EDGE_XLBD_PID=() NS_RT=
	return 0
}
