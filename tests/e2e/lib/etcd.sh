# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# etcd on the test network (sourced by topo.sh): one member (Debian's
# etcd-server 3.4) in a namespace of its own on the segment, for the
# cluster mode of xlbd (docs/cluster.md).
#
#   topo_etcd_up                 # after topo_up: host "etcd", ETCD_URL
#   xlbctl_on HOST ARGS...       # xlbctl against HOST's xlbd
#   etcd_put KEY VALUE | etcd_get KEY | etcd_del KEY | etcd_ctl ARGS...
#   topo_etcd_stop [KILL]        # etcd down (TERM, or KILL), data kept
#   topo_etcd_start              # back, same data, same address
#
# Address: 10.200.0.40 (MAC 02:00:0a:c8:00:28), client port 2379, peer
# port 2380, data in $TOPO_DIR/etcd.  etcdctl runs in the etcd namespace.
# Three members are run the same way with three namespaces, each started
# with --initial-cluster naming all three (docs/cluster.md says how); one
# is enough for what the tests check.

ETCD_IP=$TOPO_NET4.40
ETCD_URL=
ETCD_PID=
NS_ETCD=

# topo_etcd_up: the namespace, its link, etcd, and a wait for its answer.
topo_etcd_up() {
	[[ $TOPO_UP -eq 1 ]] || { topo_err "topo_up first"; return 1; }
	command -v etcd >/dev/null ||
		{ topo_err "etcd is missing; run 'make deps'"; return 1; }
	NS_ETCD=${TOPO_PREFIX}etcd
	ip netns add "$NS_ETCD" || return 1
	topo_host_sysctls etcd &&
		topo_link etcd 02:00:0a:c8:00:28 "$ETCD_IP" "${TOPO_NET6}:40" \
			1500 || return 1
	ETCD_URL=http://$ETCD_IP:2379
	topo_at_down topo_etcd_down
	topo_etcd_start
}

# topo_etcd_start: etcd (again) with its data; waits up to 10 s for it.
topo_etcd_start() {
	local i

	topo_bg etcd etcd etcd --name xe2e --data-dir "$TOPO_DIR/etcd" \
		--listen-client-urls "$ETCD_URL" \
		--advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls "http://$ETCD_IP:2380" \
		--initial-advertise-peer-urls "http://$ETCD_IP:2380" \
		--initial-cluster "xe2e=http://$ETCD_IP:2380" \
		--logger zap --log-outputs stderr
	ETCD_PID=$TOPO_LAST_PID
	for ((i = 0; i < 100; i++)); do
		etcd_ctl endpoint health >/dev/null 2>&1 && return 0
		kill -0 "$ETCD_PID" 2>/dev/null || break
		sleep 0.1
	done
	topo_err "etcd did not come up:"
	tail -5 "$TOPO_DIR/etcd.log" | sed 's/^/#   /' >&2
	return 1
}

# topo_etcd_stop [KILL]: etcd goes away (TERM, or KILL); its data stays.
topo_etcd_stop() {
	[[ -n $ETCD_PID ]] || return 0
	[[ ${1:-} == KILL ]] && kill -KILL "$ETCD_PID" 2>/dev/null
	topo_stop "$ETCD_PID" 5 || true
	ETCD_PID=
	return 0
}

topo_etcd_down() {
	topo_etcd_stop
	[[ -n $NS_ETCD ]] && topo_del_ns "$NS_ETCD"
	NS_ETCD= ETCD_URL=
}

# etcdctl (API v3) against the test etcd, from its own namespace.
etcd_ctl() {
	ETCDCTL_API=3 in_ns etcd etcdctl --endpoints "$ETCD_URL" \
		--command-timeout 5s "$@"
}

# etcd_put KEY VALUE: the value as given (newlines kept).
etcd_put() {
	printf '%s' "$2" | etcd_ctl put "$1" >/dev/null
}

# etcd_get KEY: the value alone (nothing if absent).
etcd_get() {
	etcd_ctl get --print-value-only "$1"
}

etcd_del() {
	etcd_ctl del "$1" >/dev/null
}

# xlbctl_on HOST ARGS...: xlbctl against the xlbd of LB host HOST, whose
# socket is $TOPO_DIR/HOST.sock (lb: XLBD_SOCK).
xlbctl_on() {
	local host=$1 sock

	shift
	sock=$TOPO_DIR/$host.sock
	[[ $host == lb ]] && sock=$XLBD_SOCK
	in_ns "$host" "$XLB_BIN/xlbctl" -s "$sock" "$@"
}
