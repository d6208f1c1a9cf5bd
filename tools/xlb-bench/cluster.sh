#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xlb-bench cluster: three LB hosts behind a router (docs/edge.md), in the
# test network of tests/e2e/lib/edge.sh (topo_up --edge 3): bird2 on the
# router and on every LB host (BGP, BFD 100 ms x 3, ECMP by 4-tuple), xlbd in
# cluster mode on every LB host, etcd.  `build/xlb-bench [-j] [--quick]
# cluster` execs this script.
#
#   tools/xlb-bench/cluster.sh [-j] [--quick] [--rounds N] [--changes N]
#
# failover   per round: 300 connections held from a client (a request
#            every 200 ms each), then one LB host lost (its link down, its
#            bird2 and xlbd killed, its data path removed; lb2 and lb3 in
#            turn): the time from its link going down until the last held
#            connection answered again (the longest any of them waited for
#            a reply in that phase, xlb-traffic hold's max_wait_ms), the
#            router's reroute time (link down -> its next hop gone from the
#            VIP's route) and the connections broken from the loss on (a
#            reset, or no reply for 5 s; the round ends 6 s after the
#            reroute, so every connection has answered or broken by then;
#            the breaks while the connections opened are counted apart);
#            then the host returns (empty connection table) before the
#            next round.
# propagation  etcd write -> last host live, per change of a backend
#            written through the hosts in turn (cluster_propagation of
#            tests/e2e/lib/etcd.sh, the hosts' own records): p50 and p99.
# agreement  after each change every host at the revision with one
#            fingerprint: the share of changes for which that held.
#
# Medians over ROUNDS rounds (default 5; --quick: 1) and CHANGES changes
# (default 50; --quick: 10).  Prints one line per figure, or with -j one
# JSON object per figure (bench, name, value, unit, statistic, min, max,
# runs, baseline, ratio, params), as the other xlb-bench subcommands.
# Progress goes to standard error.  Needs root, bird2 and etcd; about
# 20 s + 18 s per round + 0.3 s per change.  Everything runs on one
# machine, shared: read the figures as orders of magnitude.
set -u
cd "$(dirname "$0")/../.." || exit 1

usage() {
	echo "usage: tools/xlb-bench/cluster.sh [-j] [--quick] [--rounds N] [--changes N]"
}

JSON=0 QUICK=0 ROUNDS='' CHANGES=''
while [[ $# -gt 0 ]]; do
	case "$1" in
	-j|--json) JSON=1 ;;
	--quick) QUICK=1 ;;
	--rounds) ROUNDS=${2:-}; shift ;;
	--changes) CHANGES=${2:-}; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
if ((QUICK)); then
	ROUNDS=${ROUNDS:-1} CHANGES=${CHANGES:-10}
else
	ROUNDS=${ROUNDS:-5} CHANGES=${CHANGES:-50}
fi
if ! [[ $ROUNDS =~ ^[0-9]+$ && $CHANGES =~ ^[0-9]+$ ]] ||
	((ROUNDS < 1 || ROUNDS > 100 || CHANGES < 2 || CHANGES > 10000)); then
	echo "bench-cluster: --rounds 1..100, --changes 2..10000" >&2
	exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "bench-cluster: needs root" >&2
	exit 1
fi
for t in bird etcd python3; do
	command -v "$t" >/dev/null ||
		{ echo "bench-cluster: $t is missing (make deps)" >&2; exit 1; }
done

export TOPO_TAG=${TOPO_TAG:-xbcl}
# shellcheck source=tests/e2e/lib/topo.sh
. tests/e2e/lib/topo.sh
PY=$(command -v python3)
X=$XLB_BIN/xlb-traffic
HELD=300
V=$VIP4:80/tcp

