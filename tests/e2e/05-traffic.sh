#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build/xlb-traffic on its own, in a private network namespace (loopback
# only): serve and the clients agree over IPv4 and IPv6, the chi-square
# numbers are right, broken data, a backend id that changes and a server
# that goes away are caught, bad arguments are refused with a reason.
# Prints TAP.
set -u
cd "$(dirname "$0")/../.." || exit 1
if [[ -z ${XLB_TRAFFIC_NETNS:-} ]]; then
	[[ $(id -u) -eq 0 ]] || { echo "Bail out! needs root"; exit 1; }
	XLB_TRAFFIC_NETNS=1 exec unshare --net -- "$0" "$@"
fi
. tests/lib/tap.sh

X=${O:-build}/xlb-traffic
[[ -x $X ]] || tap_bail "$X is missing; run 'make'"
ip link set lo up || tap_bail "no loopback"
work=$(mktemp -d) || exit 1
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

# serve_bg ID ARGS...: a server in the background, ready when this returns
serve_bg() {
	local id=$1

	shift
	rm -f "$work/ready"
	"$X" serve --id "$id" --ready "$work/ready" --max-seconds 300 "$@" \
		2>>"$work/serve.log" &
	pids+=($!)
	for _ in $(seq 50); do
		[[ -e $work/ready ]] && return 0
		sleep 0.1
	done
	return 1
}

# jcheck NAME FILE EXPR: ok if the Python expression over j is true
jcheck() {
	local v

	v=$(json_get "$2" "bool($3)" 2>&1)
	if [[ $v == True ]]; then
		tap_result 0 "$1"
	else
		tap_result 1 "$1" "$3: $v" "$(cat "$2")"
	fi
}

serve_bg s1 --tcp 7001 --udp 7001 || tap_bail "serve did not start"

"$X" conns --to 127.0.0.1:7001 -n 300 --concurrency 20 --bytes 70000 -j \
	>"$work/c4.json"
jcheck "conns IPv4: 300 connections of 70000 bytes, all from s1" "$work/c4.json" \
	"j['completed'] == 300 and j['failed'] == 0 and list(j['backends']) == ['s1'] and j['ok']"
"$X" conns --to "[::1]:7001" -n 100 --bytes 0 -j >"$work/c6.json"
jcheck "conns IPv6, empty requests" "$work/c6.json" \
	"j['completed'] == 100 and j['backends']['s1']['count'] == 100"
"$X" udp --to 127.0.0.1:7001 -n 500 --bytes 1400 -j >"$work/u4.json"
jcheck "udp IPv4: 500 requests answered by s1" "$work/u4.json" \
	"j['completed'] == 500 and list(j['backends']) == ['s1']"
# two at a time: 60 kB datagrams would overflow the server's socket buffer
"$X" udp --to "[::1]:7001" -n 50 --bytes 60000 --concurrency 2 -j >"$work/u6.json"
jcheck "udp IPv6: 60000-byte datagrams" "$work/u6.json" "j['completed'] == 50"

# One backend where two were expected, 10 connections: chi-square 10 with
# 1 degree of freedom, p = erfc(sqrt(5)) = 0.0015654.
"$X" conns --to 127.0.0.1:7001 -n 10 --expect s1=1,s2=1 -j >"$work/chi.json"
jcheck "chi-square against --expect: statistic, df, p-value" "$work/chi.json" \
	"abs(j['chi2'] - 10) < 1e-9 and j['df'] == 1 and abs(j['p'] - 0.0015654) < 1e-6"
"$X" conns --to 127.0.0.1:7001 -n 10 --expect s1=1,s2=1 --alpha 0.01 \
	>"$work/alpha.txt" 2>&1
rc=$?
tap_result "$([[ $rc -eq 1 ]] && grep -q REJECTED "$work/alpha.txt"; echo $?)" \
	"--alpha: a p-value below it fails the run" "$(cat "$work/alpha.txt")"
