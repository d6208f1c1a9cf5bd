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
#   cluster_converged REV HOST...  # every HOST at REV, in agreement
#   cluster_propagation N VIP ADDR HOST...   # the etcd write -> last host
#   cluster_percentiles FILE                 # live figure (xlb-bench too)
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

# cluster_converged REV HOST...: in the first HOST's `cluster status`,
# every HOST alive at revision >= REV and all in agreement (10 s); prints
# the status when they are not.
cluster_converged() {
	local rev=$1 i py=${TAP_PYTHON:-python3}

	shift
	for ((i = 0; i < 100; i++)); do
		xlbctl_on "$1" -j cluster status 2>/dev/null | "$py" -c '
import json, sys
c, rev, n = json.load(sys.stdin), int(sys.argv[1]), int(sys.argv[2])
ok = c["hosts_alive"] == n and c["agree"] and \
     min(h.get("revision", 0) for h in c["hosts"]) >= rev
sys.exit(0 if ok else 1)' "$rev" "$#" && return 0
		sleep 0.1
	done
	xlbctl_on "$1" cluster status
	return 1
}

# cluster_propagation N VIP ADDR HOST...: N changes of the cluster, backend
# ADDR (name "prop") added to VIP and removed in turn, each written
# through the next HOST; after each, every HOST live at
# the written revision with one fingerprint.  Prints per change the ms from
# the etcd write (the writer's answer, written_at) to the last host live
# (each host's own record, applied_at).  Non-zero when a change fails.
cluster_propagation() {
	local n=$1 vip=$2 addr=$3 k h r at out py=${TAP_PYTHON:-python3}
	local -a hosts args

	shift 3
	hosts=("$@")
	for ((k = 0; k < n; k++)); do
		h=${hosts[k % ${#hosts[@]}]}
		if ((k % 2 == 0)); then
			args=(backend add "$vip" "$addr" name prop)
		else
			args=(backend del "$vip" "$addr")
		fi
		out=$(xlbctl_on "$h" -j "${args[@]}" 2>&1) ||
			{ echo "change $k through $h: $out" >&2; return 1; }
		read -r r at < <("$py" -c '
import json, sys
j = json.load(sys.stdin)
print(j["revision"], j["written_at"])' <<<"$out")
		cluster_converged "$r" "${hosts[@]}" >&2 || return 1
		xlbctl_on "${hosts[0]}" -j cluster status | "$py" -c '
import json, sys
c = json.load(sys.stdin)
r, at, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
hs = [h for h in c["hosts"] if h.get("revision") == r]
if len(hs) != n or len({json.dumps(h["vips"], sort_keys=True) for h in hs}) != 1:
    sys.exit("revision %d: not every host live with one fingerprint: %s" % (r, c))
print("%.3f" % ((max(h["applied_at"] for h in hs) - at) * 1e3))' \
			"$r" "$at" "${#hosts[@]}" || return 1
	done
}

# cluster_percentiles FILE: "N changes: p50 X ms p99 Y ms max Z ms" of the
# figures cluster_propagation printed.
cluster_percentiles() {
	"${TAP_PYTHON:-python3}" - "$1" <<-'PY'
		import sys
		v = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
		if not v:
		    sys.exit("no figures")
		q = lambda p: v[min(len(v) - 1, int(round(p * (len(v) - 1))))]
		print("%d changes: etcd write -> last host live p50 %.1f ms p99 %.1f ms max %.1f ms"
		      % (len(v), q(0.5), q(0.99), v[-1]))
	PY
}
