#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Helpers of the end-to-end failure scenarios (tests/e2e/lib/scenario.sh):
#
#   flows.py explain SOCKET < FLOWS
#       one xlbd "explain" request per line of FLOWS ("tcp SRC:SPORT ->
#       DST:DPORT"), all on one connection to the control socket; prints a
#       JSON list, per flow: {"flow", "primary", "secondary", "backend",
#       "ct", "ct_valid", "ct_age_ms"} (backend names; null where there is
#       none; the age of the connection table entry since its last packet).
#
#   flows.py connect SRC FIRST COUNT DST:DPORT [TIMEOUT_S]
#       COUNT TCP connections from the fixed source ports FIRST ..
#       FIRST+COUNT-1 of SRC to DST:DPORT (an xlb-traffic server), one
#       request each (the xlb-traffic wire format), closed with a reset so
#       the same 4-tuple can be used again at once (no TIME_WAIT); prints
#       a JSON object {"PORT": "backend id" or "error: ..."}.
#
#   flows.py carriers HOST=EXPLAIN...
#       per flow of the explains ("SRC:SPORT HOST" lines), the LB host
#       carrying it now: the one whose valid connection table entry for it
#       is the freshest (a held flow sends every 500 ms); "?" when no host
#       has one.
#
#   flows.py fate ALIVE HOST=BEFORE:CHANGED:AFTER...
#       what became of held flows when the tables changed and then an LB
#       host was lost (ECMP moved flows to other hosts).  Per LB host, three
#       `flows.py explain` of every flow: BEFORE the change, CHANGED (after
#       it, before the loss) and AFTER the loss (empty for the lost host);
#       ALIVE the flows still established at the end ("tcp SRC:SPORT ->
#       DST:DPORT" lines).  The host carrying a flow is the one whose
#       connection table saw it last (a held flow sends every 500 ms; the
#       router's ECMP hash is not replayed).  A flow's backend is its
#       entry's there BEFORE; it breaks when the host carrying it AFTER
#       picks another backend in CHANGED (no valid entry: the new table's
#       primary); xlb_redirect saves it when that host's secondary is its
#       backend.  Prints a JSON object: flows, moved (changed LB host),
#       fresh (no valid entry on the host carrying them AFTER), changed (of
#       all flows, the new table's primary is not their backend),
#       predicted (broken without the second chance), unsaveable (of those,
#       the secondary is not their backend either), broken (not
#       established at the end), broken_unpredicted, predicted_alive,
#       lost (no host saw them; lists of SRC:SPORT).
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
        out.append({"flow": flow, "ct_age_ms": ct.get("age_ms"),
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


def freshest(ex, f):
    """The host of ex ({host: {flow: explain}}) whose valid entry for f
    is the freshest, or None."""
    seen = [(e[f]["ct_age_ms"], h) for h, e in ex.items()
            if f in e and e[f]["ct_valid"] and e[f]["ct_age_ms"] is not None]
    return min(seen)[1] if seen else None


def load_explain(path):
    if not path:
        return {}
    return {e["flow"].split()[1]: e for e in json.load(open(path))}


def carriers(hosts):
    ex = {}
    for a in hosts:
        h, path = a.split("=", 1)
        ex[h] = load_explain(path)
    for f in sorted(set().union(*(e.keys() for e in ex.values()))):
        print(f, freshest(ex, f) or "?")


def fate(alive, hosts):
    ex = {}
    for a in hosts:
        h, paths = a.split("=", 1)
        ex[h] = [load_explain(p) for p in paths.split(":")]

    def carrier(k, f):
        """The host whose valid entry for f is the freshest in explain k."""
        return freshest({h: e[k] for h, e in ex.items()}, f)

    up = {l.split()[1] for l in open(alive) if l.strip()}
    flows = sorted(set().union(*(e[0].keys() for e in ex.values())))
    moved, fresh, changed, pred, unsave, lost = [], [], [], [], [], []
    for f in flows:
        h0, h1 = carrier(0, f), carrier(2, f)
        if h0 is None or h1 is None:
            lost.append(f)
            continue
        old = ex[h0][0][f]["backend"]
        new = ex[h1][1][f]
        if ex[h0][1][f]["primary"] != old:
            changed.append(f)
        if h1 != h0:
            moved.append(f)
        if not new["ct_valid"]:
            fresh.append(f)
        if new["backend"] != old:
            pred.append(f)
            if new["secondary"] != old:
                unsave.append(f)
    broken = [f for f in flows if f not in up]
    json.dump({"flows": len(flows), "moved": len(moved), "fresh": len(fresh),
               "changed": len(changed), "predicted": pred,
               "unsaveable": unsave, "broken": broken, "lost": lost,
               "broken_unpredicted": sorted(set(broken) - set(pred)),
               "predicted_alive": sorted(set(pred) - set(broken))},
              sys.stdout)
    print()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "explain":
        explain(sys.argv[2])
    elif len(sys.argv) in (6, 7) and sys.argv[1] == "connect":
        connect(*sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "carriers":
        carriers(sys.argv[2:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "fate":
        fate(sys.argv[2], sys.argv[3:])
    else:
        sys.exit("usage: flows.py explain SOCKET < FLOWS | "
                 "flows.py connect SRC FIRST COUNT DST:DPORT [TIMEOUT_S] | "
                 "flows.py carriers HOST=EXPLAIN... | "
                 "flows.py fate ALIVE HOST=BEFORE:CHANGED:AFTER...")
