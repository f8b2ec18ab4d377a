#!/usr/bin/env python3
"""Pairwise agreement of the plans bench/trust/agreement.sh wrote
(DIR/plan-I.json, DIR/profile-I.json, I = 1..N): the share of buckets on
which two plans pick the same variant, split by whether the picks run on one
worker or more, and the fitted coefficients that moved the most."""
import json
import statistics
import sys


def picks(path):
    plan = json.load(open(path))
    out = {}
    for k in plan["kernels"]:
        for b in k["buckets"]:
            out[(k["name"], b["R"], b["C"])] = k["variants"][b["variant"]]
    return out


def workers(variant):
    for field in variant.split("/"):
        if field.startswith("t") and field[1:].isdigit():
            return int(field[1:])
    return 1


def main(out, n):
    plans = [picks(f"{out}/plan-{i}.json") for i in range(1, n + 1)]
    shares, by_kind = [], {"t1": [0, 0], "t>1": [0, 0]}
    for i in range(n):
        for j in range(i + 1, n):
            keys = sorted(plans[i])
            same = sum(plans[i][k] == plans[j][k] for k in keys)
            shares.append(same / len(keys))
            for k in keys:
                kind = "t1" if workers(plans[i][k]) == 1 and workers(plans[j][k]) == 1 else "t>1"
                by_kind[kind][0] += plans[i][k] == plans[j][k]
                by_kind[kind][1] += 1
            print(f"  plans {i + 1} and {j + 1}: {same} of {len(keys)}")
    print(f"agreement over {len(shares)} pairs: min {100 * min(shares):.1f}%, "
          f"mean {100 * statistics.mean(shares):.1f}%, max {100 * max(shares):.1f}%")
    for kind, (s, t) in by_kind.items():
        if t:
            print(f"  buckets where both picks are {kind}: {100 * s / t:.1f}% agree ({t} pair-buckets)")
    profs = [json.load(open(f"{out}/profile-{i}.json")) for i in range(1, n + 1)]
    rows = []
    for j, term in enumerate(profs[0]["terms"]):
        v = [p["terms"][j]["coef"] for p in profs]
        m = statistics.mean(v)
        rows.append((statistics.pstdev(v) / m if m else 0.0, term["name"], v))
    print("coefficients that moved the most (coefficient of variation):")
    for cv, name, v in sorted(rows, reverse=True)[:8]:
        print(f"  {name:14s} cv {cv:.2f}: " + " ".join(f"{x:.3g}" for x in v))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
