#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A configuration reload under load.  xlbd starts with a configuration file
# (xlb.conf(5), `xlbd -c FILE`) of three VIPs with four backends each:
#
#   V1 10.200.100.1:80/tcp  maglev          gets a fifth backend (b5)
#   V2 10.200.100.2:80/tcp  ring            b2's weight goes from 1 to 3
#   V3 10.200.100.3:80/tcp  maglev, GUE     left alone
#
# With $E2E_HOLD (500) long-lived connections on V3 and 200 on each of V1
# and V2, the file is changed and `xlbctl reload` applies it: exactly the
# two intended changes happen (the saved configuration differs in those two
# lines; V1 and V2 get new tables and generations, b5 and b2 their shares;
# V3's fingerprint and generation are unchanged), no held connection breaks
# (V3's, and V1's and V2's, kept by the connection table), and new
# connections follow the new tables.  A file with an error is then refused
# with FILE:LINE:COLUMN and changes nothing.  Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/e2e/lib/topo.sh
. tests/e2e/lib/scenario.sh

HOLD=${E2E_HOLD:-500}
N=${E2E_CONNS:-1000}
ALPHA=0.0001
V1=$(vip4 1):80/tcp
V2=$(vip4 2):80/tcp
V3=$(vip4 3):80/tcp

sc_begin --backends 5
sc_serve

conf=$TOPO_DIR/xlb.conf
{
	echo "# xlb end-to-end test: reload under load"
	echo "set key $(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
	echo "set src4 $LB_IP4"
	echo "set src6 $LB_IP6"
	echo "link attach $LB_IF native"
	echo
	echo "vip add $V1"
	echo "vip add $V2 algo ring"
	echo "vip add $V3 encap gue"
	for v in "$V1" "$V2" "$V3"; do
		for i in 0 1 2 3; do
			echo "backend add $v ${BACKEND_IP4[i]} name ${BACKENDS[i]}"
		done
	done
} >"$conf"
topo_xlbd_start -c "$conf" >"$work/xlbd.log" 2>&1
rc=$?
vips=$(xlbctl -j status 2>&1 | "$TAP_PYTHON" -c 'import json, sys; s = json.load(sys.stdin); print(s["vips"], s["backends"], s["config_file"])' 2>&1)
sc_result "$([[ $rc -eq 0 && $vips == "3 12 $conf" ]]; echo $?)" \
	"xlbd -c FILE: 3 VIPs, 12 backends from the file" "$vips" \
	"$(cat "$work/xlbd.log")"
[[ $rc -eq 0 ]] || tap_bail "no xlbd"

# state OUT: per VIP fingerprint and generation, the global generation
state() {
	{
		xlbctl -j vip show | "$TAP_PYTHON" -c '
import json, sys
for v in json.load(sys.stdin)["vips"]:
    print("%s %s %s" % (v["vip"], v["fingerprint"], v["generation"]))'
		xlbctl -j status | "$TAP_PYTHON" -c '
import json, sys
print("global - %s" % json.load(sys.stdin)["generation"])'
	} >"$1" 2>&1
}

# --- load -----------------------------------------------------------------------

sc_hold_start v3 c1 "$(vip4 3):80" "$HOLD" --duration 60 --interval 200 \
	--timeout 2000 >"$work/hold.log" 2>&1 &&
sc_hold_start v1 c2 "$(vip4 1):80" 200 --duration 60 --interval 200 \
	--timeout 2000 >>"$work/hold.log" 2>&1 &&
sc_hold_start v2 c2 "$(vip4 2):80" 200 --duration 60 --interval 200 \
	--timeout 2000 >>"$work/hold.log" 2>&1
rc=$?
sc_result $rc "long-lived connections: $HOLD on V3, 200 on V1, 200 on V2" "$(cat "$work/hold.log")"
[[ $rc -eq 0 ]] || tap_bail "no load"

# --- the change -----------------------------------------------------------------

state "$work/s0.txt"
xlbctl save >"$work/save0.conf"
"$TAP_PYTHON" - "$conf" "$V1" "$V2" "${BACKEND_IP4[4]}" "${BACKEND_IP4[1]}" <<-'EOF'
	import sys
	path, v1, v2, b5, b2 = sys.argv[1:]
	lines = open(path).read().splitlines()
	out = []
	for l in lines:
	    if l == "backend add %s %s name b2" % (v2, b2):
	        l += " weight 3"
	    out.append(l)
	    if l == "backend add %s 10.200.0.24 name b4" % v1:
	        out.append("backend add %s %s name b5" % (v1, b5))
	open(path + ".tmp", "w").write("\n".join(out) + "\n")
EOF
mv "$conf.tmp" "$conf"
for h in v1 v2 v3; do sc_hold_phase "$h" reload; done
t0=$(now_ms)
out=$(xlbctl -j reload 2>&1)
rc=$?
t1=$(now_ms)
state "$work/s1.txt"
xlbctl save >"$work/save1.conf"
sc_result "$([[ $rc -eq 0 && $out == *'"changed": true'* ]]; echo $?)" \
	"xlbctl reload under load: accepted in $((t1 - t0)) ms" "$out"

out=$(diff "$work/save0.conf" "$work/save1.conf" | grep '^[<>]')
want=$(printf '%s\n' \
	"< backend add $V2 ${BACKEND_IP4[1]} name b2" \
	"> backend add $V1 ${BACKEND_IP4[4]} name b5" \
	"> backend add $V2 ${BACKEND_IP4[1]} name b2 weight 3")
