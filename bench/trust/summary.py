#!/usr/bin/env python3
"""Summarise bench/trust/run.sh's runs: DIR/quiet-N and DIR/loaded-N.

Reads each run's report (the per-target report.md: the plan's geomean
regret, the winner's-curse bias and the per-case table with each case's
verdict, plan pick and plan regret), exit status, last line, cache folder
and load averages, and prints a Markdown summary of the measurement-trust
targets."""
import glob
import math
import os
import re
import sys


def target_dir(run):
    reports = sorted(glob.glob(os.path.join(run, "*", "report.md")))
    return os.path.dirname(reports[0]) if reports else None


def load1(path):
    try:
        text = open(path).read()
    except OSError:
        return float("nan")
    m = re.search(r"load average: ([0-9.]+)", text)
    return float(m.group(1)) if m else float("nan")


def lines_of(run, name):
    path = os.path.join(run, name)
    return [l for l in open(path).read().splitlines() if l.strip()] if os.path.exists(path) else []


def last_line(run):
    """The verdict line of stdout when the run got that far, else the
    error that stopped it."""
    out, err = lines_of(run, "stdout"), lines_of(run, "stderr")
    if out and re.match(r"(quiet|noisy):", out[-1]):
        return out[-1]
    return (err or out or [""])[-1]


def pct(s):
    m = re.match(r"\s*(-?[0-9.]+)%", s)
    return float(m.group(1)) / 100 if m else None


def parse_run(run):
    r = {"dir": run, "exit": int(open(os.path.join(run, "exit")).read()),
         "last": last_line(run), "load": (load1(os.path.join(run, "uptime.before")),
                                          load1(os.path.join(run, "uptime.after"))),
         "cache": open(os.path.join(run, "cache.after")).read().split()}
    r["cached"] = [f for f in r["cache"] if f.endswith(".json") and not f.endswith(".noisy.json")]
    r["refused"] = [f for f in r["cache"] if f.endswith(".noisy.json")]
    t = target_dir(run)
    r["cases"] = {}
    r["geomean"] = r["bias"] = None
    if not t:
        return r
    md = open(os.path.join(t, "report.md")).read()
    m = re.search(r"^\| geomean regret <= 3% \| ([^|]+)\|", md, re.M)
    r["geomean"] = pct(m.group(1)) if m else None
    m = re.search(r"winner's curse: .*?geomean over (\d+) cases: (-?[0-9.]+)%", md)
    r["bias"] = float(m.group(2)) / 100 if m else None
    header = None
    for line in md.splitlines():
        if line.startswith("| case | split |"):
            header = [c.strip() for c in line.strip("|").split("|")]
            continue
        if header and line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) != len(header):
                header = None
                continue
            row = dict(zip(header, cells))
            m = re.search(r"\((\d+)\)", row["verdict"])
            r["cases"][row["case"]] = {
                "attempts": int(m.group(1)) if m else None,
                "verdict": row["verdict"], "plan_variant": row["plan variant"].strip("`"),
                "plan": pct(row["plan"])}
        elif header and not line.strip():
            if r["cases"]:
                header = None
    return r


def geomean(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return math.exp(sum(math.log1p(x) for x in xs) / len(xs)) - 1


def f(x, digits=1):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{digits}f}%"


def runs(out, prefix):
    """The finished runs DIR/PREFIX-N, in order of N."""
    found = []
    for d in glob.glob(os.path.join(out, prefix + "-*")):
        m = re.fullmatch(re.escape(prefix) + r"-(\d+)", os.path.basename(d))
        if m and os.path.exists(os.path.join(d, "exit")):
            found.append((int(m.group(1)), d))
    return [parse_run(d) for _, d in sorted(found)]


def main(out):
    quiet, loaded, empty = runs(out, "quiet"), runs(out, "loaded"), runs(out, "loaded-empty")
    print("# Trust figures\n")
    if quiet:
        print("## Quiet runs (`evaluate --quick --fresh`, each calibrating anew)\n")
        print("| run | exit | load before → after | plan geomean | winner's curse | cases re-measured | still noisy | last line |")
        print("|---|---:|---|---:|---:|---:|---:|---|")
        for r in quiet:
            cs = r["cases"].values()
            again = sum(1 for c in cs if (c["attempts"] or 0) > 1)
            noisy = sum(1 for c in cs if "noisy" in c["verdict"])
            print(f"| {os.path.basename(r['dir'])} | {r['exit']} | {r['load'][0]:.2f} → {r['load'][1]:.2f} | "
                  f"{f(r['geomean'])} | {f(r['bias'])} | {again} | {noisy} | {r['last'][:110]} |")
        g = [r["geomean"] for r in quiet if r["geomean"] is not None]
        if g:
            print(f"\nplan geomean: min {f(min(g))}, max {f(max(g))}, spread {100 * (max(g) - min(g)):.1f} points (target ≤ 1.5)")
        b = [r["bias"] for r in quiet if r["bias"] is not None]
        if b:
            print(f"winner's curse (screening best / confirmed best − 1, geomean over cases): {', '.join(f(x) for x in b)}")
        # pairwise agreement of the plan's picks
        agree = []
        for i in range(len(quiet)):
            for j in range(i + 1, len(quiet)):
                a, c = quiet[i]["cases"], quiet[j]["cases"]
                common = [k for k in a if k in c and a[k]["plan_variant"] not in ("", "-")]
                if common:
                    same = sum(a[k]["plan_variant"] == c[k]["plan_variant"] for k in common)
                    agree.append((i + 1, j + 1, same, len(common)))
        if agree:
            fr = [s / n for _, _, s, n in agree]
            print(f"plan picks agreeing between two runs' calibrations: min {100 * min(fr):.1f}%, "
                  f"mean {100 * sum(fr) / len(fr):.1f}%, max {100 * max(fr):.1f}% over {len(agree)} pairs "
                  f"(target ≥ 98%)")
            for i, j, s, n in agree:
                print(f"  - runs {i} and {j}: {s} of {n}")
    if empty:
        print("\n## Loaded, empty cache (calibration beside a spinning process)\n")
        print("| run | exit | load before → after | profile cached | kept as .noisy.json | last line |")
        print("|---|---:|---|:---:|:---:|---|")
        for r in empty:
            print(f"| {os.path.basename(r['dir'])} | {r['exit']} | {r['load'][0]:.2f} → {r['load'][1]:.2f} | "
                  f"{'**yes**' if r['cached'] else 'no'} | {'yes' if r['refused'] else 'no'} | {r['last'][:110]} |")
    if loaded:
        print("\n## Loaded, priced with quiet-1's cached profile\n")
        ref = quiet[0]["cases"] if quiet else {}
        print("| run | exit | load before → after | cases flagged | plan geomean, all | unflagged cases | their geomean | same cases quiet |")
        print("|---|---:|---|---:|---:|---:|---:|---:|")
        for r in loaded:
            cs = r["cases"]
            flagged = [k for k, c in cs.items() if "noisy" in c["verdict"] or c["plan"] is None]
            calm = [k for k in cs if k not in flagged]
            print(f"| {os.path.basename(r['dir'])} | {r['exit']} | {r['load'][0]:.2f} → {r['load'][1]:.2f} | "
                  f"{len(flagged)} of {len(cs)} | {f(r['geomean'])} | {len(calm)} | "
                  f"{f(geomean([cs[k]['plan'] for k in calm]))} | "
                  f"{f(geomean([ref[k]['plan'] for k in calm if k in ref]))} |")
        for r in loaded:
            print(f"- {os.path.basename(r['dir'])}: {r['last'][:200]}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/bench-trust")
