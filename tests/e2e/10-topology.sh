#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The test network itself (tests/e2e/lib/topo.sh), without xlbd: hosts,
# addresses and routes; clients reach every backend directly over IPv4 and
# IPv6; backends answer on the VIPs locally and run the decap program; the
# switch ports run NAPI; teardown leaves nothing behind, on return, exit,
# SIGTERM and SIGINT; the leftovers of dead runs are deleted (runs killed
# with SIGKILL and hand-made ones), those of live runs are left alone, and
# leftovers that cannot be deleted stop topo_up with a reason.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh

X=$XLB_BIN/xlb-traffic
[[ $(id -u) -eq 0 ]] || tap_bail "needs root"
for f in "$X" "$XLB_BIN/xlb_decap.bpf.o"; do
	[[ -e $f ]] || tap_bail "$f is missing; run 'make'"
done

work=$(mktemp -d) || exit 1
extra_pids=()
cleanup() {
	local p

	topo_down
	for p in "${extra_pids[@]}" $(cat "$work/sleeps" 2>/dev/null); do
		kill "$p" 2>/dev/null
	done
	for p in "$work"/fake-*; do
		[[ -e $p ]] && ip netns del "$(basename "$p" | cut -d- -f2-)" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT

# ns_with PREFIX: namespaces whose name starts with PREFIX
ns_with() {
	ip netns list | awk -v p="$1" 'index($1, p) == 1 { print $1 }'
}

# The ones of these pids that are running (not zombies).
running() {
	ps -o pid=,stat= -p "$*" 2>/dev/null | awk '$2 !~ /^Z/ { print $1 }'
}

# A pid that is surely not running: a child that has exited.
dead_pid() {
	local p

	bash -c 'exit 0' &
	p=$!
	wait "$p"
	echo "$p"
}

# child_topo SCRIPT: a bash that brings a topology up and then runs
# SCRIPT (where `idle` waits, interruptibly, for up to 10 minutes); sets
# CHILD (its pid) and CHILD_PREFIX once it is up.
child_topo() {
	rm -f "$work/prefix"
	python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)	# "&" ignores INT
os.execvp("bash", ["bash", "-c", sys.argv[1]])' "
		. tests/e2e/lib/topo.sh
		idle() { sleep 600 & echo \$! >>'$work/sleeps'; wait; }
		topo_up --backends 1 --clients 1 >/dev/null 2>&1 || exit 9
		topo_serve >/dev/null 2>&1
		echo \"\$TOPO_PREFIX\" >'$work/prefix.tmp'
		mv '$work/prefix.tmp' '$work/prefix'
		$1" &
	CHILD=$!
	for _ in $(seq 100); do
		[[ -s $work/prefix ]] && break
		kill -0 "$CHILD" 2>/dev/null || break
		sleep 0.1
	done
	CHILD_PREFIX=$(cat "$work/prefix" 2>/dev/null)
	[[ -n $CHILD_PREFIX ]]
}

# --- leftovers --------------------------------------------------------------

# A run killed with SIGKILL: its namespaces and its servers stay behind.
killed_prefix=
killed_serve=
if child_topo idle; then
	killed_prefix=$CHILD_PREFIX
	killed_serve=$(ip netns pids "${killed_prefix}b1" | tr '\n' ' ')
	kill -KILL "$CHILD"
	wait "$CHILD" 2>/dev/null
fi
tap_result "$([[ -n $killed_prefix && -n $(ns_with "$killed_prefix") &&
	-n $killed_serve ]]; echo $?)" \
	"a run killed with SIGKILL leaves namespaces and processes behind" \
	"prefix '$killed_prefix', servers: $killed_serve"

# Hand-made leftovers of a dead run (two namespaces, a veth between them, a
# process inside), and a namespace of a live run.
fake=${TOPO_TAG}$(dead_pid)-
ip netns add "${fake}lb" && touch "$work/fake-${fake}lb"
ip netns add "${fake}b1" && touch "$work/fake-${fake}b1"
ip -n "${fake}lb" link add eth0 type veth peer name eth0 netns "${fake}b1"
nsenter --net="/var/run/netns/${fake}lb" -- sleep 600 &
fake_sleep=$!
extra_pids+=("$fake_sleep")
sleep 600 &
live_pid=$!
extra_pids+=("$live_pid")
live=${TOPO_TAG}$live_pid-
ip netns add "${live}lb" && touch "$work/fake-${live}lb"

left=$(topo_leftovers | sort | tr '\n' ' ')
want=$(printf '%s\n' "$fake" $killed_prefix | sort | tr '\n' ' ')
tap_result "$([[ $left == "$want" ]]; echo $?)" \
	"topo_leftovers names the dead runs, not the live one" \
	"got '$left', want '$want'"