rc=$([[ $(sort <<<"$out") == "$(sort <<<"$want")" ]]; echo $?)
[[ $rc -eq 0 ]] || out+=$'\n'"(want: $want)"
sc_result "$rc" "the saved configuration changed in exactly the two intended lines" "$out"

out=$("$TAP_PYTHON" - "$work/s0.txt" "$work/s1.txt" "$V1" "$V2" "$V3" <<-'EOF'
	import sys
	rd = lambda f: {l.split()[0]: l.split()[1:] for l in open(f)}
	a, b = rd(sys.argv[1]), rd(sys.argv[2])
	v1, v2, v3 = sys.argv[3:]
	for v in (v1, v2, v3):
	    print("%s: fingerprint %s -> %s, generation %s -> %s" % (
	        v, a[v][0], b[v][0], a[v][1], b[v][1]))
	print("global generation %s -> %s" % (a["global"][1], b["global"][1]))
	ok = (a[v3] == b[v3] and all(a[v][0] != b[v][0] and int(b[v][1]) == int(a[v][1]) + 1
	                              for v in (v1, v2))
	      and int(b["global"][1]) > int(a["global"][1]))
	sys.exit(0 if ok else 1)
EOF
)
sc_result $? "V3 untouched (same fingerprint and generation); V1 and V2 one new table each" "$out"

# share NAME IDEAL: the backend's ideal share is IDEAL and its share of the
# slots within 0.1 of it (the ring's 100 vnodes per unit of weight spread
# a few percent around the ideal)
shares=$(for v in "$V1" "$V2"; do
	if [[ $v == "$V1" ]]; then
		want=(b1=0.2 b2=0.2 b3=0.2 b4=0.2 b5=0.2)
	else
		want=(b1=0.166666666667 b2=0.5 b3=0.166666666667 b4=0.166666666667)
	fi
	xlbctl -j table show "$v" | "$TAP_PYTHON" -c '
import json, sys
t = json.load(sys.stdin)
print(t["vip"] + ": " + " ".join("%s=%.3f(ideal %.3f)" % (b["name"], b["share"], b["ideal_share"])
                               for b in t["backends"]))
want = dict(a.split("=") for a in sys.argv[1:])
ok = all(abs(b["ideal_share"] - float(want[b["name"]])) < 1e-9 and
         abs(b["share"] - b["ideal_share"]) < 0.1 for b in t["backends"])
ok = ok and len(t["backends"]) == len(want)
print("ok" if ok else "WRONG")' "${want[@]}"
done)
sc_result "$([[ $shares != *WRONG* ]]; echo $?)" \
	"V1: b5 has a fifth of the slots; V2: b2 (weight 3 of 6) about half" "$(grep -v '^ok$' <<<"$shares")"

sc_conns c1 "$(vip4 1):80" "$N" "$work/c1.json" --expect "$(sc_expect "$V1")" --alpha "$ALPHA"
sc_conns c1 "$(vip4 2):80" "$N" "$work/c2.json" --expect "$(sc_expect "$V2")" --alpha "$ALPHA"
out=$(sc_conns_summary "$work/c1.json"; sc_conns_summary "$work/c2.json")
sc_result "$([[ $(json_get "$work/c1.json" "j['ok'] and 'b5' in j['backends']") == True &&
	$(json_get "$work/c2.json" "j['ok']") == True ]]; echo $?)" \
	"new connections follow the new tables: b5 on V1, b2 x3 on V2 (p >= $ALPHA)" "$out"

# --- a bad file changes nothing -------------------------------------------------

cp "$conf" "$work/good.conf"
echo "backend add $V3 ${BACKEND_IP4[4]} weight lots" >>"$conf"
out=$(xlbctl reload 2>&1)
rc=$?
state "$work/s2.txt"
line=$(wc -l <"$conf")
sc_result "$([[ $rc -eq 1 && $out == *"$conf:$line:"* ]] &&
	diff -q "$work/s1.txt" "$work/s2.txt" >/dev/null; echo $?)" \
	"a file with an error: reload refused with FILE:LINE:COLUMN, nothing changed" \
	"$out" "$(diff "$work/s1.txt" "$work/s2.txt")"
cp "$work/good.conf" "$conf"

sleep 0.5	# more messages on every held connection after the reload
for h in v1 v2 v3; do sc_hold_stop "$h" >>"$work/stop.log" 2>&1; done
out=$(for h in v3 v1 v2; do sc_hold_summary "$h"; done 2>&1 || cat "$work/stop.log")
verdict=$("$TAP_PYTHON" - "$TOPO_DIR"/hold-v{3,1,2}.json <<-'EOF'
	import json, sys
	ok = True
	for f in sys.argv[1:]:
	    j = json.load(open(f))
	    ph = {p["name"]: p for p in j["phases"]}
	    print("%s: %d connections, broken %d; after the reload: replies %d" % (
	        j["to"], j["established"], j["broken"], ph["reload"]["replies"]))
	    ok = ok and j["ok"] and ph["reload"]["replies"] >= j["established"]
	sys.exit(0 if ok else 1)
EOF
)
sc_result $? "0 held connections broken by the reload: V3 (untouched), V1, V2" "$verdict" "$out"

tap_diag "runtime $(( ($(now_ms) - t_start) / 1000 )) s (before teardown)"
tap_done
