"""Merge the anchor benchmark's results into one report.

Reads DIR/c.json (bench_anchors: the C entries, timed side by side in one
process) and, when present, DIR/peers.json (peers.py: TorchInductor, eager
PyTorch, Halide), and writes
  DIR/anchors.md   the tables: p50 per case and entry, ratios of lanemap's
                   chosen code over each entry, geometric means, roofline
                   share on cases larger than L2, and the targets;
  DIR/anchors.dat  the chart data: each entry's time over hand AVX-512's,
                   from the paired ratios (chosen/hand over chosen/entry);
  DIR/anchors.gp   the gnuplot script that draws DIR/anchors.png.
Standard library only, so it runs without the bench virtual environment.

    python3 report.py DIR [--machine TEXT]
"""

import argparse
import json
import math
import os
import sys

C_ENTRIES = [("lanemap_best", "lanemap best"), ("hand_avx512", "hand AVX-512"),
             ("plain_O3", "plain C -O3"), ("plain_O3_fastmath", "plain C -O3 -ffast-math"),
             ("roofline", "copy roofline")]
PY_ENTRIES = [("torch_inductor", "TorchInductor"), ("torch_eager", "eager PyTorch"),
              ("halide_hand", "Halide (hand)"), ("halide_adams2019", "Halide Adams2019")]


