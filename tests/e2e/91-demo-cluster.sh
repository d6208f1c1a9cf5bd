#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo-cluster, short and without a terminal: tools/demo-cluster.sh 20
# must end with status 0, show three LB hosts each with a share of the new
# flows, the router rerouting after lb2 is killed, b4 added through etcd
# and taking new connections, and the verdict (no failed new connection,
# no broken held connection); print no terminal escapes, and leave no
# namespace, pin, marker or temporary folder behind.  A bad DURATION is
# refused.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh

. tests/e2e/lib/demo.sh

demo_begin bird etcd
demo_run demo-cluster 20
rc=$demo_rc

res "$rc" "tools/demo-cluster.sh 20 without a terminal exits 0 (status $rc)" \
	"$([[ $rc -eq 0 ]] || tail -40 "$out")"

# a live line while the three hosts run: each with a share above 0
line=$(grep -E '^ +t=[0-9]+ +LB hosts: lb +[0-9]+% lb2 +[0-9]+% lb3 +[0-9]+% ' "$out" |
	grep -vE 'lb2? +0%|lb3 +0%' | head -1)
res "$([[ -n $line ]]; echo $?)" "live: every one of the three LB hosts takes a share of the new flows" \
	"${line:-no such line}" "$(grep -E '^ +t=' "$out" | head -4)"

line=$(grep -E '^ +router rerouted [0-9]+ ms after the link went down' "$out")
res "$([[ -n $line ]]; echo $?)" "lb2 killed: the router reroutes" "${line:-no 'router rerouted' line}"

line=$(grep -E '^ +t=[0-9]+ +LB hosts: lb +[0-9]+% lb3 +[0-9]+% \| backends: .*b4 +[0-9]+%' "$out" | tail -1)
res "$([[ -n $line ]]; echo $?)" "b4 added through etcd takes new connections on the two hosts left" \
	"${line:-no live line with b4}"

tap_result "$(grep -qE '^new connections: [1-9][0-9]* completed, 0 failed$' "$out"; echo $?)" \
	"verdict: new connections completed, none failed" "$(grep 'new connections:' "$out")"
tap_result "$(grep -qE '^broken connections: 0 of 300 held$' "$out"; echo $?)" \
	"verdict: broken connections: 0 of 300 held" "$(grep 'broken connections' "$out")"
tap_result "$(tail -1 "$out" | grep -qx 'demo-cluster: ok'; echo $?)" \
	"the output ends with 'demo-cluster: ok'" "$(tail -3 "$out")"

demo_common demo-cluster xdemc

tap_done
