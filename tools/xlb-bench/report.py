#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# The report of the benchmark suite (tools/xlb-bench/suite.sh): from the -j
# records of each part in OUT/raw, writes OUT/results.json, OUT/results.md,
# OUT/report.txt and the PNG plots, and prints the report.
#
#   report.py OUT SPREAD_WARN QUICK
#
# SPREAD_WARN: a figure whose (max - min) / value exceeds it gets a warning;
# QUICK: non-empty in the suite's smoke mode.  Exit status 1 when a part
# failed.
import datetime, json, math, os, platform, re, shutil, subprocess, sys

out, spread_warn, quick = sys.argv[1], float(sys.argv[2]), bool(sys.argv[3])
raw = os.path.join(out, "raw")


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def machine():
    cpu = re.search(r"^model name\s*:\s*(.*)$", read("/proc/cpuinfo"), re.M)
    mem = re.search(r"^MemTotal:\s*(\d+) kB", read("/proc/meminfo"), re.M)
    virt = []
    if shutil.which("systemd-detect-virt"):
        for kind in ("--vm", "--container"):
            v = subprocess.run(["systemd-detect-virt", kind],
                               capture_output=True, text=True).stdout.strip()
            if v and v != "none":
                virt.append(f"{v} {kind[2:]}")
    if not virt and " hypervisor" in read("/proc/cpuinfo"):
        virt.append("hypervisor")
    virt = ", ".join(virt) or "none"
    commit = subprocess.run(["git", "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip()
    return {
        "cpu_model": cpu.group(1).strip() if cpu else platform.processor(),
        "cores": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "memory_bytes": int(mem.group(1)) * 1024 if mem else None,
        "virtualization": virt,
        "loadavg_start": read(os.path.join(raw, "loadavg.start")).strip(),
        "loadavg_end": read(os.path.join(raw, "loadavg.end")).strip(),
        "commit": commit or None,
    }


# one record per figure, whatever part it came from
def normalise(r, part):
    if "value" in r and "name" in r and "unit" in r:
        fig = {
            "name": r["name"], "value": r["value"], "unit": r["unit"],
            "baseline": r.get("baseline"), "ratio": r.get("ratio"),
            "parameters": r.get("params", {}),
            "statistic": r.get("statistic", "median"),
            "min": r.get("min", r["value"]), "max": r.get("max", r["value"]),
            "runs": r.get("runs", 1),
        }
        if r.get("baseline_is"):
            fig["baseline_is"] = r["baseline_is"]
    elif r.get("bench") == "control":
        fig = {
            "name": "control." + r["name"], "value": r["median"],
            "unit": r["unit"], "baseline": None, "ratio": None,
            "parameters": {"what": r.get("params", ""),
                           "goal_ms": r.get("goal")},
            "statistic": "median", "min": r["min"], "max": r["max"],
            "runs": r["runs"],
        }
    else:
        return None
    fig["part"] = part
    # the goal an issue set for the figure: on its value, or (the data
    # path's, pkt) on its ratio to the baseline
    fig["goal"] = None
    pr = fig["parameters"]
    if r.get("goal") is not None:
        fig["goal"] = {"value": r["goal"], "on": "value",
                       "what": r.get("goal_is") or ""}
    elif pr.get("target_ratio") is not None:
        fig["goal"] = {"value": pr["target_ratio"], "on": "ratio",
                       "what": pr.get("target_what", "")}
        # a packet that reads a line no cache holds: the XDP_TX-only
        # program plus one miss to memory, which no build goes under
        if pr.get("miss_floor_ratio") is not None:
            fig["goal"]["floor"] = pr["miss_floor_ratio"]
    return fig


figures, unparsed, parts = [], [], []
for line in read(os.path.join(raw, "parts")).splitlines():
    name, status, secs, *note = line.split(" ")
    parts.append({"name": name, "status": status,
                  "seconds": round(float(secs or 0), 1),
                  "note": " ".join(note)})
for p in parts:
    if p["status"] not in ("ok", "failed"):
        continue
    for line in read(os.path.join(raw, p["name"] + ".jsonl")).splitlines():
        if not line.strip():
            continue
        try:
            fig = normalise(json.loads(line), p["name"])
        except (ValueError, KeyError):
            fig = None
        if fig is None:
            unparsed.append({"part": p["name"], "line": line})
        else:
            figures.append(fig)

for f in figures:
    v = f["value"]
    f["spread"] = (round((f["max"] - f["min"]) / v, 4)
                   if f["runs"] > 1 and v else 0.0)
    f["wide_spread"] = f["spread"] > spread_warn

byname = {f["name"]: f for f in figures}

# derived: change -> live against M = Maglev build (N=100) + publish
for m in (4093, 65537, 1048573):
    b, p = byname.get(f"tables.maglev.M{m}.N100"), byname.get(f"publish.M{m}")
    if b and p:
        f = {"name": f"live.M{m}", "value": round(b["value"] + p["value"], 1),
             "unit": "us", "baseline": None, "ratio": None,
             "parameters": {"M": m, "N": 100, "algo": "maglev",
                            "what": "table build + publish (sum of the "
                                    "two medians): the data-path share of a "
                                    "change going live"},
             "statistic": "sum of medians", "min": b["min"] + p["min"],
             "max": b["max"] + p["max"], "runs": min(b["runs"], p["runs"]),
             "part": "derived", "derived": True}
        f["spread"] = round((f["max"] - f["min"]) / f["value"], 4)
        f["wide_spread"] = f["spread"] > spread_warn
        figures.append(f)
        byname[f["name"]] = f

mach = machine()
results = {
    "suite": "xlb make bench",
    "format": 1,
    "date": datetime.datetime.now(datetime.timezone.utc)
    .isoformat(timespec="seconds"),
    "quick": quick,
    "machine": mach,
    "spread_warn": spread_warn,
    "parts": parts,
    "figures": figures,
}
if unparsed:
    results["unparsed"] = unparsed
with open(os.path.join(out, "results.json"), "w") as fh:
    json.dump(results, fh, indent=1)
    fh.write("\n")


# --- the report ---
def human(v, unit):
    if v is None:
        return "-"
    if unit == "us" and abs(v) >= 1000:
        return f"{v / 1000:.2f} ms"
    if unit == "B":
        for u, d in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if abs(v) >= d:
                return f"{v / d:.2f} {u}"
        return f"{v:.1f} B"
    if unit in ("insns", "packets"):
        return f"{v:.0f} {unit}"
    if unit == "ms" and abs(v) < 10:
        return f"{v:.3f} ms"
    return f"{v:.1f} {unit}"


def rng(f):
    if f["runs"] <= 1:
        return ""
    return f"{human(f['min'], f['unit'])} .. {human(f['max'], f['unit'])}"


sections = [
    ("Verifier: the data path program", "verifier."),
    ("This machine's memory: one miss to memory, one TLB miss", "memlat."),
    ("Per packet, BPF_PROG_TEST_RUN (baseline: XDP_TX-only program)", "pkt."),
    ("Per packet, connection table of 1000 flows", "pkt_ct1000."),
    ("Per packet, every CPU at once (baseline: XDP_TX-only program, the"
     " same way)", "pkt_mq."),
    ("Per packet against the number of VIPs", "pkt_vips."),
    ("Per packet against connection-table occupancy", "pkt_ct."),
    ("Forwarding rate through a veth pair", "path."),
    ("Table build (one core)", "tables."),
    ("Table publish on a loaded data path (baseline: the switch alone)",
     "publish."),
    ("Change -> live: build + publish (derived)", "live."),
    ("Control plane (xlbd, through its socket)", "control."),
    ("Cluster: three LB hosts behind a router (BGP + BFD, etcd)", "cluster."),
    ("Memory, as the kernel reports the maps", "memory."),
]
lines = []
w = lines.append
w("xlb benchmark suite" + (" -- QUICK smoke mode, numbers mean nothing"
                           if quick else ""))
mem = mach["memory_bytes"]
w(f"machine: {mach['cpu_model']}, {mach['cores']} cores "
  f"({mach['cpus_usable']} usable), kernel {mach['kernel']} {mach['arch']}, "
  f"{mem / (1 << 30):.1f} GiB, virtualization {mach['virtualization']}"
  if mem else f"machine: {mach['cpu_model']}, kernel {mach['kernel']}")
w(f"load average at start {mach['loadavg_start']}, at end "
  f"{mach['loadavg_end']}; commit {mach['commit']}; {results['date']}")
for title, prefix in sections:
    figs = [f for f in figures if f["name"].startswith(prefix)]
    if prefix == "path." and not figs:
        part = next((p for p in parts if p["name"] == "path"), None)
        w("")
        w(f"== {title}")
        w("   not measured: " + (part["note"] if part else "no part ran"))
        continue
    if not figs:
        continue
    w("")
    w(f"== {title}")
    w(f"   {'figure':<34} {'value':>13} {'baseline':>13} {'ratio':>17}  "
      f"{'min .. max':<26}")
    for f in figs:
        ratio = f"{f['ratio']:.2f}" if f.get("ratio") is not None else "-"
        pr = f["parameters"]
        if "ratio_min" in pr:
            ratio += f" ({pr['ratio_min']:.2f}-{pr['ratio_max']:.2f})"
        if "together_over_alone" in pr:
            ratio += (f" (alone {pr['alone_ratio']:.2f}; together/alone "
                      f"{pr['together_over_alone']:.3f})")
        mark = "!" if f["wide_spread"] else " "
        w(f" {mark} {f['name']:<34} {human(f['value'], f['unit']):>13} "
          f"{human(f['baseline'], f['unit']):>13} {ratio:>17}  "
          f"{rng(f)}".rstrip())
        if f["name"].startswith("control."):
            w(f"     {f['parameters']['what']}")


def goal_rows():
    """(figure, measured, goal, measured / goal, verdict, what) of each
    figure with a goal: a figure at most its goal meets it"""
    rows = []
    for f in figures:
        g = f.get("goal")
        if not g:
            continue
        if g["on"] == "ratio":
            got = f.get("ratio")
            shown, want = f"{got:.2f} x" if got is not None else "-", \
                f"{g['value']:.2f} x"
        else:
            got = f["value"]
            shown, want = human(got, f["unit"]), human(g["value"], f["unit"])
        if got is None:
            rows.append((f["name"], shown, want, "-", "not measured",
                         g["what"]))
            continue
        q = got / g["value"]
        what = g["what"]
        if g.get("floor") is not None:
            fl = g["floor"]
            what += (f"; one miss to memory alone: {fl:.2f} x, "
                     + ("above the goal" if fl > g["value"] else
                        f"{g['value'] - fl:.2f} x under the goal"))
        rows.append((f["name"], shown, want, f"{q:.2f}",
                     "met" if q <= 1 else f"over by {q - 1:.0%}", what))
    return rows


goals = goal_rows()
if goals:
    w("")
    w("== Goals: each figure against the goal its issue set (ratio goals:"
      " to the baseline)")
    w(f"   {'figure':<34} {'measured':>13} {'goal':>13} {'of goal':>8}  "
      "verdict")
    for name, shown, want, q, verdict, what in goals:
        w(f"   {name:<34} {shown:>13} {want:>13} {q:>8}  {verdict}"
          + (f" ({what})" if what else ""))
    met = sum(1 for g in goals if g[4] == "met")
    w(f"   {met} of {len(goals)} goals met in this run")
bad = [p for p in parts if p["status"] == "failed"]
skipped = [p for p in parts if p["status"] in ("skipped", "absent")]
wide = [f["name"] for f in figures if f["wide_spread"]]
w("")
if wide:
    w(f"WARNING: {len(wide)} figure(s) marked ! have a wide min-max spread "
      f"(more than {spread_warn:.0%} of the value): the machine was busy "
      f"(load {mach['loadavg_start']} -> {mach['loadavg_end']}) or the "
      "figure varies; read the ratio, which is measured in the same run, "
      "or run again: " + ", ".join(wide))
for p in skipped:
    w(f"not run: {p['name']}: {p['note']}")
for p in bad:
    w(f"FAILED: {p['name']}: {p['note']} (see {raw}/{p['name']}.err)")
if unparsed:
    w(f"{len(unparsed)} record(s) not understood; kept in results.json "
      "under 'unparsed'")
w(f"results: {out}/results.json ({len(figures)} figures), "
  f"{out}/results.md (for BENCHMARKS.md); plots: {out}/*.png")
report = "\n".join(lines) + "\n"

# the same as a Markdown table, for BENCHMARKS.md
md = [f"Machine: {mach['cpu_model']}, {mach['cores']} cores, kernel "
      f"{mach['kernel']}, virtualization {mach['virtualization']}; load "
      f"average {mach['loadavg_start']} at start, {mach['loadavg_end']} at "
      f"end; commit {mach['commit']}; {results['date']}"
      + (" (QUICK smoke mode: numbers mean nothing)" if quick else "") + ".",
      "",
      "| figure | value | baseline | ratio (range over rounds) | min .. max |",
      "|---|---:|---:|---:|---|"]
for title, prefix in sections:
    for f in (f for f in figures if f["name"].startswith(prefix)):
        ratio = f"{f['ratio']:.2f}" if f.get("ratio") is not None else ""
        pr = f["parameters"]
        if "ratio_min" in pr:
            ratio += f" ({pr['ratio_min']:.2f}-{pr['ratio_max']:.2f})"
        if "together_over_alone" in pr:
            ratio += (f" (alone {pr['alone_ratio']:.2f}; together/alone "
                      f"{pr['together_over_alone']:.3f})")
        base = human(f["baseline"], f["unit"]) if f["baseline"] else ""
        mark = " (!)" if f["wide_spread"] else ""
        md.append(f"| `{f['name']}`{mark} | {human(f['value'], f['unit'])} | "
                  f"{base} | {ratio} | {rng(f)} |")
for p in skipped:
    md.append(f"| {p['name']}: not run | {p['note']} | | | |")
if goals:
    md += ["", "| figure with a goal | measured | goal | of goal | verdict |",
           "|---|---:|---:|---:|---|"]
    for name, shown, want, q, verdict, what in goals:
        md.append(f"| `{name}` | {shown} | {want} | {q} | {verdict}"
                  + (f" ({what})" if what else "") + " |")
md.append("")
md.append("(!): min-max spread wider than "
          f"{spread_warn:.0%} of the value.")
with open(os.path.join(out, "results.md"), "w") as fh:
    fh.write("\n".join(md) + "\n")
with open(os.path.join(out, "report.txt"), "w") as fh:
    fh.write(report)
sys.stdout.write(report)


# --- plots ---
def series(prefix, key):
    """{series: [(x, value, min, max)]} of figures named prefix.SERIES.X"""
    s = {}
    for f in figures:
        if not f["name"].startswith(prefix):
            continue
        name = f["name"][len(prefix):].split(".")[0]
        x = key(f)
        if x is not None:
            s.setdefault(name, []).append((x, f["value"], f["min"], f["max"],
                                           f.get("baseline")))
    return {k: sorted(v) for k, v in s.items()}


def plot(png, title, xlabel, ylabel, blocks, logx=False, logy=False,
         extra=""):
    """blocks: [(title, [(x, y, ymin, ymax)], "using ... with ...")]"""
    blocks = [b for b in blocks if b[1]]
    if not blocks:
        return
    base = os.path.join(out, png[:-4])
    with open(base + ".dat", "w") as fh:
        for _, pts, _ in blocks:
            for p in pts:
                fh.write(" ".join(str(v) for v in p[:4]) + "\n")
            fh.write("\n\n")
    cmds = [f"set terminal {term} size 900,560",
            f"set output '{os.path.join(out, png)}'",
            "set termoption noenhanced",
            f"set title \"{title}\"", f"set xlabel \"{xlabel}\"",
            f"set ylabel \"{ylabel}\"", "set key left top", "set grid",
            "set yrange [0:*]" if not logy else "set logscale y"]
    if logx:
        cmds += ["set logscale x", "set autoscale xfix",
                 "set offsets graph 0.05, graph 0.05, 0, 0"]
    cmds.append(extra)
    plots = []
    for i, (t, _, style) in enumerate(blocks):
        plots.append(f"'{base}.dat' index {i} {style} title \"{t}\"")
    cmds.append("plot " + ", ".join(plots))
    with open(base + ".gp", "w") as fh:
        fh.write("\n".join(cmds) + "\n")
    r = subprocess.run(["gnuplot", base + ".gp"], capture_output=True,
                       text=True)
    if r.returncode:
        print(f"bench: gnuplot failed on {png}: {r.stderr.strip()}",
              file=sys.stderr)


if not shutil.which("gnuplot"):
    print("bench: gnuplot not found (Debian: gnuplot-nox); no plots",
          file=sys.stderr)
    sys.exit(1 if bad else 0)
terms = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True,
                       text=True)
term = "pngcairo" if "pngcairo" in terms.stdout + terms.stderr else "png"
LP = "using 1:2:3:4 with yerrorlines"
DASHED = "using 1:2 with lines dt 2"

# per path: bars against the baseline
pk = [f for f in figures if f["name"].startswith("pkt.")]
if pk:
    base = pk[0]["baseline"] or 0
    pts = [(i, f["value"], f["min"], f["max"]) for i, f in enumerate(pk)]
    xt = ", ".join(f"\"{f['name'][4:]}\" {i}" for i, f in enumerate(pk))
    plot("pkt_paths.png", "ns per packet by path (BPF_PROG_TEST_RUN)",
         "", "ns per packet",
         [("data path (median of rounds)", pts,
           "using 1:2 with boxes fill solid 0.5"),
          ("min..max of rounds", pts, "using 1:2:3:4 with yerrorbars"),
          (f"XDP_TX-only baseline, {base:.0f} ns",
           [(-0.5, base), (len(pk) - 0.5, base)], DASHED)],
         extra=f"set xtics ({xt}) rotate by -30\nset boxwidth 0.6\n"
               f"set key right top\nset xrange [-0.6:{len(pk) - 0.4}]")

sv = series("pkt_vips.", lambda f: f["parameters"].get("vips"))
bl = [(x, b, b, b) for x, _, _, _, b in next(iter(sv.values()), [])]
plot("pkt_vs_vips.png", "ns per packet against VIPs configured",
     "VIPs", "ns per packet",
     [(k, [p[:4] for p in v], LP) for k, v in sv.items()] +
     [("XDP_TX-only baseline", bl, DASHED)], logx=True)

sc = series("pkt_ct.", lambda f: round(100 * f["parameters"]["occupancy"], 2)
            if "occupancy" in f["parameters"] else None)
bl = [(x, b, b, b) for x, _, _, _, b in sc.get("ct_hit", [])]
plot("pkt_vs_ct_fill.png",
     "ns per packet against connection-table occupancy",
     "occupancy of xlb_conntrack (% of max entries)", "ns per packet",
     [(k, [p[:4] for p in v], LP) for k, v in sc.items()] +
     [("XDP_TX-only baseline", bl, DASHED)])


def tables_by(var, other, values):
    """build time against var (N or M), one line per algo and other value"""
    out_ = []
    for algo in ("maglev", "ring"):
        for ov in values:
            pts = [(f["parameters"][var], f["value"] / 1000, f["min"] / 1000,
                    f["max"] / 1000) for f in figures
                   if f["name"].startswith("tables.")
                   and f["parameters"].get("algo") == algo
                   and f["parameters"].get(other) == ov]
            out_.append((f"{algo}, {other}={ov}", sorted(pts), LP))
    return out_


plot("tables_vs_n.png", "table build time against backends N",
     "backends N", "ms (median, min..max)",
     tables_by("N", "M", (4093, 65537, 1048573)), logx=True, logy=True)
plot("tables_vs_m.png", "table build time against table size M",
     "table size M (slots)", "ms (median, min..max)",
     tables_by("M", "N", (10, 100, 1000)), logx=True, logy=True)

live = []
for label, prefix in (("build (Maglev, N=100)", "tables.maglev.M"),
                      ("publish", "publish.M"),
                      ("build + publish", "live.M")):
    pts = []
    for f in figures:
        m = re.match(re.escape(prefix) + r"(\d+)(\.N100)?$", f["name"])
        if m and (prefix != "tables.maglev.M" or m.group(2)):
            pts.append((int(m.group(1)), f["value"] / 1000, f["min"] / 1000,
                        f["max"] / 1000))
    live.append((label, sorted(pts), LP))
sw = [(int(f["parameters"]["M"]), f["baseline"] / 1000, f["baseline"] / 1000,
       f["baseline"] / 1000) for f in figures
      if re.match(r"publish\.M\d+$", f["name"]) and f.get("baseline")]
live.append(("switch alone (RCU grace period)", sorted(sw), DASHED))
c = byname.get("control.change_to_live")
if c:
    live.append(("xlbd change -> live, measured (M=65537 only)",
                 [(65537, c["value"], c["min"], c["max"])],
                 "using 1:2:3:4 with yerrorbars pt 7 ps 1.5"))
plot("live_vs_m.png", "change -> live against table size M",
     "table size M (slots)", "ms", live, logx=True)
print(f"plots: {' '.join(sorted(p for p in os.listdir(out) if p.endswith('.png')))}")
sys.exit(1 if bad else 0)
