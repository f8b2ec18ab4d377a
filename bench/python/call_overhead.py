#!/usr/bin/env python3
"""What the Python package adds to a launch: a checked call
(``compiled(**arrays)``: array checks, output allocation, packing) against
a bound one (``compiled.bind(...)()``: checked and packed once), and
against the launch alone as the C timing harness sees it.

    venv/bin/python bench/python/call_overhead.py [KERNEL] [--shape R,C]
                    [--variant V] [--rounds N] [--calls N]

The two Python forms run interleaved, A B A B, in one process: each round
times `calls` calls of each, and the report gives the median time per call
of each form over the rounds and the median of the per-round ratios.  The
load average is printed with it: figures taken under load are noise.
Needs the installed package (docs/python.md, "Install").
"""
import argparse
import os
import statistics
import time

import lanemap

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernel", nargs="?",
                    default=os.path.join(HERE, "..", "..", "kernels",
                                         "rmsnorm.lk"))
    ap.add_argument("--shape", default="1,16")
    ap.add_argument("--variant", help="default: the model's pick, defaults")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args()
    k = lanemap.Kernel.load(a.kernel)
    variant = a.variant or k.predict(a.shape, profile="default")[0]["variant"]
    c = k.compile(variant)
    inputs = k.inputs(a.shape)
    bound = c.bind(**inputs)

    def per_call(fn):
        t0 = time.perf_counter()
        for _ in range(a.calls):
            fn()
        return (time.perf_counter() - t0) / a.calls

    def checked():
        c(**inputs)

    checked()  # warm up both
    bound()
    t_bound, t_checked, ratios = [], [], []
    for _ in range(a.rounds):
        tb = per_call(bound)
        tc = per_call(checked)
        t_bound.append(tb)
        t_checked.append(tc)
        ratios.append(tc / tb)
    print("kernel %s, shape %s, variant %s" % (k.name, a.shape, variant))
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    print("bound    p50 %8.2f us per call" % (1e6 * statistics.median(t_bound)))
    print("checked  p50 %8.2f us per call" %
          (1e6 * statistics.median(t_checked)))
    print("checked / bound: %.1f (median of %d paired rounds)" %
          (statistics.median(ratios), a.rounds))


if __name__ == "__main__":
    main()