# Leftovers that cannot be deleted: topo_up must stop and say so.
out=$(
	ip() {	# a namespace that refuses to go
		[[ $1 == netns && ${2:-} == del ]] && return 1
		command ip "$@"
	}
	topo_up 2>&1
	echo "rc=$?"
)
tap_result "$([[ $out == *"cannot be deleted"* && $out == *rc=1 &&
	-z $(ns_with "$TOPO_TAG$$-") ]]; echo $?)" \
	"topo_up refuses to run over leftovers it cannot delete" "$out"

# --- up ---------------------------------------------------------------------

ms() { echo $(($(date +%s%N) / 1000000)); }
links_before=$(ip -o link show | awk -F': ' '{ print $2 }' | sort)
t0=$(ms)
topo_up --backends 5 >"$work/up.log" 2>&1
rc=$?
t1=$(ms)
tap_result $rc "topo_up --backends 5 builds the network" "$(cat "$work/up.log")"
[[ $rc -eq 0 ]] || tap_bail "no network"
tap_diag "topo_up took $((t1 - t0)) ms; prefix $TOPO_PREFIX"
prefix=$TOPO_PREFIX

left=$(ns_with "$fake"; ns_with "$killed_prefix"; running "$fake_sleep" $killed_serve)
tap_result "$([[ -z $left ]]; echo $?)" \
	"topo_up deleted the dead runs' namespaces and stopped their processes" \
	"left: $left"
tap_result "$([[ -n $(ns_with "$live") ]]; echo $?)" \
	"topo_up left the live run's namespace alone"
ip netns del "${live}lb"

want=$(printf "${prefix}%s\n" sw lb c1 c2 b1 b2 b3 b4 b5 | sort)
got=$(ns_with "$prefix" | sort)
tap_result "$([[ $got == "$want" ]]; echo $?)" \
	"namespaces: switch, LB, 2 clients, 5 backends" "got: $got"

# addresses, MACs, offloads
bad=()
for i in 0 1; do
	h=${CLIENTS[i]}
	a=$(in_ns "$h" ip -br addr show eth0)
	[[ $a == *" ${CLIENT_IP4[i]}/24 "* && $a == *" ${CLIENT_IP6[i]}/64 "* ]] ||
		bad+=("$h: $a")
done
for i in "${!BACKENDS[@]}"; do
	h=${BACKENDS[i]}
	a=$(in_ns "$h" ip -br addr show eth0)
	[[ $a == *" ${BACKEND_IP4[i]}/24 "* && $a == *" ${BACKEND_IP6[i]}/64 "* ]] ||
		bad+=("$h: $a")
	a=$(in_ns "$h" ip -br addr show lo)
	[[ $a == *" $VIP4/32 "* && $a == *" $VIP6/128 "* ]] || bad+=("$h lo: $a")
	# the ranges: local routes through lo (xlb-backend's VIP prefixes)
	a=$(in_ns "$h" ip route show table local type local "$VIP4_NET")
	[[ $a == "local $VIP4_NET dev lo "* ]] || bad+=("$h: route '$a'")
	a=$(in_ns "$h" ip -6 route show table local type local "$VIP6_NET")
	[[ $a == "local $VIP6_NET dev lo "* ]] || bad+=("$h: route '$a'")