log() { echo "bench-cluster: $*" >&2; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

uplog=$(mktemp) || exit 1
if ! topo_up --edge 3 --backends 4 --clients 1 >"$uplog" 2>&1 ||
	! topo_serve >>"$uplog" 2>&1; then
	cat "$uplog" >&2
	rm -f "$uplog"
	log "no test network"
	exit 1
fi
rm -f "$uplog"
key=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
if ! xlbctl_on lb set key "$key" >/dev/null ||
	! xlbctl_on lb vip add "$V" encap gue >/dev/null; then
	log "the VIP was refused"
	exit 1
fi
for i in 0 1 2; do
	xlbctl_on lb backend add "$V" "${BACKEND_IP4[i]}" name "${BACKENDS[i]}" \
		>/dev/null || { log "a backend was refused"; exit 1; }
done
edge_wait_nexthops "$VIP4" 3 || { log "the router did not learn the VIP"; exit 1; }
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
COMMON="\"cpus\":$(nproc),\"cpu\":\"${CPU//\"/}\",\"kernel\":\"$(uname -r)\",\"load_start\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"lb_hosts\":3,\"bfd\":\"100 ms x 3\""
rc=0

# emit NAME UNIT STATISTIC "VALUES" PARAMS-JSON [VALUE]: the statistic
# (median, p50, p99, share) of VALUES, or VALUE when given
emit() {
	"$PY" - "$JSON" "$@" <<-'EOF'
		import json, statistics, sys
		js, name, unit, stat, vals, params = sys.argv[1:7]
		v = [float(x) for x in vals.split()]
		q = lambda p: sorted(v)[min(len(v) - 1, int(round(p * (len(v) - 1))))]
		if len(sys.argv) > 7:
		    val = float(sys.argv[7])
		elif stat == "median":
		    val = statistics.median(v)
		elif stat in ("p50", "p99"):
		    val = q(int(stat[1:]) / 100)
		else:
		    val = sum(v)
		# one rounding for all three, so that min <= value <= max holds
		rec = {"bench": "cluster", "name": name, "value": round(val, 3),
		       "unit": unit, "statistic": stat, "min": round(min(v), 3),
		       "max": round(max(v), 3),
		       "runs": len(v), "baseline": None, "ratio": None,
		       "params": json.loads(params)}
		if js == "1":
		    print(json.dumps(rec, separators=(",", ":")))
		else:
		    print("%-32s %10.1f %-6s %-7s [%.1f .. %.1f] over %d" % (
		        name, val, unit, stat, min(v), max(v), len(v)))
		sys.stdout.flush()
	EOF
}

# ---- failover ------------------------------------------------------------------
fails='' reroutes='' broken='' sbroken=''
WAIT_S=5	# a held connection without a reply for this long is broken
for ((r = 0; r < ROUNDS; r++)); do
	h=lb$((2 + r % 2))
	others="${EDGE_ADDR[lb]} ${EDGE_ADDR[lb$((3 - r % 2))]} "
	all="${EDGE_ADDR[lb]} ${EDGE_ADDR[lb2]} ${EDGE_ADDR[lb3]} "
	log "failover round $((r + 1)) of $ROUNDS: $h lost under $HELD held connections"
	hold=$TOPO_DIR/hold-$r
	: >"$hold.ctl"
	topo_bg c1 "hold-$r" bash -c 'out=$1; shift; exec "$@" >"$out"' _ \
		"$hold.json" "$X" hold --to "$VIP4:80" -n "$HELD" --duration 120 \
		--interval 200 --timeout $((WAIT_S * 1000)) --control "$hold.ctl" \
		--ready "$hold.ready" -j
	hpid=$TOPO_LAST_PID
	for ((i = 0; i < 300; i++)); do
		[[ -e $hold.ready ]] && break
		sleep 0.1
	done
	[[ -e $hold.ready ]] || { log "the held connections did not open"; rc=1; break; }
	sleep 1
	echo "phase lose" >>"$hold.ctl"
	sleep 0.2
	edge_watch_nexthops "$VIP4" "$others" "$TOPO_DIR/rerouted" &
	wpid=$!
	edge_host_lose "$h" >>"$TOPO_DIR/lose.log" 2>&1
	if ! wait $wpid; then
		log "the router kept $h's next hop"
		rc=1
		break
	fi
	reroutes+=" $(($(cat "$TOPO_DIR/rerouted") - $(cat "$TOPO_DIR/lost-at")))"
	# every connection has answered since the loss, or waited WAIT_S and
	# counts as broken: a connection still waiting at the stop would be
	# neither (BENCHMARKS.md, failover_broken)
	sleep $((WAIT_S + 1))
	echo stop >>"$hold.ctl"
	for ((i = 0; i < 150; i++)); do
		kill -0 "$hpid" 2>/dev/null || break
		sleep 0.1
	done
	topo_stop "$hpid" 2
	# the lose phase's figures; the start phase (opening the connections)
	# is no part of the failover, its breaks are counted apart
	read -r w b sb why < <("$PY" - "$hold.json" <<-'EOF'
		import json, sys
		j = json.load(open(sys.argv[1]))
		ph = {p["name"]: p for p in j["phases"]}
		why = ";".join("%s:%s" % (n, ",".join("%s=%d" % kv for kv in
		               sorted(p["reasons"].items()) if kv[1]))
		               for n, p in sorted(ph.items()) if p["broken"])
		print("%.1f" % ph["lose"]["max_wait_ms"], ph["lose"]["broken"],
		      ph["start"]["broken"], why or "-")
	EOF
	)
	if [[ -z ${w:-} ]]; then
		log "no result from the held connections"
		rc=1
		break
	fi
	fails+=" $w" broken+=" $b" sbroken+=" $sb"
	log "  rerouted in ${reroutes##* } ms, answering again within $w ms, $b broken (while opening: $sb; reasons by phase: $why)"
	# the host returns with an empty connection table
	if ! in_ns "$h" ip link set eth0 up || ! edge_xlbd_start "$h" >/dev/null 2>&1 ||
		! edge_bird_start "$h" >/dev/null 2>&1 || ! edge_wait_nexthops "$VIP4" 3 ||
		[[ $(edge_nexthops "$VIP4") != "$all" ]]; then
		log "$h did not return"
		rc=1
		break
	fi
done
if [[ -n $fails ]]; then
	emit cluster.failover_ms ms median "$fails" \
		"{$COMMON,\"held\":$HELD,\"interval_ms\":200,\"what\":\"LB host lost (link down, bird2 and xlbd killed) -> the last held connection answering again (longest wait for a reply)\"}"
	emit cluster.reroute_ms ms median "$reroutes" \
		"{$COMMON,\"what\":\"link down -> the router's VIP route without the host's next hop (BFD)\"}"
	emit cluster.failover_broken conns sum "$broken" \
		"{$COMMON,\"held\":$HELD,\"what\":\"held connections broken from the host lost until the end of the round (the lose phase), over all rounds\"}"
	emit cluster.open_broken conns sum "$sbroken" \
		"{$COMMON,\"held\":$HELD,\"what\":\"connections that broke while the held connections were being opened (before the host was lost), over all rounds\"}"
fi

# ---- propagation and agreement ---------------------------------------------
log "propagation: $CHANGES changes of a backend through lb, lb2, lb3 in turn"
if cluster_propagation "$CHANGES" "$V" "${BACKEND_IP4[3]}" lb lb2 lb3 \
	>"$TOPO_DIR/prop" 2>"$TOPO_DIR/prop.err"; then
	agreed=$CHANGES
else
	agreed=$(grep -c . "$TOPO_DIR/prop")
	log "propagation stopped after $agreed changes: $(tail -2 "$TOPO_DIR/prop.err")"
	rc=1
fi
vals=$(tr '\n' ' ' <"$TOPO_DIR/prop")
if [[ -n ${vals// /} ]]; then
	emit cluster.propagation_p50_ms ms p50 "$vals" \
		"{$COMMON,\"what\":\"etcd write -> last host live (the hosts' own records), one backend added or removed\"}"
	emit cluster.propagation_p99_ms ms p99 "$vals" \
		"{$COMMON,\"what\":\"etcd write -> last host live (the hosts' own records), one backend added or removed\"}"
fi
emit cluster.agreement share share "$("$PY" -c "print($agreed / $CHANGES)")" \
	"{$COMMON,\"changes\":$CHANGES,\"agreed\":$agreed,\"what\":\"share of the changes after which every host ran the written revision with one fingerprint\"}"
exit $rc
