# SPDX-License-Identifier: GPL-2.0
"""QUIC-shaped datagrams for tests/e2e/88-quic.sh (no QUIC stack: the
headers xlb reads, bpf/quic.h, and a payload naming the connection).

  quic.py serve ID ADDR PORT READY   answer every datagram with "ID <payload
                                     after the header>" from ADDR:PORT
  quic.py run VIP PORT PLAN          send what PLAN (JSON) says, print JSON

PLAN: {"cr": 0, "sid": {"b1": "000001", ...}, "nonce_len": 4,
       "conns": N, "src_initial": [addr], "src_moved": [addr],
       "moves": M, "unknown": U}
For each of N connections: an Initial (long header, random DCID) from
src_initial on a fresh port; the answering server's ID then goes into
short headers sent from each address of src_moved on M fresh ports; U
short headers with unknown server IDs.  The answer of each datagram names
the backend; the output counts where each went.
"""
import json
import os
import random
import socket
import sys


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def serve(ident, addr, port, ready):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.bind((addr, int(port)))
    open(ready, "w").close()
    while True:
        data, peer = s.recvfrom(4096)
        # long header: tag after first octet, version, dcid; short: at 32
        tag = data[32:48] if len(data) >= 48 else b""
        s.sendto(ident.encode() + b" " + tag, peer)


def ask(src, vip, port, payload, tag):
    """Send from src on a fresh port; the backend that answers, or None."""
    s = socket.socket(family(src), socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.settimeout(1.0)
    for _ in range(3):
        s.sendto(payload, (vip, port))
        try:
            data, _ = s.recvfrom(4096)
        except socket.timeout:
            continue
        ident, _, got = data.partition(b" ")
        if got == tag:
            s.close()
            return ident.decode()
    s.close()
    return None


def short_header(cr, sid, nonce_len, tag):
    cid = bytes([cr << 5 | (len(sid) + nonce_len)]) + sid + os.urandom(nonce_len)
    head = bytes([0x41]) + cid
    return head + b"\0" * (32 - len(head)) + tag


def initial(tag):
    dcid = os.urandom(8)
    head = bytes([0xc3]) + (1).to_bytes(4, "big") + bytes([8]) + dcid + bytes([0])
    return head + b"\0" * (32 - len(head)) + tag


def run(vip, port, plan):
    port = int(port)
    sids = {k: bytes.fromhex(v) for k, v in plan["sid"].items()}
    sid_len = len(next(iter(sids.values())))
    out = {"initials": 0, "initial_lost": 0, "moved": 0, "moved_lost": 0,
           "misrouted": 0, "unknown": 0, "unknown_lost": 0, "per_backend": {}}
    for c in range(plan["conns"]):
        tag = os.urandom(16)
        src = random.choice(plan["src_initial"])
        be = ask(src, vip, port, initial(tag), tag)
        out["initials"] += 1
        if be is None:
            out["initial_lost"] += 1
            continue
        out["per_backend"][be] = out["per_backend"].get(be, 0) + 1
        for src in plan["src_moved"]:
            for m in range(plan["moves"]):
                tag = os.urandom(16)
                got = ask(src, vip, port,
                          short_header(plan["cr"], sids[be],
                                       plan["nonce_len"], tag), tag)
                out["moved"] += 1
                if got is None:
                    out["moved_lost"] += 1
                elif got != be:
                    out["misrouted"] += 1
    known = set(sids.values())
    for u in range(plan["unknown"]):
        sid = os.urandom(sid_len)
        while sid in known:
            sid = os.urandom(sid_len)
        tag = os.urandom(16)
        got = ask(random.choice(plan["src_moved"]), vip, port,
                  short_header(plan["cr"], sid, plan["nonce_len"], tag), tag)
        out["unknown"] += 1
        if got is None:
            out["unknown_lost"] += 1
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(*sys.argv[2:6])
    else:
        run(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
