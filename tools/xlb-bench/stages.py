#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# The arithmetic of tools/xlb-bench/stages.sh: from its runs file (lines
# "N RECORD", RECORD an `xlb-bench -j pkt` figure, N 0 for the plain run
# of a path and 1.. for the run against the program stopped after stage
# N) the share of the whole program's time up to the end of each stage
# (1 / the ratio), the stage's own share and that share in ns of the
# whole.  Usage: stages.py RUNS JSON(0|1) NAME... (the stages' names).
import json, sys

path_file, as_json, names = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
runs = {}
for k, line in enumerate(open(path_file), 1):
    try:
        n, rec = line.split(" ", 1)
        r = json.loads(rec)
        runs.setdefault(r["params"]["path"], {})[int(n)] = r
        float(r["value"]), 1.0 / float(r["ratio"])
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        print("stages.py: %s line %d: not a stage and an xlb-bench pkt "
              "figure with a ratio (%s)" % (path_file, k, e), file=sys.stderr)
        sys.exit(1)
bad = 0
if not as_json:
    print("share: of the whole program's time (test run included), up to the "
          "end of the stage; stage: its own share, and in ns")
    print("%-17s %-1s %-26s %6s %6s %8s" %
          ("path", "#", "stage", "share", "stage", "ns"))
for p, st in runs.items():
    if 0 not in st or any(n not in st for n in range(1, len(names) + 1)):
        print("stages.sh: %s: a run printed no figure" % p, file=sys.stderr)
        bad = 1
        continue
    whole = st[0]["value"]
    prev = 1.0 / st[0]["ratio"]
    rows = [(0, "test run (XDP_TX only)", prev, prev)]
    for n in range(1, len(names) + 1):
        cum = 1.0 / st[n]["ratio"]
        rows.append((n, names[n - 1], cum, cum - prev))
        prev = cum
    rows.append((len(names) + 1, "rest (flow cache fill, return)", 1.0,
                 1.0 - prev))
    for n, name, cum, own in rows:
        if as_json:
            print(json.dumps({
                "bench": "stages", "name": "stages.%s.%d" % (p, n),
                "value": round(own * whole, 1), "unit": "ns",
                "statistic": "median", "runs": st[0]["runs"],
                "baseline": None, "ratio": None,
                "params": {"path": p, "stage": name, "share": round(cum, 3),
                           "stage_share": round(own, 3),
                           "whole_ns": round(whole, 1)}}))
        else:
            print("%-17s %d %-26s %6.3f %6.3f %8.1f" %
                  (p, n, name[:26], cum, own, own * whole))
sys.exit(bad)
