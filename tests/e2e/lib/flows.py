#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Helpers of the end-to-end failure scenarios (tests/e2e/lib/scenario.sh):
#
#   flows.py explain SOCKET < FLOWS
#       one xlbd "explain" request per line of FLOWS ("tcp SRC:SPORT ->
#       DST:DPORT"), all on one connection to the control socket; prints a
#       JSON list, per flow: {"flow", "primary", "secondary", "backend",
#       "ct", "ct_valid"} (backend names; null where there is none).
#
#   flows.py connect SRC FIRST COUNT DST:DPORT [TIMEOUT_S]
#       COUNT TCP connections from the fixed source ports FIRST ..
#       FIRST+COUNT-1 of SRC to DST:DPORT (an xlb-traffic server), one
#       request each (the xlb-traffic wire format), closed with a reset so
#       the same 4-tuple can be used again at once (no TIME_WAIT); prints
#       a JSON object {"PORT": "backend id" or "error: ..."}.
#
# Every wait is bounded (socket timeouts); nothing loops forever.
import json
import os
import socket
import struct
import sys
from concurrent.futures import ThreadPoolExecutor


def name_of(b):
    """A backend's name; "id N" for one xlbd no longer knows."""
    if not isinstance(b, dict):
        return None
    return b.get("name") or "id %s" % b.get("id")


def explain(sock_path):
    flows = [l.strip() for l in sys.stdin if l.strip()]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock_path)
    f = s.makefile("rwb")
    out = []
    for flow in flows:
        f.write((json.dumps({"version": 1, "cmd": "explain", "flow": flow})
                 + "\n").encode())
        f.flush()
        line = f.readline()
        if not line:
            sys.exit("xlbd closed the connection at flow %r" % flow)
        a = json.loads(line)
        if not a.get("ok"):
            sys.exit("explain %r: %s" % (flow, a.get("error")))
        r = a["result"]
        ct = r.get("conntrack") or {}
        out.append({"flow": flow,
                    "primary": name_of(r.get("primary")),
                    "secondary": name_of(r.get("secondary")),
                    "backend": name_of(r.get("backend")),
                    "ct": name_of(ct.get("backend")),
                    "ct_valid": ct.get("valid")})
    s.close()
    json.dump(out, sys.stdout)
    print()


def split_addr(a):
    host, port = a.rsplit(":", 1)
    return host.strip("[]"), int(port)


def recvn(c, n):
    b = b""
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise EOFError("connection closed")
        b += d
    return b


def one(src, port, dst, timeout):
    fam = socket.AF_INET6 if ":" in dst[0] else socket.AF_INET
    c = socket.socket(fam, socket.SOCK_STREAM)
    try:
        c.settimeout(timeout)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        c.bind((src, port))
        c.connect(dst)
        body = os.urandom(16)
        c.sendall(struct.pack("!4sII", b"XLBQ", 1, len(body)) + body)
        magic, seq, n = struct.unpack("!4sII", recvn(c, 12))
        ident = recvn(c, 20).rstrip(b"\0").decode()
        echo = recvn(c, n)
        if magic != b"XLBR" or seq != 1 or echo != body:
            return "error: bad reply"
        return ident
    except (OSError, EOFError) as e:
        return "error: %s" % e
    finally:
        # a reset, not a FIN: no TIME_WAIT, the 4-tuple is free again
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
        c.close()


def connect(src, first, count, to, timeout=3.0):
    dst = split_addr(to)
    ports = range(int(first), int(first) + int(count))
    with ThreadPoolExecutor(max_workers=16) as ex:
        res = list(ex.map(lambda p: one(src, p, dst, float(timeout)), ports))
    json.dump({str(p): r for p, r in zip(ports, res)}, sys.stdout)
    print()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "explain":
        explain(sys.argv[2])
    elif len(sys.argv) in (6, 7) and sys.argv[1] == "connect":
        connect(*sys.argv[2:])
    else:
        sys.exit("usage: flows.py explain SOCKET < FLOWS | "
                 "flows.py connect SRC FIRST COUNT DST:DPORT [TIMEOUT_S]")
