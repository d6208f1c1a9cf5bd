#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Three LB hosts follow one configuration in etcd (xlbd --etcd --cluster,
# docs/cluster.md).  etcd runs in a namespace of its own on the segment
# (tests/e2e/lib/etcd.sh); lb, lb2 and lb3 each run xlbd with their own
# links and outer sources; the VIP and its backends go in through any
# host's xlbctl.  Clients reach the VIP through lb, holding connections
# while the cluster changes.  Scenarios (issue 15, section 3):
#
#   4. a change through etcd: a backend added or removed by xlbctl on one
#      host, 50 times, each time every host live with the same
#      fingerprint at the written revision; the time from the etcd write
#      to the last host live (p50/p99, from the hosts' own records);
#      0 broken held connections;
#   6. etcd down: forwarding and health checks go on (a backend whose
#      check fails leaves the table), changes are refused with a clear
#      error, a host restarted meanwhile comes back on its saved revision;
#      on etcd's return every host converges on the next change;
#   7. bad cluster data written by hand (a grammar error, a value of a
#      newer format): refused by every host with key, revision, line and
#      column, nothing changes, status and metrics say so; a good value
#      ends the refusal;
#   8. concurrent writers: two xlbctl on two hosts changing the same VIP
#      at once, 10 times: every change that was answered ok is in etcd
#      afterwards, the other is refused with the retry error (exit 3);
#      two writers on different VIPs both succeed;
#   a host cut off from etcd while changes are written and compacted
#      away reads everything again on its return and converges;
#   bad commands: a VIP's src, a restore with per-host settings, xlbd
#      with --etcd alone or a non-http endpoint, refused clearly;
#   health consensus: one LB host cut off from one backend (a blackhole
#      route) sees it down, yet every host keeps it in a health-consensus
#      VIP's table; when every host's check fails, all take it out.
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

CHANGES=${E2E_CLUSTER_CHANGES:-50}
CL=e2e
V=$VIP4:80/tcp
V2=$(vip4 2):80/tcp
HOSTS=(lb lb2 lb3)
HOLD=${E2E_CLUSTER_HOLD:-100}

command -v etcd >/dev/null || tap_bail "etcd is missing; run 'make deps'"
sc_begin --backends 4 --clients 1
sc_serve

# health checks on port 8081, served apart so a test can stop one
for b in "${BACKENDS[@]}"; do
	topo_bg "$b" "hc-$b" "$SC_X" serve --id "$b" --tcp 8081
	eval "HC_PID_$b=$TOPO_LAST_PID"
done

topo_etcd_up >"$work/etcd.log" 2>&1
rc=$?
sc_result $rc "etcd (one member) in its own namespace at $ETCD_URL" "$(cat "$work/etcd.log")"
[[ $rc -eq 0 ]] || tap_bail "no etcd"

# xlbd_on HOST: start HOST's xlbd in cluster mode (metrics on its own
# namespace's 127.0.0.1:9437)
xlbd_on() {
	local h=$1 i sock inst

	if [[ $h == lb ]]; then
		topo_xlbd_start --etcd "$ETCD_URL" --cluster "$CL" \
			--host-name lb >"$work/xlbd-lb.out" 2>&1
		return
	fi
	sock=$TOPO_DIR/$h.sock inst=$TOPO_PREFIX$h
	mkdir -p "$TOPO_DIR/$h-state"
	topo_bg "$h" "xlbd-$h" "$XLB_BIN/xlbd" --instance "$inst" \
		--socket "$sock" --state-dir "$TOPO_DIR/$h-state" \
		--etcd "$ETCD_URL" --cluster "$CL" --host-name "$h"
	eval "XLBD_PID_$h=$TOPO_LAST_PID"
	for ((i = 0; i < 100; i++)); do
		[[ -S $sock ]] && return 0
		sleep 0.1
	done
	return 1
}

out=""
rc=0
for n in 3 4; do
	topo_add_lb "lb$((n - 1))" "$n" >"$work/add.log" 2>&1 ||
		{ rc=1; out+=$(cat "$work/add.log"); }
done
for i in 0 1 2; do
	h=${HOSTS[i]}
	xlbd_on "$h" || { rc=1; out+="xlbd on $h did not start"; }
	n=$((i + 2))
	out+=$(xlbctl_on "$h" set src4 "$TOPO_NET4.$n" 2>&1 &&
		xlbctl_on "$h" set src6 "${TOPO_NET6}:$n" 2>&1 &&
		xlbctl_on "$h" link attach eth0 2>&1) || rc=1