done
a=$(in_ns lb ip -br addr show "$LB_IF")
[[ $a == *" $LB_IP4/24 "* && $a == *" $LB_IP6/64 "* ]] || bad+=("lb: $a")
tap_result ${#bad[@]} "every host has its IPv4 and IPv6 addresses, backends the VIPs on lo" \
	"${bad[@]}"

bad=()
for h in "${CLIENTS[@]}" "${BACKENDS[@]}"; do
	in_ns "$h" ethtool -k eth0 | grep -q '^tx-checksumming: off' ||
		bad+=("$h: $(in_ns "$h" ethtool -k eth0 | grep '^tx-checksumming')")
done
tap_result ${#bad[@]} "TX checksum offload is off on clients and backends" "${bad[@]}"

# xdp_prog HOST IF: the name of the XDP program on IF
xdp_prog() {
	in_ns "$1" ip -j link show dev "$2" | "$TAP_PYTHON" -c '
import json, sys
l = json.load(sys.stdin)[0]
print(l.get("xdp", {}).get("prog", {}).get("name", "none"))'
}
bad=()
for h in lb "${CLIENTS[@]}" "${BACKENDS[@]}"; do
	p=$(xdp_prog sw "$h")
	[[ $p == xdp_pass ]] || bad+=("switch port $h: $p")
done
tap_result ${#bad[@]} "every switch port runs XDP_PASS (NAPI for XDP_TX frames)" "${bad[@]}"

bad=()
for h in "${BACKENDS[@]}"; do
	p=$(xdp_prog "$h" eth0)
	[[ $p == xlb_decap ]] || bad+=("$h eth0: $p")
done
tap_result ${#bad[@]} "every backend runs xlb_decap on eth0" "${bad[@]}"

bad=()
for h in "${CLIENTS[@]}"; do
	r4=$(in_ns "$h" ip route get "$(vip4 7)")
	r6=$(in_ns "$h" ip -6 route get "$(vip6 7)")
	[[ $r4 == *"via $LB_IP4 "* ]] || bad+=("$h: $r4")
	[[ $r6 == *"via $LB_IP6 "* ]] || bad+=("$h: $r6")
done
tap_result ${#bad[@]} "clients route the VIP ranges via the LB" "${bad[@]}"

# --- traffic ----------------------------------------------------------------

topo_serve >"$work/serve.log" 2>&1
tap_result $? "xlb-traffic serve on every backend" "$(cat "$work/serve.log")"

# only_from JSON ID N: all N answered, all by ID
only_from() {
	[[ $(json_get "$1" "(j['completed'], list(j['backends']))") == \
	   "($3, ['$2'])" ]] || { cat "$1"; return 1; }
}

# direct FAMILY MODE: every client to every backend's own address
direct() {
	local fam=$1 mode=$2 bad=() c i to

	for c in "${CLIENTS[@]}"; do
		for i in "${!BACKENDS[@]}"; do
			if [[ $fam == 4 ]]; then
				to=${BACKEND_IP4[i]}:80
			else
				to=[${BACKEND_IP6[i]}]:80
			fi
			in_ns "$c" "$X" "$mode" --to "$to" -n 20 -j \
				>"$work/out.json" 2>&1
			only_from "$work/out.json" "${BACKENDS[i]}" 20 >/dev/null ||
				bad+=("$c -> $to: $(cat "$work/out.json")")
		done
	done
	tap_result ${#bad[@]} "clients reach every backend directly: IPv$fam $mode" \
		"${bad[@]}"
}
direct 4 conns
direct 6 conns
direct 4 udp
direct 6 udp

bad=()
for h in "${BACKENDS[@]}"; do
	for to in "$VIP4:80" "[$VIP6]:80" "$(vip4 200):80" "[$(vip6 200)]:80"; do
		for mode in conns udp; do
			in_ns "$h" "$X" "$mode" --to "$to" -n 5 -j \
				>"$work/out.json" 2>&1
			only_from "$work/out.json" "$h" 5 >/dev/null ||
				bad+=("$h $mode $to: $(cat "$work/out.json")")
		done
	done
done
tap_result ${#bad[@]} "backends answer on any VIP of the ranges locally (TCP, UDP)" \
	"${bad[@]}"

# Malformed frames cross the switch as they were sent: the bridge must not
# validate or trim IP (br_netfilter, when the host has it loaded).  c1
# sends, straight onto its eth0, an IPv4 header with IHL 3 and a valid
# IPv4/UDP packet followed by a 20-byte Ethernet trailer; the LB's eth0
# must see both, byte for byte.
cat >"$work/raw.py" <<'PY'
import socket, struct, sys, time
mark = b"xlb-malformed-probe"
def frames(dst_mac, src_mac, src, dst):
    eth = bytes.fromhex(dst_mac.replace(":", "")) + \
          bytes.fromhex(src_mac.replace(":", "")) + b"\x08\x00"
    s, d = socket.inet_aton(src), socket.inet_aton(dst)
    udp = struct.pack("!HHHH", 40000, 9, 8 + len(mark), 0) + mark
    def ip(ihl_byte, tot):
        h = struct.pack("!BBHHHBBH4s4s", ihl_byte, 0, tot, 1, 0, 64, 17, 0, s, d)
        c = sum(struct.unpack("!10H", h))
        c = (c & 0xffff) + (c >> 16); c = (c & 0xffff) + (c >> 16)
        return h[:10] + struct.pack("!H", ~c & 0xffff) + h[12:]
    bad_ihl = eth + ip(0x43, 20 + len(udp)) + udp
    trailer = eth + ip(0x45, 20 + len(udp)) + udp + b"\xee" * 20
    return [bad_ihl, trailer]
if sys.argv[1] == "send":
    f = frames(*sys.argv[2:6])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind(("eth0", 0))
    for x in f:
        s.send(x)
else:
    want = frames(*sys.argv[2:6])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind(("eth0", 0))
    s.settimeout(0.5)
    open(sys.argv[6], "w").close()
    seen, end = [], time.time() + 5
    while time.time() < end and len(seen) < len(want):
        try:
            x = s.recv(4096)
        except socket.timeout:
            continue
        if mark in x:
            seen.append(x)
    ok = [w in seen for w in want]
    print("bad IHL %s, trailer %s; seen lengths %s" % (
        "seen" if ok[0] else "missing", "kept" if ok[1] else "missing or cut",
        [len(x) for x in seen]))
    sys.exit(0 if all(ok) else 1)
PY
c1_mac=$(in_ns c1 ip -br link show dev eth0 | awk '{ print $3 }')
lb_mac=$(in_ns lb ip -br link show dev eth0 | awk '{ print $3 }')
rm -f "$work/rx-ready"
in_ns lb python3 "$work/raw.py" recv "$lb_mac" "$c1_mac" "${CLIENT_IP4[0]}" "$LB_IP4" \
	"$work/rx-ready" >"$work/raw.out" 2>&1 &
rx=$!
for _ in $(seq 50); do
	[[ -e $work/rx-ready ]] && break
	sleep 0.1
done
in_ns c1 python3 "$work/raw.py" send "$lb_mac" "$c1_mac" "${CLIENT_IP4[0]}" "$LB_IP4" \
	>>"$work/raw.out" 2>&1
wait "$rx"
tap_result $? "malformed frames (IPv4 IHL 3, Ethernet trailer) reach the LB unchanged" \
	"$(cat "$work/raw.out")" \
	"bridge-nf-call-iptables in the switch: $(in_ns sw cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>&1)"

# Nothing on the LB yet: VIP traffic cannot reach the backends.
in_ns c1 "$X" conns --to "$VIP4:80" -n 3 --timeout 2000 -j >"$work/out.json" 2>&1
tap_result "$([[ $(json_get "$work/out.json" "j['completed']") == 0 ]]; echo $?)" \
	"without a data path on the LB, VIP connections do not complete" \
	"$(cat "$work/out.json")"

# --- down -------------------------------------------------------------------

serve_pids=$(for h in "${BACKENDS[@]}"; do ip netns pids "$prefix$h"; done | tr '\n' ' ')
topo_dir=$TOPO_DIR
topo_down
rc=$?
links_after=$(ip -o link show | awk -F': ' '{ print $2 }' | sort)
left=$(ns_with "$prefix"; running $serve_pids)
tap_result "$([[ $rc -eq 0 && -z $left ]]; echo $?)" \
	"topo_down deletes every namespace and stops every process in them" \
	"rc $rc, left: $left"
# new interfaces of the host named like ours (others may come and go)
new_links=$(comm -13 <(echo "$links_before") <(echo "$links_after") |
	grep -E '^(br0|sw|lb|eth0|[bc][0-9])(@|$)')
tap_result "$([[ -z $new_links ]]; echo $?)" \
	"no interface is left in the host's namespace" "$new_links"
tap_result "$([[ ! -e $topo_dir && ! -e $TOPO_RUN_DIR/${prefix%-} ]]; echo $?)" \
	"topo_down removes its directory and its run marker"
tap_result "$([[ $(trap -p EXIT) == *cleanup* ]]; echo $?)" \
	"topo_down gives the caller its EXIT trap back" "$(trap -p EXIT)"

# --- teardown on exit and signals ---------------------------------------------

# gone_after KIND SCRIPT [SIGNAL]: a child brings a network up, runs SCRIPT,
# is sent SIGNAL; its namespaces must be gone when it has ended.
gone_after() {
	local name=$1 script=$2 sig=${3:-} rc

	if ! child_topo "$script"; then
		tap_result 1 "teardown on $name" "the child did not come up"
		return
	fi
	[[ -n $sig ]] && kill "-$sig" "$CHILD"
	for _ in $(seq 100); do
		kill -0 "$CHILD" 2>/dev/null || break
		sleep 0.1
	done
	wait "$CHILD" 2>/dev/null
	rc=$?
	left=$(ns_with "$CHILD_PREFIX")
	tap_result "$([[ -z $left ]]; echo $?)" "teardown on $name (exit status $rc)" \
		"left: $left"
}
gone_after "exit" 'exit 3'
# under errexit, with a server already dead (its status is non-zero)
gone_after "a failing script (set -e)" \
	'set -e; kill -KILL "${TOPO_PIDS[0]}"; sleep 0.2; false; echo unreachable'
gone_after "SIGTERM" idle TERM
gone_after "SIGINT (Ctrl-C)" idle INT
gone_after "SIGHUP" idle HUP

tap_done