def geomean(v):
    v = [x for x in v if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def py_ratio(chosen, peer):
    """lanemap chosen / a Python peer: the paired ratio measured in the
    peer's process when there is one, else the ratio of p50s."""
    if "chosen_over_paired" in peer:
        return peer["chosen_over_paired"]
    return chosen["p50_ns"] / peer["p50_ns"]


def us(ns):
    return f"{ns / 1e3:.2f}"


def cell(e):
    if e is None:
        return "–"
    if e.get("status") != "ok":
        return "FAIL" if e.get("status") == "fails-oracle" else "error"
    return us(e["p50_ns"])


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--machine", default="")
    ap.add_argument("--load", default="",
                    help="the load averages at the start and end of the run")
    a = ap.parse_args()
    try:
        with open(os.path.join(a.dir, "c.json")) as f:
            c = json.load(f)
    except (OSError, ValueError) as e:
        print(f"report.py: {a.dir}/c.json: {e}", file=sys.stderr)
        return 2
    peers = None
    pp = os.path.join(a.dir, "peers.json")
    if os.path.exists(pp):
        with open(pp) as f:
            peers = json.load(f)
    cases = c["cases"]
    l2 = c.get("l2_bytes") or 2 * 1024 * 1024
    L = []
    kib = lambda k: f"{int(c.get(k) or 0) // 1024} KiB"
    L.append(f"Machine: {a.machine + ', ' if a.machine else ''}LLVM CPU {c.get('cpu', '?')}, "
             f"L1d {kib('l1d_bytes')}, L2 {kib('l2_bytes')}, L3 {kib('l3_bytes')}; "
             f"LLVM {c.get('llvm', '?')}; "
             f"C entries {c['samples']} samples x {c['sample_ms']:.0f} ms per entry, "
             "permuted rounds in one process.")
    if a.load:
        L.append(f"Load average (1, 5, 15 min): {a.load}; a figure taken "
                 "under load is noise.")
    if peers:
        L.append(f"Python peers: torch {peers.get('torch_version', '?')} "
                 f"(CPU capability {peers.get('torch_cpu_capability', '?')}), Halide target "
                 f"`{peers.get('halide_target', '?')}`; {peers['samples']} samples x "
                 f"{peers['sample_ms']:.0f} ms; boundary: {peers['boundary']}. Per-call overhead "
                 f"on a 16-element operator: Inductor {us(peers.get('inductor_overhead_ns', 0))} us, "
                 f"eager {us(peers.get('eager_overhead_ns', 0))} us, Halide realize "
                 f"{us(peers.get('halide_overhead_ns', 0))} us.")
        if "adams2019" in peers:
            L.append(f"Adams2019: {peers['adams2019'].strip()}")
    L.append("")
    # ---- times
    hdr = ["case", "lanemap chosen"] + [n for _, n in C_ENTRIES]
    if peers:
        hdr += [n for _, n in PY_ENTRIES]
    L.append("### p50 per call, µs")
    L.append("")
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "---|" + "---:|" * (len(hdr) - 1))
    for cs in cases:
        e = cs["entries"]
        row = [cs["id"], cell(e.get("lanemap_chosen"))] + [cell(e.get(k)) for k, _ in C_ENTRIES]
        if peers:
            pe = peers["cases"].get(cs["id"], {})
            row += [cell(pe.get(k)) for k, _ in PY_ENTRIES]
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    # ---- ratios
    L.append("### lanemap chosen / entry (< 1: lanemap is faster)")
    L.append("")
    paired = peers and any("chosen_over_paired" in e for pc in peers["cases"].values()
                           for e in pc.values() if isinstance(e, dict))
    L.append("C columns: paired ratios (median over rounds of per-round ratios, one process). "
             + ("Python columns: paired ratios measured in the peer's process, where lanemap's "
                "chosen variant (the same object code) is called through ctypes, alternating "
                "samples with the peer." if paired else
                "Python columns: ratio of p50s measured in separate processes, back to back."))
    L.append("")
    hdr = ["case", "chosen variant"] + [n for _, n in C_ENTRIES]
    if peers:
        hdr += [n for _, n in PY_ENTRIES]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|---|---|" + "---:|" * (len(hdr) - 2))
    cols = {k: [] for k, _ in C_ENTRIES + PY_ENTRIES}
    for cs in cases:
        e = cs["entries"]
        ch = e.get("lanemap_chosen", {})
        row = [cs["id"], f"`{ch.get('variant', '?')}`"]
        for k, _ in C_ENTRIES:
            x = e.get(k)
            if x and x.get("status") == "ok" and ch.get("status") == "ok":
                cols[k].append(x["chosen_over"])
                row.append(f"{x['chosen_over']:.3f}")
            else:
                row.append(cell(x))
        if peers:
            pe = peers["cases"].get(cs["id"], {})
            for k, _ in PY_ENTRIES:
                x = pe.get(k)
                if x and x.get("status") == "ok" and ch.get("status") == "ok":
                    r = py_ratio(ch, x)
                    cols[k].append(r)
                    row.append(f"{r:.3f}")
                else:
                    row.append(cell(x))
        L.append("| " + " | ".join(row) + " |")
    g = ["**geomean**", ""] + [f"**{geomean(cols[k]):.3f}**" for k, _ in C_ENTRIES]
    if peers:
        g += [f"**{geomean(cols[k]):.3f}**" for k, _ in PY_ENTRIES]
    L.append("| " + " | ".join(g) + " |")
    L.append("")
    # ---- roofline share
    L.append(f"### Share of the copy roofline reached by lanemap's chosen code (cases moving more "
             f"than L2 = {l2 // 1024} KiB)")
    L.append("")
    L.append("The pass roofline moves the bytes of the chosen variant's column loops with no "
             "arithmetic: row by row, each input read as many times as its loops read it from "
             "memory (the cost model's count), then the output row written. The relaxed share is "
             "the relaxed chosen variant's.")
    L.append("")
    L.append("| case | MiB moved | roofline µs | pass roofline µs | chosen µs | share (paired) | "
             "share of the pass roofline | relaxed share | GB/s at chosen |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    shares = {}
    for cs in cases:
        e = cs["entries"]
        ch, rf = e.get("lanemap_chosen", {}), e.get("roofline", {})
        ps, rc = e.get("pass_roofline", {}), e.get("lanemap_relaxed_chosen", {})
        if cs["bytes"] <= l2 or ch.get("status") != "ok" or rf.get("status") != "ok":
            continue
        share = 1 / rf["chosen_over"]
        shares[cs["id"]] = share
        pshare = f"{100 / ps['chosen_over']:.0f}%" if ps.get("status") == "ok" else "–"
        rshare = (f"{100 * rf['relaxed_chosen_over'] ** -1:.0f}%"
                  if rc.get("status") == "ok" and "relaxed_chosen_over" in rf else "–")
        L.append(f"| {cs['id']} | {cs['bytes'] / 2**20:.1f} | {us(rf['p50_ns'])} | "
                 f"{us(ps['p50_ns']) if ps.get('status') == 'ok' else '–'} | "
                 f"{us(ch['p50_ns'])} | {100 * share:.0f}% | {pshare} | {rshare} | "
                 f"{cs['bytes'] / ch['p50_ns']:.1f} |")
    L.append("")
    # ---- relaxed floating point
    L.append("### Relaxed floating point (fp=relaxed), against C with -ffast-math")
    L.append("")
    L.append("The relaxed plan picks among the fp=relaxed variants of a kernel that relaxed mode "
             "changes, and among its strict ones otherwise (docs/language.md, Relaxed floating "
             "point). Paired ratios from the same rounds as the strict columns; < 1: lanemap is "
             "faster.")
    L.append("")
    L.append("| case | relaxed chosen variant | relaxed chosen µs | / strict chosen | "
             "/ plain C -O3 -ffast-math | / hand AVX-512 | relaxed best / fast-math |")
    L.append("|---|---|---:|---:|---:|---:|---:|")
    rfast = []
    for cs in cases:
        e = cs["entries"]
        rc, rb = e.get("lanemap_relaxed_chosen", {}), e.get("lanemap_relaxed_best", {})
        fa, ha, ch = e.get("plain_O3_fastmath", {}), e.get("hand_avx512", {}), e.get("lanemap_chosen", {})
        if rc.get("status") != "ok":
            L.append(f"| {cs['id']} | `{rc.get('variant', '?')}` | {cell(rc)} | | | | |")
            continue
        def rr(x):
            return f"{x['relaxed_chosen_over']:.3f}" if x.get("status") == "ok" else cell(x or None)
        if fa.get("status") == "ok":
            rfast.append((cs["id"], fa["relaxed_chosen_over"]))
        best = (f"{fa['relaxed_chosen_over'] / rb['relaxed_chosen_over']:.3f}"
                if fa.get("status") == "ok" and rb.get("status") == "ok" else "")
        L.append(f"| {cs['id']}{'' if cs.get('relaxes', True) else ' (strict: nothing to relax)'} "
                 f"| `{rc.get('variant', '?')}` | {us(rc['p50_ns'])} | {rr(ch)} | {rr(fa)} | "
                 f"{rr(ha)} | {best} |")
    if rfast:
        gm = geomean([r for _, r in rfast])
        worst = max(rfast, key=lambda t: t[1])
        above = [f"{i} {r:.2f}" for i, r in rfast if r > 1.0]
        ok = gm <= 0.90 and worst[1] <= 1.10
        L.append(f"| **geomean** | | | | **{gm:.3f}** | | |")
        L.append("")
        L.append(f"- relaxed chosen / plain C -O3 -ffast-math: geomean {gm:.3f} (target <= 0.90), "
                 f"worst {worst[1]:.3f} on {worst[0]} (target <= 1.10): "
                 f"**{'met' if ok else 'missed'}**; cases above 1.00: {', '.join(above) or 'none'}.")
    L.append("")
    # ---- two threads
    if peers and any("torch_inductor_t2" in pc for pc in peers["cases"].values()):
        L.append("### Two threads: lanemap's plan among 1 and 2 workers against TorchInductor "
                 "with 2 threads")
        L.append("")
        L.append("Inductor compiled with torch.set_num_threads(2); lanemap's plan among 1 and 2 "
                 "workers (as `lanemap solve` makes it: near ties settled) launched on lanemap's shared pool "
                 "through ctypes, paired in the peer's process; < 1: lanemap is faster.")
        L.append("")
        L.append("| case | lanemap plan (t1/t2) | lanemap µs | Inductor 2 threads µs | "
                 "lanemap / Inductor 2 threads |")
        L.append("|---|---|---:|---:|---:|")
        r2 = []
        ov = peers.get("inductor_overhead_ns", 0)
        for cs in cases:
            x = peers["cases"].get(cs["id"], {}).get("torch_inductor_t2")
            if not x:
                continue
            if x.get("status") != "ok":
                L.append(f"| {cs['id']} | `{cs.get('t2', {}).get('variant', '?')}` | | {cell(x)} | |")
                continue
            r = x["chosen_over_paired"]
            if ov < 0.05 * x["p50_ns"]:
                r2.append((cs["id"], r))
            L.append(f"| {cs['id']} | `{x['lanemap_variant']}` | {us(x['lanemap_p50_ns'])} | "
                     f"{us(x['p50_ns'])} | {r:.3f} |")
        if r2:
            L.append(f"| **geomean, cases where Inductor's per-call overhead is under 5%** | | | | "
                     f"**{geomean([r for _, r in r2]):.3f}** |")
        L.append("")
    # ---- targets
    L.append("### Targets")
    L.append("")
    hand = [(cs["id"], cs["entries"]["hand_avx512"]["chosen_over"]) for cs in cases
            if cs["entries"].get("hand_avx512", {}).get("status") == "ok"
            and cs["entries"].get("lanemap_chosen", {}).get("status") == "ok"]
    gm = geomean([r for _, r in hand])
    worst = max(hand, key=lambda t: t[1]) if hand else ("-", float("nan"))
    ok = gm <= 1.0 and worst[1] <= 1.15
    L.append(f"- lanemap chosen / hand AVX-512: geomean {gm:.3f} (target <= 1.00), worst "
             f"{worst[1]:.3f} on {worst[0]} (target <= 1.15): **{'met' if ok else 'missed'}**; "
             f"cases above 1.00: {', '.join(f'{i} {r:.2f}' for i, r in hand if r > 1.0) or 'none'}.")
    plain = [(cs["id"], cs["entries"]["plain_O3"]["chosen_over"]) for cs in cases
             if cs["entries"].get("plain_O3", {}).get("status") == "ok"
             and cs["entries"].get("lanemap_chosen", {}).get("status") == "ok"]
    slow = [f"{i} {r:.2f}" for i, r in plain if r >= 1.0]
    L.append(f"- faster than plain C -O3 on every case: **{'met' if not slow else 'missed'}**"
             f"{' (not faster on: ' + ', '.join(slow) + ')' if slow else ''}; geomean "
             f"{geomean([r for _, r in plain]):.3f}.")
    big = [i for i in shares if i.endswith("1024x4096")]
    miss = [f"{i} {100 * shares[i]:.0f}%" for i in big if shares[i] < 0.8]
    L.append(f"- at least 80% of the copy roofline on the 1024x4096 cases: "
             f"**{'met' if big and not miss else 'missed'}** ("
             + ", ".join(f"{i} {100 * shares[i]:.0f}%" for i in big) + ").")
    if peers:
        ov = peers.get("inductor_overhead_ns", 0)
        large = []
        for cs in cases:
            x = peers["cases"].get(cs["id"], {}).get("torch_inductor")
            ch = cs["entries"].get("lanemap_chosen", {})
            if x and x.get("status") == "ok" and ch.get("status") == "ok" and ov < 0.05 * x["p50_ns"]:
                large.append((cs["id"], py_ratio(ch, x)))
        gl = geomean([r for _, r in large])
        slow = [f"{i} {r:.2f}" for i, r in large if r >= 1.0]
        L.append(f"- against TorchInductor on the cases where its per-call overhead is under 5% "
                 f"of its time ({', '.join(i for i, _ in large)}): geomean {gl:.3f} (target <= "
                 f"1.00), **{'met' if gl <= 1.0 and not slow else 'missed'}**"
                 f"{'; slower on ' + ', '.join(slow) if slow else ''}.")
    L.append("")
    write_atomic(os.path.join(a.dir, "anchors.md"), "\n".join(L))
    # ---- chart: each entry's time over hand AVX-512 (log scale)
    series = [("lanemap_chosen", "lanemap chosen")] + C_ENTRIES
    if peers:
        series += [("torch_inductor", "TorchInductor"), ("halide_hand", "Halide (hand)")]
    D = ["# case " + " ".join(k for k, _ in series)]
    for cs in cases:
        e = cs["entries"]
        h = e.get("hand_avx512", {})
        if h.get("status") != "ok":
            continue
        # entry / hand from paired ratios: (chosen / hand) / (chosen / entry)
        ch = e.get("lanemap_chosen", {})
        vals = []
        for k, _ in series:
            x = e.get(k)
            if k == "lanemap_chosen":
                v = h["chosen_over"] if ch.get("status") == "ok" else None
            elif x is not None:
                v = h["chosen_over"] / x["chosen_over"] if x.get("status") == "ok" else None
            else:
                x = peers["cases"].get(cs["id"], {}).get(k) if peers else None
                ok = x and x.get("status") == "ok" and ch.get("status") == "ok"
                v = h["chosen_over"] / py_ratio(ch, x) if ok else None
            vals.append(f"{v:.4f}" if v else "NaN")
        D.append(cs["id"] + " " + " ".join(vals))
    write_atomic(os.path.join(a.dir, "anchors.dat"), "\n".join(D) + "\n")
    # a series without a single value would stop gnuplot: leave it out
    live = [i for i in range(len(series))
            if any(line.split()[i + 1] != "NaN" for line in D[1:])]
    cols_gp = ", ".join(
        f"'anchors.dat' using {i + 2}{':xtic(1)' if j == 0 else ''} title '{series[i][1]}'"
        for j, i in enumerate(live))
    gp = f"""set terminal pngcairo size 1500,640 font ',10' noenhanced
set output 'anchors.png'
set title 'Time per call relative to the hand AVX-512 kernel (lower is faster; log scale)'
set style data histograms
set style histogram cluster gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 2
set yrange [0.0625:32]
set ytics ('1/16' 0.0625, '1/8' 0.125, '1/4' 0.25, '1/2' 0.5, '1' 1, '2' 2, '4' 4, '8' 8, '16' 16, '32' 32)
set grid ytics
set xtics rotate by -35 left
set key outside right top
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5
plot {cols_gp}
"""
    write_atomic(os.path.join(a.dir, "anchors.gp"), gp)
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    sys.exit(main())
