#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build/xlbctl without a real daemon: help of every command, arguments
# rejected locally (named, exit status 2, nothing sent), no daemon (exit
# status 1), where -j goes, the requests each command sends and how answers
# are shown, against a fake xlbd (python3) that logs every request and
# answers from a table; the man pages render without warnings; the bash
# completion and the unit file.  Prints TAP; exits non-zero if a case fails.
# The integration with the real xlbd is tests/daemon/.
set -u
cd "$(dirname "$0")/../.." || exit 1

BIN=${O:-build}/xlbctl
[[ "$BIN" == /* ]] || BIN=$PWD/$BIN
VIP=192.0.2.10:80/tcp
tmp=$(mktemp -d) || exit 1
fake_pid=
cleanup() {
	[[ -n "$fake_pid" ]] && kill "$fake_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

. tests/lib/tap.sh
if [[ ! -x "$BIN" ]]; then
	echo "Bail out! $BIN is missing; run 'make $BIN'"
	exit 1
fi

# ctl ARGS...: run xlbctl; stdout in $tmp/out, stderr in $tmp/err, $rc
ctl() {
	"$BIN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
}

# what happened, for diagnostics
seen() {
	echo "exit status $rc"
	sed 's/^/stdout: /' "$tmp/out" | head -15
	sed 's/^/stderr: /' "$tmp/err" | head -5
}

has() {		# has FILE TEXT: fixed string
	grep -qF -- "$2" "$1"
}

# --- the fake daemon ---------------------------------------------------------
cat >"$tmp/fake.py" <<'EOF'
# A stand-in for xlbd: logs each request (one JSON line, keys sorted) and
# answers from resp.json by "cmd": {"result": R} | {"error": S} |
# {"answer": A} (verbatim) | {"raw": TEXT} | {"close": true}.  Counters of
# stats and backend.show grow with each call (call n: n times the table's),
# and stats' time is 1000 + n, so rates are exact.
import json, socket, sys, threading
sock_path, resp_path, log_path = sys.argv[1:4]
counts, lock = {}, threading.Lock()
GROW = ("packets", "bytes", "new_flows", "ct_hits", "ct_misses", "drop")

def grow(o, n):
    if isinstance(o, dict):
        return {k: (v * n if k in GROW and isinstance(v, int) else grow(v, n))
                for k, v in o.items()}
    if isinstance(o, list):
        return [grow(v, n) for v in o]
    return o

def answer(req):
    with open(resp_path) as f:
        r = json.load(f).get(req.get("cmd"), {"result": {}})
    if "raw" in r:
        return r["raw"]
    if r.get("close"):
        return None
    if "error" in r:
        return json.dumps({"version": 1, "ok": False, "error": r["error"]}) + "\n"
    if "answer" in r:
        return json.dumps(r["answer"]) + "\n"
    res, cmd = r["result"], req.get("cmd")
    if cmd in ("stats", "backend.show"):
        with lock:
            key = cmd + str(req.get("vip"))
            counts[key] = counts.get(key, 0) + 1
            n = counts[key]
        res = grow(res, n)
        if cmd == "stats":
            res["time"] = 1000.0 + n
    return json.dumps({"version": 1, "ok": True, "result": res}) + "\n"

def serve(conn):
    for line in conn.makefile("rb"):
        req = json.loads(line)
        with lock, open(log_path, "a") as log:
            log.write(json.dumps(req, sort_keys=True) + "\n")
        a = answer(req)
        if a is None:
            break
        conn.sendall(a.encode())
    conn.close()

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sock_path)
s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF

cat >"$tmp/resp.json" <<'EOF'
{
 "exec": {"result": {"changed": true, "generation": 7}},
 "status": {"result": {"version": "0.2", "pid": 4242, "instance": "default",
   "uptime_s": 3725, "generation": 7, "config_file": "/etc/xlb/xlb.conf",
   "state_file": "/var/lib/xlb/default/state.conf",
   "pin_dir": "/sys/fs/bpf/xlb/default", "adopted": true, "vips": 1,
   "backends": 3, "failover": {"downs": 2, "ups": 1, "last_ms": 0.0123,
   "max_ms": 0.25, "last_at": 1.0},
   "links": [{"ifname": "eth0", "ifindex": 2,
   "mode": "native", "attached": true, "prog_id": 77}]}},
 "link.show": {"result": {"links": [{"ifname": "eth0", "ifindex": 2,
   "mode": "native", "attached": true, "prog_id": 77}]}},
 "vip.show": {"result": {"vips": [{"vip": "192.0.2.10:80/tcp", "id": 0,
   "algo": "maglev", "table_size": 251, "vnodes": 100, "hash": "5tuple",
   "encap": "gue", "stateless": false, "panic": 50,
   "health": {"kind": "http", "port": 0, "interval_ms": 2000,
     "timeout_ms": 1000, "rise": 2, "fall": 3, "http_path": "/healthz",
     "http_status": 200},
   "backends": 3, "healthy": 3, "in_table": 3, "panic_active": false,
   "generation": 4, "fingerprint": "0x0123456789abcdef", "changed_at": 1.0,
   "memory_bytes": 1052672, "stats": {"packets": 10, "bytes": 1000,
   "new_flows": 2, "ct_hits": 8, "ct_misses": 2, "cache_hits": 6}}]}},
 "backend.show": {"result": {"vip": "192.0.2.10:80/tcp", "backends": [
   {"addr": "10.0.0.11", "name": "web1", "id": 1, "weight": 1,
    "state": "active", "health": "up", "check": {"kind": "http"},
    "last_check": {"ok": true, "detail": "http status 200", "at": 1.0},
    "in_table": true, "slots": 84, "share": 0.33466, "packets": 1000,
    "bytes": 125000},
   {"addr": "10.0.0.12", "name": "10.0.0.12", "id": 2, "weight": 1,
    "state": "active", "health": "up", "check": {"kind": "http"},
    "last_check": null, "in_table": true, "slots": 84, "share": 0.33466,
    "packets": 3000, "bytes": 375000},
   {"addr": "10.0.0.13", "name": "web3", "id": 3, "weight": 1,
    "state": "drain", "health": "down", "check": {"kind": "http"},
    "last_check": {"ok": false, "detail": "timeout", "at": 1.0},
    "in_table": false, "slots": 0, "share": 0, "packets": null,
    "bytes": null, "shared_with": 1}]}},
 "table.show": {"result": {"vip": "192.0.2.10:80/tcp", "algo": "maglev",
   "table_size": 251, "generation": 4, "fingerprint": "0x0123456789abcdef",
   "changed_at": 1.0, "backends_max_avg": 1.004, "backends": [
   {"name": "web1", "addr": "10.0.0.11", "id": 1, "slots": 126,
    "share": 0.50199, "ideal_share": 0.5},
   {"name": "10.0.0.12", "addr": "10.0.0.12", "id": 2, "slots": 125,
    "share": 0.49801, "ideal_share": 0.5}]}},
 "explain": {"result": {"flow": "tcp 198.51.100.7:40000 -> 192.0.2.10:80",
   "vip": "192.0.2.10:80/tcp", "verdict": "forward",
   "reason": "new flow: the table's primary", "hash": 3735928559,
   "slot": 17, "table_size": 251,
   "primary": {"id": 1, "name": "web1", "addr": "10.0.0.11"},
   "secondary": {"id": 2, "name": "10.0.0.12", "addr": "10.0.0.12"},
   "backend": {"id": 1, "name": "web1", "addr": "10.0.0.11"}}},
 "stats": {"result": {"vips": [{"vip": "192.0.2.10:80/tcp",
   "packets": 1000, "bytes": 125000, "new_flows": 10, "ct_hits": 990,
   "ct_misses": 10, "backends": [
     {"name": "web1", "addr": "10.0.0.11", "packets": 250, "bytes": 31250},
     {"name": "10.0.0.12", "addr": "10.0.0.12", "packets": 750,
      "bytes": 93750},
     {"name": "web3", "addr": "10.0.0.13", "packets": null, "bytes": null,
      "shared_with": 1}]}],
   "backends": [
     {"id": 1, "addr": "10.0.0.11", "encap": "gue", "packets": 250,
      "bytes": 31250, "vips": ["192.0.2.10:80/tcp"]},
     {"id": 3, "addr": "10.0.0.13", "encap": "gue", "packets": 4000,
      "bytes": 400000, "vips": ["192.0.2.10:80/tcp", "192.0.2.11:53/udp"]}],
   "events": {"malformed": 0, "fragment": 0, "no_backend": 0},
   "actions": {"aborted": 0, "drop": 5, "pass": 100, "tx": 1000,
     "redirect": 0},
   "conntrack_entries": 12}},
 "save": {"result": {"text": "set key 00112233445566778899aabbccddeeff\nvip add 192.0.2.10:80/tcp\nbackend add 192.0.2.10:80/tcp 10.0.0.11\n"}},
 "restore": {"result": {"changed": true, "generation": 8}},
 "reload": {"result": {"changed": false, "generation": 8,
   "file": "/etc/xlb/xlb.conf"}},
 "shutdown": {"result": {}}
}
EOF
cp "$tmp/resp.json" "$tmp/resp.orig"

SOCK=$tmp/xlbd.sock
LOG=$tmp/requests
: >"$LOG"
python3 "$tmp/fake.py" "$SOCK" "$tmp/resp.json" "$LOG" 2>"$tmp/fake.err" &
fake_pid=$!
for _ in $(seq 50); do
	[[ -S "$SOCK" ]] && break
	sleep 0.1
done
if [[ ! -S "$SOCK" ]]; then
	echo "Bail out! the fake xlbd did not start: $(cat "$tmp/fake.err")"
	exit 1
fi
X=(-s "$SOCK")

# respond CMD JSON: change one answer of the fake; respond_reset: all back
respond() {
	python3 - "$tmp/resp.json" "$1" "$2" <<'EOF'
import json, sys
p, cmd, val = sys.argv[1:4]
r = json.load(open(p))
r[cmd] = json.loads(val)
json.dump(r, open(p, "w"))
EOF
}
respond_reset() {
	cp "$tmp/resp.orig" "$tmp/resp.json"
}

# last_request PYTHON-EXPR: the expression over `r`, the last request
last_request() {
	python3 - "$LOG" "$1" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
try:
    r = json.loads(lines[-1])
    ok = eval(sys.argv[2])
except Exception as e:
    print("#   %s: %s" % (type(e).__name__, e))
    ok = False
if not ok:
    print("#   last request: %s" % (lines[-1] if lines else "(none)"))
sys.exit(0 if ok else 1)
EOF
}

# json_check FILE PYTHON-EXPR: over `j` (one document) or `lines` (JSON lines)
json_check() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
try:
    lines = [json.loads(l) for l in text.splitlines() if l.strip()] \
        if text.lstrip().startswith("{") and "\n{" in text else None
    j = json.loads(text) if lines is None else None
    ok = eval(sys.argv[2])
except Exception as e:
    print("#   %s: %s" % (type(e).__name__, e))
    ok = False
sys.exit(0 if ok else 1)
EOF
}

requests() {
	wc -l <"$LOG"
}

OBJECTS="set link vip backend table explain stats top status save restore reload shutdown"

# --- help ----------------------------------------------------------------------
ctl --help
ok=0
[[ $rc -eq 0 && ! -s "$tmp/err" ]] || ok=1
has "$tmp/out" "Usage: xlbctl [OPTIONS] COMMAND" || ok=1
for o in $OBJECTS; do
	grep -q "^  $o\b" "$tmp/out" || ok=1
done
cp "$tmp/out" "$tmp/help"
tap_result $ok "--help lists every command and exits 0" "$(seen)"

ctl -h
cmp -s "$tmp/out" "$tmp/help" && [[ $rc -eq 0 ]]
tap_result $? "-h prints the same help" "$(seen)"

ctl -V
[[ $rc -eq 0 ]] && grep -qE '^xlbctl [0-9]+\.[0-9]+ \(control protocol 1\)$' "$tmp/out"
tap_result $? "-V prints the version and the protocol" "$(seen)"

for o in $OBJECTS; do
	ctl "$o" --help
	[[ $rc -eq 0 && ! -s "$tmp/err" ]] && head -1 "$tmp/out" | grep -q "^Usage: xlbctl $o\b"
	tap_result $? "$o --help prints its usage" "$(seen)"
done

ctl vip add --help
[[ $rc -eq 0 ]] && [[ $(grep -c 'xlbctl vip' "$tmp/out") -eq 1 ]] &&
	has "$tmp/out" "Usage: xlbctl vip add VIP" && has "$tmp/out" "table-size M"
tap_result $? "vip add --help prints that verb with the VIP options" "$(seen)"

ctl backend drain -h
[[ $rc -eq 0 ]] && has "$tmp/out" "Usage: xlbctl backend drain VIP ADDR"
tap_result $? "backend drain -h prints that verb" "$(seen)"

ctl
[[ $rc -eq 2 && ! -s "$tmp/out" ]] && has "$tmp/err" "Usage: xlbctl"
tap_result $? "no command: usage on stderr, exit status 2" "$(seen)"

ctl "${X[@]}" frobnicate
[[ $rc -eq 2 ]] && has "$tmp/err" 'unknown object "frobnicate"'
tap_result $? "an unknown command is named, exit status 2" "$(seen)"

ctl -x status
[[ $rc -eq 2 ]] && has "$tmp/err" "unknown option -x"
tap_result $? "an unknown global option is named, exit status 2" "$(seen)"

# Every command of --help is in the man page; the options are in both.
man_text=$(groff -man -Tascii -P-cbou -rLL=200n -rHY=0 user/xlbctl/xlbctl.8 2>/dev/null)
missing=
while read -r line; do
	words=$(awk '{ print $1, ($2 ~ /^[a-z]+$/ ? $2 : "") }' <<<"$line")
	grep -qF -- "${words% }" <<<"$man_text" || missing+="$line; "
done < <(sed -n '/^Commands:/,/^$/p' "$tmp/help" | grep '^  ')
for opt in --socket --instance --json --help --version --watch --interval \
	   --count XLB_SOCKET /run/xlb/xlbd.sock; do
	grep -qF -- "$opt" <<<"$man_text" || missing+="$opt; "
	grep -qF -- "$opt" "$tmp/help" <(for o in $OBJECTS; do
		"$BIN" "$o" --help; done) || missing+="$opt (help); "
done
[[ -n "$man_text" && -z "$missing" ]]
tap_result $? "every command and option of --help is in xlbctl.8" "missing: $missing"

# --- arguments rejected before anything is sent -----------------------------------
: >"$LOG"
bad_case() {	# bad_case TEXT... -- ARGS...
	local want=() a
	while [[ $1 != -- ]]; do
		want+=("$1")
		shift
	done
	shift
	ctl "${X[@]}" "$@"
	local ok=0
	[[ $rc -eq 2 ]] || ok=1
	for a in "${want[@]}"; do
		has "$tmp/err" "$a" || ok=1
	done
	has "$tmp/err" "xlbctl: " || ok=1
	tap_result $ok "rejected locally: $*" "$(seen)"
}
bad_case "argument 3:" "99999" -- vip add 10.0.0.1:99999/tcp
bad_case "argument 4:" "10.0.0.300" -- backend add 10.0.0.1:80/tcp 10.0.0.300
bad_case "argument 5:" "table-size 1000" -- vip add 10.0.0.1:80/tcp table-size 1000
bad_case "argument 5:" "101" -- vip add '[2001:db8::1]:80/tcp' panic 101
bad_case "argument 4:" '"turbo"' -- link attach eth0 turbo
bad_case "argument 3:" "mtu 100" -- set mtu 100
bad_case "argument 2:" '"frob"' "add, set, del or show" -- vip frob
bad_case "needs a VIP and a backend's address or name" -- backend drain 10.0.0.1:80/tcp
bad_case "argument 5:" '"extra"' -- backend drain 10.0.0.1:80/tcp 10.0.0.1 extra
bad_case "argument 3:" '"10.0.0.1:80"' -- vip show 10.0.0.1:80
bad_case "table show needs a VIP" -- table show
bad_case "argument 3:" 'interval "0"' -- stats --interval 0
bad_case "argument 3:" 'count "0"' -- top --count 0
bad_case "argument 2:" '"--bogus"' -- top --bogus
bad_case "argument 3:" '"1.2.3.4" has no :PORT' -- explain tcp 1.2.3.4 5.6.7.8:80
bad_case "different families" -- explain 'tcp 1.2.3.4:1 -> [2001:db8::1]:80'
bad_case "restore needs a FILE" -- restore
bad_case "argument 2:" '"extra"' -- status extra
[[ $(requests) -eq 0 ]]
tap_result $? "nothing was sent for any rejected command" "$(cat "$LOG")"

# --- no daemon ------------------------------------------------------------------
ctl -s "$tmp/none.sock" status
[[ $rc -eq 1 ]] && has "$tmp/err" "xlbctl: cannot connect to $tmp/none.sock: No such file or directory"
tap_result $? "no daemon: 'cannot connect to PATH: ...', exit status 1" "$(seen)"

XLB_SOCKET=$tmp/env.sock ctl vip show
[[ $rc -eq 1 ]] && has "$tmp/err" "cannot connect to $tmp/env.sock:"
tap_result $? "XLB_SOCKET names the socket" "$(seen)"

inst=xlbctl-test-$$
ctl -i "$inst" status
[[ $rc -eq 1 ]] && has "$tmp/err" "cannot connect to /run/xlb/$inst.sock:"
tap_result $? "--instance NAME uses /run/xlb/NAME.sock" "$(seen)"

if [[ -e /run/xlb/xlbd.sock ]]; then
	tap_skip "--instance default uses /run/xlb/xlbd.sock" "an xlbd runs here"
else
	XLB_SOCKET=$tmp/env.sock ctl --instance default status
	[[ $rc -eq 1 ]] && has "$tmp/err" "cannot connect to /run/xlb/xlbd.sock:"
	tap_result $? "--instance default uses /run/xlb/xlbd.sock" "$(seen)"
fi

ctl -s "$SOCK" -i blue status
[[ $rc -eq 2 ]] && has "$tmp/err" "give one"
tap_result $? "--socket with --instance is a usage error" "$(seen)"

ctl -i ../etc status
[[ $rc -eq 2 ]] && has "$tmp/err" 'instance "../etc"'
tap_result $? "a bad instance name is a usage error" "$(seen)"

ctl "${X[@]}" status
[[ $rc -eq 0 ]] && has "$tmp/out" "failover     2 backends down in the data path at the verdict, last in 0.012 ms, at most 0.250 ms"
tap_result $? "status: verdicts written to the data path at once, last and longest" "$(seen)"

# --- where -j goes ---------------------------------------------------------------
ctl "${X[@]}" -j status
[[ $rc -eq 0 ]] && json_check "$tmp/out" 'j["pid"] == 4242 and j["links"][0]["ifname"] == "eth0"'
tap_result $? "-j before the command prints the result as JSON" "$(seen)"

ctl --json "${X[@]}" vip show
[[ $rc -eq 0 ]] && json_check "$tmp/out" 'j["vips"][0]["fingerprint"] == "0x0123456789abcdef"'
tap_result $? "--json may come before -s too" "$(seen)"

: >"$LOG"
ctl "${X[@]}" status -j
[[ $rc -eq 2 ]] && has "$tmp/err" "-j is a global option; put it before"
tap_result $? "-j after a read command is a usage error naming the fix" "$(seen)"

ctl "${X[@]}" vip add 10.0.0.1:80/tcp -j
[[ $rc -eq 2 ]] && has "$tmp/err" "argument 4: -j is a global option"
tap_result $? "-j after a change is a usage error" "$(seen)"

ctl "${X[@]}" stats --json
[[ $rc -eq 2 && $(requests) -eq 0 ]] && has "$tmp/err" "global option"
tap_result $? "--json after stats is a usage error, nothing sent" "$(seen)"

ctl "${X[@]}" -j vip add 10.0.0.1:80/tcp
[[ $rc -eq 0 ]] && json_check "$tmp/out" 'j == {"changed": True, "generation": 7}'
tap_result $? "-j on a change prints {changed, generation}" "$(seen)"

# --- requests ------------------------------------------------------------------
ctl "${X[@]}" vip add 10.0.0.1:80/tcp algo ring
[[ $rc -eq 0 && ! -s "$tmp/out" ]] &&
	last_request 'r == {"version": 1, "cmd": "exec", "args": ["vip", "add", "10.0.0.1:80/tcp", "algo", "ring"]}'
tap_result $? "a change is exec with its tokens, and prints nothing" "$(seen)"

ctl "${X[@]}" backend drain $VIP 10.0.0.11
[[ $rc -eq 0 ]] && last_request 'r["args"] == ["backend", "set", "'$VIP'", "10.0.0.11", "state", "drain"]'
tap_result $? "backend drain is backend set ... state drain" "$(seen)"

ctl "${X[@]}" backend undrain $VIP 10.0.0.11
[[ $rc -eq 0 ]] && last_request 'r["args"] == ["backend", "set", "'$VIP'", "10.0.0.11", "state", "active"]'
tap_result $? "backend undrain is backend set ... state active" "$(seen)"

ctl "${X[@]}" backend activate $VIP 2001:db8::11
[[ $rc -eq 0 ]] && last_request 'r["args"] == ["backend", "set", "'$VIP'", "2001:db8::11", "state", "active"]'
tap_result $? "backend activate is backend set ... state active" "$(seen)"

ctl "${X[@]}" link attach eth0 generic
[[ $rc -eq 0 ]] && last_request 'r["args"] == ["link", "attach", "eth0", "generic"]'
tap_result $? "link attach is exec" "$(seen)"

ctl "${X[@]}" vip show '[2001:db8:0::1]:443/tcp'
[[ $rc -eq 0 ]] && last_request 'r == {"version": 1, "cmd": "vip.show", "vip": "[2001:db8::1]:443/tcp"}'
tap_result $? "vip show VIP sends the VIP in canonical form" "$(seen)"

for c in "backend show:backend.show" "table show:table.show"; do
	ctl "${X[@]}" ${c%%:*} $VIP
	[[ $rc -eq 0 ]] && last_request 'r == {"version": 1, "cmd": "'${c#*:}'", "vip": "'$VIP'"}'
	tap_result $? "${c%%:*} VIP is ${c#*:}" "$(seen)"
done

ctl "${X[@]}" explain tcp 198.51.100.7:40000 '->' 192.0.2.10:80
[[ $rc -eq 0 ]] && last_request 'r == {"version": 1, "cmd": "explain", "flow": "tcp 198.51.100.7:40000 -> 192.0.2.10:80"}'
tap_result $? "explain from separate words" "$(seen)"

ctl "${X[@]}" explain 'UDP [2001:db8:0::7]:5353 -> [2001:db8::10]:53'
[[ $rc -eq 0 ]] && last_request 'r["flow"] == "udp [2001:db8::7]:5353 -> [2001:db8::10]:53"'
tap_result $? "explain from one quoted word, IPv6, canonical" "$(seen)"

ctl "${X[@]}" explain tcp 198.51.100.7:40000 192.0.2.10:80
[[ $rc -eq 0 ]] && last_request 'r["flow"] == "tcp 198.51.100.7:40000 -> 192.0.2.10:80"'
tap_result $? "explain without the arrow" "$(seen)"

printf 'set key 00112233445566778899aabbccddeeff\nvip add %s # web\n' $VIP >"$tmp/good.conf"
ctl "${X[@]}" restore "$tmp/good.conf"
[[ $rc -eq 0 ]] && last_request 'r["cmd"] == "restore" and r["name"] == "'"$tmp/good.conf"'" and r["text"] == open("'"$tmp/good.conf"'").read()'
tap_result $? "restore FILE sends its text and name" "$(seen)"

"$BIN" "${X[@]}" restore - <"$tmp/good.conf" >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 0 ]] && last_request 'r["name"] == "<stdin>" and r["text"] == open("'"$tmp/good.conf"'").read()'
tap_result $? "restore - reads standard input, named <stdin>" "$(seen)"

: >"$LOG"
printf 'set key 00112233445566778899aabbccddeeff\nvip add %s weight 2\n' $VIP >"$tmp/bad.conf"
ctl "${X[@]}" restore "$tmp/bad.conf"
[[ $rc -eq 1 && $(requests) -eq 0 ]] && has "$tmp/err" "xlbctl: $tmp/bad.conf:2:"
tap_result $? "restore of a bad file names FILE:LINE and sends nothing" "$(seen)"

ctl "${X[@]}" restore "$tmp/missing.conf"
[[ $rc -eq 1 ]] && has "$tmp/err" "cannot open $tmp/missing.conf"
tap_result $? "restore of a missing file fails with exit status 1" "$(seen)"

for c in reload shutdown save status; do
	ctl "${X[@]}" $c
	[[ $rc -eq 0 ]] && last_request 'r == {"version": 1, "cmd": "'$c'"}'
	tap_result $? "$c sends {\"cmd\": \"$c\"}" "$(seen)"
done

ctl "${X[@]}" save
printf 'set key 00112233445566778899aabbccddeeff\nvip add %s\nbackend add %s 10.0.0.11\n' $VIP $VIP | cmp -s - "$tmp/out"
tap_result $? "save prints the text as it is" "$(seen)"

# --- answers that are refusals or break the protocol ---------------------------------
respond exec '{"error": "VIP 10.0.0.1:80/tcp already exists; change it with \"vip set\""}'
ctl "${X[@]}" vip add 10.0.0.1:80/tcp
[[ $rc -eq 1 ]] && [[ "$(cat "$tmp/err")" == 'xlbctl: VIP 10.0.0.1:80/tcp already exists; change it with "vip set"' ]]
tap_result $? "a refusal prints the daemon's sentence after 'xlbctl: ', exit status 1" "$(seen)"

respond status '{"answer": {"version": 2, "ok": true, "result": {}}}'
ctl "${X[@]}" status
[[ $rc -eq 1 ]] && has "$tmp/err" "protocol version 2"
tap_result $? "an answer in another protocol version is refused" "$(seen)"

respond status '{"raw": "this is not json\n"}'
ctl "${X[@]}" status
[[ $rc -eq 1 ]] && has "$tmp/err" "not JSON"
tap_result $? "an answer that is not JSON fails" "$(seen)"

respond status '{"close": true}'
ctl "${X[@]}" status
[[ $rc -eq 1 ]] && has "$tmp/err" "closed the connection"
tap_result $? "a connection closed without an answer fails" "$(seen)"

respond status '{"answer": {"version": 1, "ok": true}}'
ctl "${X[@]}" status
[[ $rc -eq 1 ]] && has "$tmp/err" "no result"
tap_result $? "an answer without a result fails" "$(seen)"
respond_reset

# --- views ------------------------------------------------------------------------
ctl "${X[@]}" table show $VIP
ok=0
for t in "NAME" "SLOTS" "SHARE" "IDEAL" "50.2%" "50.0%" "max/avg 1.004" \
	 "fingerprint 0x0123456789abcdef" "generation 4"; do
	has "$tmp/out" "$t" || ok=1
done
! has "$tmp/out" "note:" || ok=1
tap_result $ok "table show: slots, shares, max/avg, fingerprint, generation" "$(seen)"

respond table.show '{"result": {"vip": "192.0.2.10:80/tcp", "algo": "maglev", "table_size": 251, "backends": [
 {"name": "a", "addr": "10.0.0.1", "id": 0, "slots": 84, "share": 0.3347, "ideal_share": 0.3333},
 {"name": "b", "addr": "10.0.0.2", "id": 1, "slots": 84, "share": 0.3347, "ideal_share": 0.3333},
 {"name": "c", "addr": "10.0.0.3", "id": 2, "slots": 83, "share": 0.3307, "ideal_share": 0.3333},
 {"name": "d", "addr": "10.0.0.4", "id": 3, "slots": 0, "share": 0, "ideal_share": 0}]}}'
ctl "${X[@]}" table show $VIP
[[ $rc -eq 0 ]] && has "$tmp/out" "note: M = 251 is less than 100 x 3 backends" &&
	has "$tmp/out" "table-size 509"
tap_result $? "table show notes M < 100 x backends in the table" "$(seen)"

respond table.show '{"result": {"vip": "192.0.2.10:80/tcp", "algo": "maglev", "table_size": 251, "warning": "M is small", "backends": [
 {"name": "a", "slots": 126, "share": 0.5, "ideal_share": 0.5},
 {"name": "b", "slots": 125, "share": 0.5, "ideal_share": 0.5},
 {"name": "c", "slots": 0, "share": 0, "ideal_share": 0}]}}'
ctl "${X[@]}" table show $VIP
[[ $rc -eq 0 ]] && has "$tmp/out" "warning: M is small"
tap_result $? "table show prints the daemon's warning" "$(seen)"
respond_reset

ctl "${X[@]}" vip show
ok=0
for t in VIP ALGO FINGERPRINT MEMORY "192.0.2.10:80/tcp" maglev "1.00 MiB" \
	 "0x0123456789abcdef" " ago"; do
	has "$tmp/out" "$t" || ok=1
done
tap_result $ok "vip show: a table with units" "$(seen)"

ctl "${X[@]}" vip show $VIP
ok=0
for t in "health       http GET /healthz expects 200" "memory       1.00 MiB" \
	 "traffic      10 packets" "conntrack    8 hits, 2 misses" \
	 "flow cache   6 hits"; do
	has "$tmp/out" "$t" || ok=1
done
tap_result $ok "vip show VIP: the VIP in detail" "$(seen)"

ctl "${X[@]}" backend show $VIP
ok=0
for t in "3 backends" "WEIGHT" "33.5%" "web3" "drain" "failed timeout" \
	 "ok http status 200" " KiB"; do
	has "$tmp/out" "$t" || ok=1
done
# web3's address serves another VIP: its counters are not this VIP's
grep -qE '^web3 .* shared +shared$' "$tmp/out" || ok=1
tap_result $ok "backend show: states, health, last check, shares, bytes" "$(seen)"

ctl "${X[@]}" status
ok=0
for t in "xlbd 0.2, pid 4242, instance default, up 1h 2m" "generation   7" \
	 "adopted" "eth0"; do
	has "$tmp/out" "$t" || ok=1
done
tap_result $ok "status: version, uptime, generation, pins, links" "$(seen)"

ctl "${X[@]}" explain tcp 198.51.100.7:40000 192.0.2.10:80
ok=0
for t in "hash         0xdeadbeef" "slot         17 of 251" \
	 "primary      web1 (10.0.0.11, id 1)" "secondary    10.0.0.12 (id 2)" \
	 "conntrack    no entry" "verdict      forward to web1"; do
	has "$tmp/out" "$t" || ok=1
done
tap_result $ok "explain: hash, slot, primary, secondary, conntrack, verdict" "$(seen)"

ctl "${X[@]}" link show
[[ $rc -eq 0 ]] && has "$tmp/out" "IFNAME" && has "$tmp/out" "native"
tap_result $? "link show: a table" "$(seen)"

ctl "${X[@]}" stats
ok=0
for t in "PACKETS" "web1 (10.0.0.11)" "events" "xdp actions" "conntrack   12 entries"; do
	has "$tmp/out" "$t" || ok=1
done
grep -qE '^  web3 \(10\.0\.0\.13\) +shared +shared' "$tmp/out" || ok=1
grep -qE '^BACKEND ADDRESS +ENCAP +PACKETS +BYTES +VIPS' "$tmp/out" || ok=1
grep -qE '^10\.0\.0\.13 +gue +4000 +391 KiB +192\.0\.2\.10:80/tcp 192\.0\.2\.11:53/udp$' "$tmp/out" || ok=1
tap_result $ok "stats: one snapshot of the counters, each backend address once" "$(seen)"

# --- rates ------------------------------------------------------------------------
ctl "${X[@]}" stats --watch --interval 0.1 --count 3
ok=0
[[ $rc -eq 0 && $(wc -l <"$tmp/out") -eq 4 ]] || ok=1
head -1 "$tmp/out" | grep -qE 'TIME +PPS +BIT/S +NEW/S +DROP/S' || ok=1
[[ $(grep -cE '^[0-9:]{8} +1\.00k +1\.00M +10 +5$' "$tmp/out") -eq 3 ]] || ok=1
tap_result $ok "stats --watch --count 3: a header and 3 lines of rates" "$(seen)"

ctl "${X[@]}" -j stats $VIP -n 0.1 -c 2
[[ $rc -eq 0 ]] && json_check "$tmp/out" 'len(lines) == 2 and all(l["pps"] == 1000 and l["bps"] == 8000 * 125 and l["new_flows_ps"] == 10 and l["vips"][0]["vip"] == "'$VIP'" for l in lines)'
tap_result $? "-j stats VIP --count 2: JSON lines of rates" "$(seen)"
last_request 'r == {"version": 1, "cmd": "stats", "vip": "'$VIP'"}'
tap_result $? "stats VIP sends the VIP" "$(seen)"

ctl "${X[@]}" top --count 2 --interval 0.1
ok=0
[[ $rc -eq 0 && $(grep -c '^xlbctl top' "$tmp/out") -eq 2 ]] || ok=1
grep -qE 'web1 +10\.0\.0\.11 +active +up +33\.5% +1\.00k +25\.0% +1\.00M' "$tmp/out" || ok=1
grep -qE '10\.0\.0\.12 +10\.0\.0\.12 +active +up +33\.5% +3\.00k +75\.0% +3\.00M' "$tmp/out" || ok=1
grep -qE 'web3 +10\.0\.0\.13 +drain +down +0\.0% +shared +- +shared' "$tmp/out" || ok=1
! grep -q $'\033' "$tmp/out" || ok=1
tap_result $ok "top without a terminal: --count frames, no escapes" "$(seen)"

ctl "${X[@]}" -j top -c 1 -n 0.1
[[ $rc -eq 0 ]] && json_check "$tmp/out" 'j["vips"][0]["backends"][1]["packet_share"] == 0.75 and j["vips"][0]["backends"][0]["pps"] == 1000 and j["vips"][0]["backends"][2]["pps"] is None and j["vips"][0]["backends"][2]["shared"] and not j["vips"][0]["backends"][0]["shared"]'
tap_result $? "-j top: one JSON object per frame" "$(seen)"

if command -v script >/dev/null; then
	# q only once the first frame is drawn (a loaded machine may take
	# more than a second to get there), or after 10 s
	: >"$tmp/tty"
	(for ((i = 0; i < 100; i++)); do
		has "$tmp/tty" "(q quits)" && break
		sleep 0.1
	 done; printf q) | timeout 20 script -qc \
		"'$BIN' -s '$SOCK' top -n 0.2; echo rc=\$?" /dev/null >"$tmp/tty" 2>&1
	ok=0
	has "$tmp/tty" $'\033[?25l' || ok=1
	has "$tmp/tty" $'\033[H' || ok=1
	has "$tmp/tty" "(q quits)" || ok=1
	tail -c 40 "$tmp/tty" | grep -q $'\033\[?25hrc=0' || ok=1
	tap_result $ok "top on a terminal redraws in place, q quits and restores" \
		"$(tail -c 300 "$tmp/tty" | od -c | tail -5)"
else
	tap_skip "top on a terminal redraws in place, q quits and restores" "no script(1)"
fi

# --- man pages -----------------------------------------------------------------------
for page in user/xlbctl/xlbctl.8 user/xlbd/xlbd.8 user/lib/xlb.conf.5; do
	if ! command -v groff >/dev/null || ! command -v man >/dev/null; then
		tap_skip "$page renders without warnings" "no groff or man (groff-base, man-db)"
		continue
	fi
	w1=$(groff -man -ww -z "$page" 2>&1)
	w2=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
	[[ -z "$w1$w2" ]]
	tap_result $? "$page renders without warnings" "$w1" "$w2"
done

# --- bash completion -------------------------------------------------------------------
complete_line() {	# complete_line LINE: COMPREPLY, one per line
	bash -c 'source dist/xlbctl.bash-completion
		COMP_LINE=$1 COMP_POINT=${#1}
		_xlbctl; printf "%s\n" "${COMPREPLY[@]}"' _ "$1"
}
PATH=$(dirname "$BIN"):$PATH
c1=$(complete_line "xlbctl ")
c2=$(complete_line "xlbctl -s $SOCK backend drain ")
c3=$(complete_line "xlbctl -s $SOCK vip set 192.0.2.10:")
c4=$(complete_line "xlbctl vip add $VIP hash ")
c5=$(complete_line "xlbctl host ")
c6=$(complete_line "xlbctl set announce ")
[[ $(wc -w <<<"$c1") -eq 15 && "$c2" == "$VIP" && "$c3" == "80/tcp" &&
   "$c4" == $'5tuple\n3tuple\nsrc' && "$c5" == $'drain\nundrain\nshow' &&
   "$c6" == $'table\noff' ]]
tap_result $? "bash completion: commands, VIPs from save, keywords" \
	"commands: $c1" "VIPs: $c2" "after colon: $c3" "hash: $c4" \
	"host: $c5" "set announce: $c6"

# --- the unit ----------------------------------------------------------------------------
ok=0
for d in Type=simple ExecStart=/usr/local/sbin/xlbd \
	 'ExecReload=/bin/kill -HUP $MAINPID' Restart=on-failure \
	 KillMode=process ProtectSystem=strict RuntimeDirectoryPreserve=yes \
	 'ReadWritePaths=/var/lib/xlb /run/xlb /sys/fs/bpf' \
	 LimitMEMLOCK=infinity NoNewPrivileges=yes; do
	grep -qxF -- "$d" dist/xlbd.service || { ok=1; echo "#   missing: $d"; }
done
tap_result $ok "dist/xlbd.service has the directives xlbd.8 relies on"

# the hardening, scored as systemd scores it (7.0 without it, 4.7 with)
if command -v systemd-analyze >/dev/null; then
	score=$(systemd-analyze security --offline=true dist/xlbd.service 2>/dev/null |
		sed -n 's/^.*Overall exposure level for xlbd.service: \([0-9.]*\).*$/\1/p')
	awk -v s="${score:-99}" 'BEGIN { exit !(s <= 5.0) }'
	tap_result $? "systemd-analyze security rates dist/xlbd.service 5.0 or better (it says ${score:-nothing})"
else
	tap_skip "systemd-analyze security of dist/xlbd.service" "no systemd-analyze"
fi

# --- the events --------------------------------------------------------------------------
# every event the library names (user/lib/datapath.c, from the bpf headers'
# list) is explained in xlbctl.8 as a .B NAME entry
events=$(sed -n 's/^\t\[XLB_EV_[A-Z0-9_]*\][[:space:]]*= "\([a-z0-9_]*\)",$/\1/p' user/lib/datapath.c)
missing=""
for e in $events; do
	grep -qxF ".B $e" user/xlbctl/xlbctl.8 || missing+=" $e"
done
[[ $(wc -w <<<"$events") -ge 10 && -z "$missing" ]]
tap_result $? "xlbctl.8 explains every data-path event ($(wc -w <<<"$events") of them)" \
	"not in xlbctl.8:$missing"

tap_done