"$X" conns --to 127.0.0.1:7001 -n 10 --expect s9=1 -j >"$work/unexp.json"
jcheck "a backend with no expected share: p = 0" "$work/unexp.json" \
	"j['chi2'] is None and j['p'] == 0"

# hold: 600 connections, phases from the control file, ready file
: >"$work/ctl"
"$X" hold --to 127.0.0.1:7001 -n 600 --duration 30 --interval 50 \
	--control "$work/ctl" --ready "$work/hready" -j \
	>"$work/hold.json" 2>"$work/hold.log" &
hold=$!
for _ in $(seq 100); do
	[[ -e $work/hready ]] && break
	sleep 0.1
done
echo "phase second" >>"$work/ctl"
sleep 0.5
echo "stop" >>"$work/ctl"
wait "$hold"
rc=$?
jcheck "hold: 600 connections, none broken, phases, stop from the control file" \
	"$work/hold.json" \
	"j['established'] == 600 and j['broken'] == 0 and j['ended_by'] == 'control' and [p['name'] for p in j['phases']] == ['start', 'second'] and all(p['replies'] > 0 for p in j['phases'])"
tap_result "$([[ $rc -eq 0 && -e $work/hready ]]; echo $?)" \
	"hold exits 0 and wrote its ready file" "exit status $rc"

# hold: the server goes away; every connection breaks (eof), exit 1
serve_bg s2 --tcp 7002 --udp 7002
s2=${pids[-1]}
"$X" hold --to 127.0.0.1:7002 -n 50 --duration 10 --interval 50 \
	--ready "$work/hready2" -j >"$work/hold2.json" 2>"$work/hold2.log" &
hold=$!
for _ in $(seq 100); do
	[[ -e $work/hready2 ]] && break
	sleep 0.1
done
kill "$s2"
wait "$hold"
rc=$?
jcheck "hold: a server that goes away breaks every connection (eof, reset)" \
	"$work/hold2.json" \
	"j['broken'] == 50 and j['reasons']['eof'] + j['reasons']['reset'] == 50"
tap_result "$([[ $rc -eq 1 ]]; echo $?)" "hold exits 1 when a connection broke" \
	"exit status $rc"

