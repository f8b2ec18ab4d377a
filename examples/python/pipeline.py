#!/usr/bin/env python3
"""An autotuning pipeline in Python: tune a workload, keep the plan, then
serve shapes the plan was never tuned for through its dispatch.

    python3 pipeline.py [WORKLOAD] [--out DIR] [--measure K] [--shapes N]
                        [--samples S] [--sample-ms MS] [--seed N]
                        [--profile P | --default-profile]

1. ``lanemap.tune``: per shape bucket of the workload (default: the
   transformer block of solver/examples/transformer.json), compile the
   model's top K variants and its near ties, verify each against the FP64
   oracle, time them interleaved, and solve the plan on the measured
   costs.  Measurements go to OUT/records.jsonl, so a second run resumes.
2. Write the plan to OUT/plan.json.
3. Draw N random shapes per kernel (R log-uniform between the kernel's
   smallest and largest bucket, C from its buckets), run each through the
   plan's dispatch, check every output against the oracle, and print the
   time per shape with the variant that ran and how the shape matched a
   bucket.

Exit 0 when every shape checked out, 1 when one did not, 2 for bad input
(the library's message is printed).  Needs the lanemap package
(``pip install ./python``, docs/python.md).
"""
import argparse
import math
import os
import sys
import time

import numpy as np

import lanemap

HERE = os.path.dirname(os.path.abspath(__file__))
TRANSFORMER = os.path.join(HERE, "..", "..", "solver", "examples",
                           "transformer.json")
MAX_ELEMENTS = 1 << 22  # keep each random shape's buffers small


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", nargs="?", default=TRANSFORMER)
    ap.add_argument("--out", default="pipeline-out")
    ap.add_argument("--measure", type=int, default=3,
                    help="the model's top K per bucket (default 3)")
    ap.add_argument("--shapes", type=int, default=4,
                    help="random shapes per kernel (default 4)")
    ap.add_argument("--samples", type=int, help="timing rounds per bucket")
    ap.add_argument("--sample-ms", type=float, help="ms per sample")
    ap.add_argument("--seed", type=int, default=1)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--profile", help="a profile file (one ISA target)")
    g.add_argument("--default-profile", action="store_true",
                   help="the uncalibrated named defaults")
    return ap.parse_args(argv)


def random_shapes(kernel, rng, n):
    """n shapes between the kernel's buckets: R log-uniform over its range
    at one of its C values, capped so no buffer gets large."""
    cs = sorted({b["C"] for b in kernel["buckets"]})
    rs = [b["R"] for b in kernel["buckets"]]
    out = []
    for _ in range(n):
        C = int(rng.choice(cs))
        hi = max(1, min(max(rs), MAX_ELEMENTS // C))
        lo = min(min(rs), hi)
        R = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
        out.append((max(R, 1), C))
    return out


def time_launch(bound, reps):
    """Median over 5 rounds of the time per launch of a bound launch (the
    arrays checked and packed once, as a serving loop would)."""
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            bound()
        rounds.append((time.perf_counter() - t0) / reps)
    return sorted(rounds)[len(rounds) // 2]


def main(argv):
    args = parse_args(argv)
    workload = lanemap.Workload.load(args.workload)
    profiles = "default" if args.default_profile else args.profile
    os.makedirs(args.out, exist_ok=True)

    result = lanemap.tune(workload, measure=args.measure, profiles=profiles,
                          records=os.path.join(args.out, "records.jsonl"),
                          samples=args.samples, sample_ms=args.sample_ms)
    s = result.stats
    print("tune: %d buckets (%d measured, %d resumed), %d variants timed, "
          "%d failed, %.1f s" % (s["buckets"], s["measured_buckets"],
                                 s["resumed_buckets"], s["measured"],
                                 s["failed"], s["total_s"]))
    plan_path = os.path.join(args.out, "plan.json")
    result.plan.save(plan_path)
    print("plan: %s (%s)" % (plan_path, result.plan))

    dispatch = lanemap.Plan.load(plan_path).dispatch()
    print("dispatch: %d kernels compiled in %.0f ms" % (
        len(dispatch.kernel_names), dispatch.compile_ms()))
    rng = np.random.default_rng(args.seed)
    failed = 0
    for kernel in lanemap.Plan.load(plan_path).kernels:
        name = kernel["name"]
        k = dispatch.kernel(name)
        for R, C in random_shapes(kernel, rng, args.shapes):
            shape = (R, C, kernel["extra"]) if kernel["extra"] else (R, C)
            inputs = k.inputs(shape, seed=int(rng.integers(1 << 30)))
            bound = dispatch.bind(name, **inputs)
            out = bound()
            check = lanemap.check_outputs(k, inputs, out)
            ran = bound.info
            seconds = time_launch(bound, max(1, min(200, int(1e6 // (R * C)))))
            ok = check["mismatches"] == 0
            failed += not ok
            print("%-16s %7d x %-6d %10.2f us  %-8s %s%s" % (
                name, R, C, seconds * 1e6, ran["match"], ran["variant"],
                "" if ok else "  MISMATCH (%d elements)" %
                check["mismatches"]))
    print("%s: %d shape(s) failed the oracle check" % (
        "FAILED" if failed else "ok", failed))
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except lanemap.Error as e:
        print("pipeline: %s" % e, file=sys.stderr)
        sys.exit(e.status)