done
sc_result $rc "three LB hosts (lb, lb2, lb3), xlbd --etcd $ETCD_URL --cluster $CL, their own links and sources" \
	"$out" "$(grep -h -e '<3>' -e '<4>' "$TOPO_DIR"/xlbd*.log | head -5)"
[[ $rc -eq 0 ]] || tap_bail "no cluster"

# The etcd threads talk HTTP to etcd only: no capability, the user nobody,
# no groups, nothing to gain (docs/operations.md, "Privileges").
out=""
rc=0
seen=0
nobody=$(id -u nobody)
eval "pid=\$XLBD_PID_lb2"
for t in /proc/"$pid"/task/*; do
	comm=$(cat "$t/comm" 2>/dev/null)
	[[ $comm == xlbd-etcd-watch || $comm == xlbd-etcd-write ]] || continue
	seen=$((seen + 1))
	grep -Eq "^Uid:\s+$nobody\s+$nobody\s+$nobody\s+$nobody$" "$t/status" &&
		grep -Eq '^Groups:\s*$' "$t/status" &&
		grep -Eq '^CapPrm:\s+0+$' "$t/status" &&
		grep -Eq '^CapEff:\s+0+$' "$t/status" &&
		grep -Eq '^CapBnd:\s+0+$' "$t/status" &&
		grep -Eq '^NoNewPrivs:\s+1$' "$t/status" ||
		{ rc=1; out+="$comm: $(grep -E '^(Uid|Groups|CapPrm|CapEff|CapBnd|NoNewPrivs):' "$t/status" | tr -s '\t\n' '  ')"$'\n'; }
done
[[ $seen -eq 2 ]] || { rc=1; out+="$seen etcd threads in lb2's xlbd, not 2"; }
sc_result $rc "lb2's etcd threads run as nobody without capabilities" "$out"

# status HOST EXPR: a Python expression over c, HOST's cluster status
status() {
	xlbctl_on "$1" -j cluster status | "$TAP_PYTHON" -c '
import json, sys
c = json.load(sys.stdin)
print(eval(sys.argv[1]))' "$2"
}

# converged REV: every host alive, at revision >= REV, in agreement (10 s)
converged() {
	cluster_converged "$1" "${HOSTS[@]}"
}

TOPO_KEY=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
out=$(xlbctl_on lb2 set key "$TOPO_KEY" 2>&1 &&
	xlbctl_on lb3 vip add "$V" encap gue health tcp health-port 8081 \
		interval 200 timeout 100 rise 1 fall 2 2>&1)
rc=$?
for i in 0 1 2; do
	out+=$(xlbctl_on "${HOSTS[i]}" backend add "$V" "${BACKEND_IP4[i]}" \
		name "${BACKENDS[i]}" 2>&1) || rc=1
done
rev=$(status lb "c['revision']")
converged "$rev" >"$work/conv" 2>&1 || rc=1
sc_result $rc "the key, a VIP and three backends written through three hosts: all three run revision $rev with the same fingerprint" \
	"$out" "$(cat "$work/conv")"

out=$(etcd_ctl get --prefix --keys-only "/xlb/$CL/" | grep .)
[[ $out == *"/xlb/$CL/config/global"*"/xlb/$CL/config/vips/$V"*"/xlb/$CL/hosts/lb"* ]]
sc_result $? "etcd holds config/global, config/vips/VIP and a record per host" "$out"

# --- 4: a change through etcd ------------------------------------------------

sc_hold_start c4 c1 "$VIP4:80" "$HOLD" --duration 120 --interval 200 >"$work/hold.log" 2>&1
rc=$?
sc_result $rc "$HOLD connections held to $V through lb" "$(cat "$work/hold.log")"
sc_hold_phase c4 changes

rc=0
cluster_propagation "$CHANGES" "$V" "${BACKEND_IP4[3]}" "${HOSTS[@]}" \
	>"$work/prop" 2>"$work/errs" || rc=1
sc_hold_stop c4 >"$work/hold-stop.log" 2>&1 || rc=1
broken=$(json_get "$TOPO_DIR/hold-c4.json" 'j["broken"]' 2>/dev/null)
stats=$(cluster_percentiles "$work/prop" 2>&1)
[[ $rc -eq 0 && $(wc -l <"$work/prop") -eq $CHANGES && $broken == 0 ]]
sc_result $? "4: $CHANGES backend changes through etcd, each on another host: every host live with the same fingerprint, 0 of $HOLD held connections broken" \
	"$stats" "$(sc_hold_summary c4 2>/dev/null)" "$(head -c 2000 "$work/errs" 2>/dev/null)"
tap_diag "cluster: $stats"

# --- 7: bad cluster data -------------------------------------------------------

fp_of() {
	xlbctl_on "$1" -j vip show "$V" | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["vips"][0]["fingerprint"])'
}
before=$(fp_of lb)
rev=$(status lb "c['revision']")
key=/xlb/$CL/config/vips/$V
good=$(etcd_get "$key")
# refused HOST WORDS...: HOST's status reports a refusal with all WORDS (5 s)
refused() {
	local h=$1 i j msg

	shift
	for ((i = 0; i < 50; i++)); do
		msg=$(xlbctl_on "$h" -j status | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["cluster"].get("refused", {}).get("error", ""))')
		all=1
		for j in "$@"; do
			[[ $msg == *"$j"* ]] || all=0
		done
		[[ $all -eq 1 ]] && { echo "$h: $msg"; return 0; }
		sleep 0.1
	done
	echo "$h: $msg"
	return 1
}
etcd_put "$key" "$(printf 'format 1\nvip add %s encap gue health tcp health-port 8081 interval 200 timeout 100 rise 1 fall 2\nbackend add %s %s weight heavy\n' \
	"$V" "$V" "${BACKEND_IP4[0]}")"
brev=$(etcd_ctl get -w json "$key" | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["kvs"][0]["mod_revision"])')
rc=0
out=""
for h in "${HOSTS[@]}"; do
	out+=$(refused "$h" "key $key (revision $brev) line 3 column" \
		"weight \"heavy\" is not a number")$'\n' || rc=1
	[[ $(fp_of "$h") == "$before" && $(status "$h" "c['revision']") == "$rev" ]] ||
		{ rc=1; out+="$h: its table or revision changed"$'\n'; }
done
m=$(in_ns lb curl -s http://127.0.0.1:9437/metrics | grep '^xlb_cluster_refused')
[[ $m == *"} 1" ]] || { rc=1; out+="metrics: $m"; }
sc_result $rc "7: a malformed value written by hand: every host refuses it with key, revision, line and column, keeps revision $rev and its table; status and metrics say so" \
	"$(head -1 <<<"$out")" "$m"
[[ $rc -eq 0 ]] || tap_diag "$out"

etcd_put "$key" "$(printf 'format 2\nvip add %s shiny\n' "$V")"
frev=$(etcd_ctl get -w json "$key" | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["kvs"][0]["mod_revision"])')
rc=0
out=""
for h in "${HOSTS[@]}"; do
	out+=$(refused "$h" "key $key (revision $frev) line 1 column 8" \
		"format 2 is newer than this xlbd reads (format 1)")$'\n' || rc=1
	[[ $(fp_of "$h") == "$before" ]] || { rc=1; out+="$h: its table changed"$'\n'; }
done
sc_result $rc "7: a value of a future format: refused the same way, nothing changes" \
	"$(head -1 <<<"$out")"
[[ $rc -eq 0 ]] || tap_diag "$out"

out=$(xlbctl_on lb2 backend set "$V" "${BACKEND_IP4[0]}" weight 2 2>&1)
[[ $? -ne 0 && $out == *"holds a value this host refuses"* ]]
sc_result $? "7: a write to the refused key is refused until it is fixed" "$out"

etcd_put "$key" "$good"
rc=0
for h in "${HOSTS[@]}"; do
	for ((i = 0; i < 50; i++)); do
		[[ $(status "$h" "'refused' in c") == False ]] && break
		sleep 0.1
	done
	[[ $i -lt 50 ]] || rc=1
done
m=$(in_ns lb curl -s http://127.0.0.1:9437/metrics | grep '^xlb_cluster_refused')
[[ $m == *"} 0" ]] || rc=1
converged "$(status lb "c['revision']")" >"$work/conv" 2>&1 || rc=1
sc_result $rc "7: the good value back: every host accepts it, the refusal ends" "$m" "$(cat "$work/conv")"

# --- 8: concurrent writers -----------------------------------------------------

rc=0
ok=0
retry=0
out=""
for ((k = 0; k < 10; k++)); do
	a=10.200.0.$((30 + 2 * k)) b=10.200.0.$((31 + 2 * k))
	xlbctl_on lb backend add "$V" "$a" state drain >"$work/a.out" 2>&1 &
	pa=$!
	xlbctl_on lb2 backend add "$V" "$b" state drain >"$work/b.out" 2>&1 &
	pb=$!
	wait $pa; ra=$?
	wait $pb; rb=$?
	val=$(etcd_get "$key")
	for x in "a $ra $a" "b $rb $b"; do
		set -- $x
		if [[ $2 -eq 0 ]]; then
			ok=$((ok + 1))
			[[ $val == *"backend add $V $3 "* ]] ||
				{ rc=1; out+="round $k: $3 answered ok but is not in etcd"$'\n'; }
		elif [[ $2 -eq 3 ]] && grep -q "changed meanwhile" "$work/$1.out"; then
			retry=$((retry + 1))
			[[ $val != *"backend add $V $3 "* ]] ||
				{ rc=1; out+="round $k: $3 refused but in etcd"$'\n'; }
		else
			rc=1
			out+="round $k: $3: exit $2: $(cat "$work/$1.out")"$'\n'
		fi
	done
done
sc_result $rc "8: two writers on one VIP at once, 10 rounds: $ok changes answered ok and present, $retry refused with \"changed meanwhile, retry\" (exit 3), none lost" "$out"

xlbctl_on lb vip add "$V2" >"$work/a.out" 2>&1 &
pa=$!
xlbctl_on lb3 set mtu 1450 >"$work/b.out" 2>&1 &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
rev=$(status lb "c['revision']")
[[ $ra -eq 0 && $rb -eq 0 ]] && converged "$rev" >"$work/conv" 2>&1 &&
	[[ $(xlbctl_on lb3 save) == *"vip add $V2"* && $(xlbctl_on lb save) == *"set mtu 1450"* ]]
sc_result $? "8: two writers on different keys at once: both changes present on every host" \
	"$(cat "$work/a.out" "$work/b.out" "$work/conv")"

# --- health consensus -------------------------------------------------------

V3=$(vip4 3):80/tcp
B2=${BACKEND_IP4[1]}
# in_table HOST VIP / fp_vip HOST VIP
in_table() {
	xlbctl_on "$1" -j vip show "$2" | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["vips"][0]["in_table"])'
}
fp_vip() {
	xlbctl_on "$1" -j vip show "$2" | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["vips"][0]["fingerprint"])'
}
# sees_down HOST: HOST's own checks see b2 of V3 down (its record, 5 s)
sees_down() {
	local i

	for ((i = 0; i < 50; i++)); do
		[[ $(status lb "[h for h in c['hosts'] if h['host'] == '$1'][0].get('down', []).count('$V3 $B2')") == 1 ]] &&
			return 0
		sleep 0.1
	done
	return 1
}
out=$(xlbctl_on lb vip add "$V3" encap gue health tcp health-port 8081 \
	interval 200 timeout 100 rise 1 fall 2 health-consensus on 2>&1)
rc=$?
for i in 0 1 2; do
	out+=$(xlbctl_on lb2 backend add "$V3" "${BACKEND_IP4[i]}" \
		name "${BACKENDS[i]}" 2>&1) || rc=1
done
converged "$(status lb "c['revision']")" >"$work/conv" 2>&1 || rc=1
sc_result $rc "a VIP with health-consensus on, three backends, on every host" \
	"$out" "$(cat "$work/conv")"

in_v=$(in_table lb "$V")
in_ns lb3 ip route add blackhole "$B2/32"
sees_down lb3
rc=$?
sleep 1
out="lb3 sees $B2 down: $([[ $rc -eq 0 ]] && echo yes || echo no);"
for h in "${HOSTS[@]}"; do
	out+=" $h: $V3 in table $(in_table "$h" "$V3") fp $(fp_vip "$h" "$V3"), $V in table $(in_table "$h" "$V");"
done
[[ $rc -eq 0 && $(in_table lb3 "$V3") -eq 3 && $(fp_vip lb3 "$V3") == "$(fp_vip lb "$V3")" &&
   $(fp_vip lb2 "$V3") == "$(fp_vip lb "$V3")" && $(in_table lb3 "$V") -eq $((in_v - 1)) ]]
sc_result $? "consensus: lb3 cut off from $B2 sees it down, yet every host keeps it in the consensus VIP's table (same fingerprint); the local-verdict VIP drops it on lb3 only" "$out"

eval "topo_stop \$HC_PID_${BACKENDS[1]} 2"
rc=1
for ((i = 0; i < 50; i++)); do
	if [[ $(in_table lb "$V3") -eq 2 && $(in_table lb2 "$V3") -eq 2 &&
	      $(in_table lb3 "$V3") -eq 2 && $(fp_vip lb "$V3") == "$(fp_vip lb3 "$V3")" &&
	      $(fp_vip lb2 "$V3") == "$(fp_vip lb3 "$V3")" ]]; then
		rc=0
		break
	fi
	sleep 0.1
done
sc_result $rc "consensus: $B2's check fails for every host: the majority sees it down and every host takes it out, same fingerprint" \
	"$(for h in "${HOSTS[@]}"; do echo "$h: $(in_table "$h" "$V3") in table, fp $(fp_vip "$h" "$V3")"; done)"

in_ns lb3 ip route del blackhole "$B2/32"
topo_bg "${BACKENDS[1]}" "hc-${BACKENDS[1]}-2" "$SC_X" serve --id "${BACKENDS[1]}" --tcp 8081
for ((i = 0; i < 50; i++)); do
	[[ $(in_table lb "$V") -eq $in_v && $(in_table lb3 "$V3") -eq 3 ]] && break
	sleep 0.1
done

# --- a host cut off from etcd past a compaction ------------------------------

in_ns lb3 ip route add blackhole "$ETCD_IP/32"
in_ns lb3 ss -K dst "$ETCD_IP" >/dev/null 2>&1
rc=0
for ((i = 0; i < 100; i++)); do
	[[ $(status lb3 "c['etcd']['up']") == False ]] && break
	sleep 0.1
done
[[ $i -lt 100 ]] || rc=1
out=""
for k in 1 2 3; do
	out+=$(xlbctl_on lb backend set "$V" "${BACKEND_IP4[0]}" weight $((k + 1)) 2>&1) || rc=1
done
crev=$(etcd_ctl get -w json "/xlb/$CL/config/global" | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["header"]["revision"])')
out+=$(etcd_ctl compact "$crev" 2>&1) || rc=1
in_ns lb3 ip route del blackhole "$ETCD_IP/32"
converged "$(status lb "c['revision']")" >"$work/conv" 2>&1 || rc=1
grep -q "was compacted; reading everything again" "$TOPO_DIR/xlbd-lb3.log" || rc=1
sc_result $rc "lb3 cut off from etcd while 3 changes are written and etcd compacts them away: back, it reads everything again and converges" \
	"$out" "$(cat "$work/conv")" "$(grep -h 'lb3\|compacted' "$TOPO_DIR/xlbd-lb3.log" | grep -v '<6>' | tail -3)"

# --- bad commands in cluster mode ----------------------------------------------

out=$(xlbctl_on lb vip add "$(vip4 9):80/tcp" src 10.200.0.2 2>&1)
[[ $? -eq 1 && $out == *"a VIP's src is an address of one host"* ]]
sc_result $? "cluster mode: a VIP's src (one host's address) is refused" "$out"
printf 'set key %s\nlink attach eth0\nvip add %s\n' "$TOPO_KEY" "$V" >"$TOPO_DIR/mixed.conf"
out=$(in_ns lb "$XLB_BIN/xlbctl" -s "$XLBD_SOCK" restore "$TOPO_DIR/mixed.conf" 2>&1)
[[ $? -eq 1 && $out == *"holds no per-host settings"* ]]
sc_result $? "cluster mode: restore of a file with per-host settings is refused" "$out"
out=$(in_ns lb "$XLB_BIN/xlbd" --instance "${TOPO_PREFIX}bad" --socket "$TOPO_DIR/bad.sock" \
	--state-dir "$TOPO_DIR/bad-state" --metrics none --etcd "$ETCD_URL" 2>&1)
st=$?
out2=$(in_ns lb "$XLB_BIN/xlbd" --instance "${TOPO_PREFIX}bad" --socket "$TOPO_DIR/bad.sock" \
	--state-dir "$TOPO_DIR/bad-state" --metrics none --etcd "https://$ETCD_IP:2379" \
	--cluster "$CL" 2>&1)
st2=$?
[[ $st -ne 0 && $out == *"--etcd and --cluster go together"* &&
   $st2 -ne 0 && $out2 == *"is not http://HOST:PORT"* && ! -e /sys/fs/bpf/xlb/${TOPO_PREFIX}bad ]]
sc_result $? "xlbd refuses --etcd without --cluster and a non-http endpoint, before loading anything" "$out" "$out2"

# --- 6: etcd down ------------------------------------------------------------

rev=$(status lb "c['revision']")
topo_etcd_stop KILL
rc=0
for ((i = 0; i < 50; i++)); do
	[[ $(status lb "c['etcd']['up']") == False ]] && break
	sleep 0.1
done
[[ $i -lt 50 ]] || rc=1
sc_result $rc "6: etcd killed: the hosts see it unreachable" "$(xlbctl_on lb cluster status 2>&1 | head -4)"

sc_conns c1 "$VIP4:80" 300 "$work/conns.json"
[[ $(json_get "$work/conns.json" 'j["completed"]') -eq 300 ]]
sc_result $? "6: forwarding goes on: 300 new connections through lb complete" \
	"$(sc_conns_summary "$work/conns.json")"

in_before=$(in_ns lb "$XLB_BIN/xlbctl" -s "$XLBD_SOCK" -j vip show "$V" | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["vips"][0]["in_table"])')
eval "topo_stop \$HC_PID_${BACKENDS[2]} 2"
rc=1
for ((i = 0; i < 50; i++)); do
	n=$(in_ns lb "$XLB_BIN/xlbctl" -s "$XLBD_SOCK" -j vip show "$V" | "$TAP_PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["vips"][0]["in_table"])')
	[[ $n -eq $((in_before - 1)) ]] && { rc=0; break; }
	sleep 0.1
done
sc_result $rc "6: health checks go on: ${BACKENDS[2]}'s check fails and it leaves the table ($in_before -> $n backends in it)"
topo_bg "${BACKENDS[2]}" "hc-${BACKENDS[2]}-2" "$SC_X" serve --id "${BACKENDS[2]}" --tcp 8081

out=$(xlbctl_on lb2 backend set "$V" "${BACKEND_IP4[1]}" weight 3 2>&1)
st=$?
[[ $st -eq 1 && $out == *"etcd is unreachable"*"cluster changes are refused"* ]]
sc_result $? "6: a change is refused with a clear error while etcd is down" "$out"

eval "topo_stop \$XLBD_PID_lb3 10"
xlbd_on lb3
rc=$?
sleep 0.5
r3=$(status lb3 "c['revision']")
[[ $rc -eq 0 && $r3 == "$rev" && $(fp_of lb3) == "$(fp_of lb2)" ]]
sc_result $? "6: lb3 restarted while etcd is down starts from its saved revision $rev with the same table" \
	"revision $r3" "$(grep -h '<5>cluster' "$TOPO_DIR/xlbd-lb3.log" | tail -2)"

topo_etcd_start >"$work/etcd.log" 2>&1
rc=$?
for h in "${HOSTS[@]}"; do
	for ((i = 0; i < 100; i++)); do
		[[ $(status "$h" "c['etcd']['up']") == True ]] && break
		sleep 0.1
	done
	[[ $i -lt 100 ]] || rc=1
done
out=$(xlbctl_on lb2 -j backend set "$V" "${BACKEND_IP4[1]}" weight 3 2>&1) || rc=1
r=$(json_get <(echo "$out") 'j["revision"]' 2>/dev/null)
converged "${r:-999999}" >"$work/conv" 2>&1 || rc=1
sc_result $rc "6: etcd back: every host reconnects and converges on the next change (revision ${r:-none})" \
	"$out" "$(cat "$work/conv" "$work/etcd.log")"

topo_down >/dev/null 2>&1
left=$(ip netns list | grep -c "^$TOPO_PREFIX")
[[ $left -eq 0 ]]
sc_result $? "teardown removed etcd, the three LB hosts and every namespace" "$left left"
tap_diag "took $((($(now_ms) - t_start) / 1000)) s"
tap_done