# Fake servers that get it wrong: one byte of the echo flipped; the id
# changes after the first reply; a reply to a request never made.
cat >"$work/fake.py" <<'EOF'
import socket, struct, sys, threading
mode, port = sys.argv[1], int(sys.argv[2])
def recvn(c, n):
    b = b""
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b
def conn(c):
    k = 0
    try:
        while True:
            magic, seq, n = struct.unpack("!III", recvn(c, 12))
            body = bytearray(recvn(c, n))
            ident = b"x1" if mode != "idchange" or k == 0 else b"x2"
            if mode == "flip" and n:
                body[n // 2] ^= 0x40
            c.sendall(struct.pack("!III", 0x584c4252, seq, n) +
                      ident.ljust(20, b"\0") + bytes(body))
            if mode == "extra":
                c.sendall(b"surprise")
            k += 1
    except (EOFError, OSError):
        pass
    c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(128)
open(sys.argv[3], "w").close()
while True:
    c, _ = s.accept()
    threading.Thread(target=conn, args=(c,), daemon=True).start()
EOF
fake() {	# fake MODE PORT
	rm -f "$work/fready"
	"$TAP_PYTHON" "$work/fake.py" "$1" "$2" "$work/fready" &
	pids+=($!)
	for _ in $(seq 50); do
		[[ -e $work/fready ]] && return 0
		sleep 0.1
	done
}
fake flip 7101
"$X" conns --to 127.0.0.1:7101 -n 20 --bytes 5000 -j >"$work/flip.json"
jcheck "conns: a flipped byte in the echo fails as bad_data" "$work/flip.json" \
	"j['failures']['bad_data'] == 20 and j['completed'] == 0 and not j['ok']"
fake idchange 7102
"$X" hold --to 127.0.0.1:7102 -n 10 --duration 2 --interval 50 -j \
	>"$work/idc.json" 2>/dev/null
jcheck "hold: a backend id that changes mid-connection breaks it (id_changed)" \
	"$work/idc.json" "j['reasons']['id_changed'] == 10"
fake extra 7103
"$X" hold --to 127.0.0.1:7103 -n 10 --duration 2 --interval 50 -j \
	>"$work/extra.json" 2>/dev/null
jcheck "hold: bytes nobody asked for break the connection (bad_header)" \
	"$work/extra.json" "j['reasons']['bad_header'] == 10"

# refused and timed out
"$X" conns --to 127.0.0.1:7999 -n 5 -j >"$work/ref.json"
jcheck "conns: a closed port counts as refused" "$work/ref.json" \
	"j['failures']['refused'] == 5"
"$X" udp --to 127.0.0.1:7999 -n 5 --timeout 100 --retries 1 -j >"$work/uref.json"
jcheck "udp: a closed port counts as refused" "$work/uref.json" \
	"j['failures']['refused'] == 5"

# ping
tap_check "ping 127.0.0.1 and ::1" bash -c "'$X' ping -c 1 127.0.0.1 && '$X' ping -c 1 ::1"
out=$("$X" ping -c 2 -W 100 192.0.2.1 2>&1)
tap_result "$([[ $? -eq 1 ]]; echo $?)" "ping: no answer gives exit status 1" "$out"

# bad arguments: exit status 2 and a sentence naming the problem
bad_args() {	# bad_args EXPECTED-TEXT ARGS...
	local want=$1 out rc

	shift
	out=$("$X" "$@" 2>&1)
	rc=$?
	[[ $rc -eq 2 && $out == *"$want"* ]] ||
		echo "xlb-traffic $*: exit status $rc, '$out' (want '$want')"
}
bad=()
while IFS='|' read -r want args; do
	# shellcheck disable=SC2086
	msg=$(bad_args "$want" $args)
	[[ -n $msg ]] && bad+=("$msg")
done <<'EOF'
--to ADDR:PORT is required|conns -n 5
is not ADDR:PORT|conns --to 127.0.0.1
is not a number from 1 to 65535|conns --to 127.0.0.1:0
is not a number from 1 to 65535|conns --to 127.0.0.1:70000
is not an IPv4 or IPv6 address|conns --to 300.1.1.1:80
write IPv6 as [ADDR]:PORT|conns --to ::1:80
is not [IPV6]:PORT|conns --to [::1:80
-n: '0' is not a number|conns --to 127.0.0.1:80 -n 0
-n: '-3' is not a number|conns --to 127.0.0.1:80 -n -3
--bytes: '99999999999' is not a number|conns --to 127.0.0.1:80 --bytes 99999999999
--bytes: '70000' is not a number|udp --to 127.0.0.1:80 --bytes 70000
is not ID=SHARE|conns --to 127.0.0.1:80 --expect b1
bad id|conns --to 127.0.0.1:80 --expect b/1=1
--expect share: 'x' is not a number|conns --to 127.0.0.1:80 --expect b1=x
the shares add up to 0|conns --to 127.0.0.1:80 --expect b1=0
--duration S is required|hold --to 127.0.0.1:80
--expect and --alpha are for conns and udp|hold --to 127.0.0.1:80 --duration 1 --alpha 0.1
are for hold|conns --to 127.0.0.1:80 --duration 3
unexpected argument 'extra'|conns --to 127.0.0.1:80 extra
--id: 'a/b'|serve --id a/b
--id: 'abcdefghijklmnopqrstuvwxyz'|serve --id abcdefghijklmnopqrstuvwxyz
--bind: 'nowhere' is not an IPv4 or IPv6 address|serve --bind nowhere
usage:|frobnicate
usage:|conns --to 127.0.0.1:80 --no-such-option
one address expected|ping
EOF
tap_result ${#bad[@]} "bad arguments: exit status 2 and a reason" "${bad[@]}"

tap_done
