#!/usr/bin/env python3
"""The coefficients of lanemap's inline f32 erf (backend/vmath_ir.c).

erf is odd, so on [-C, C] it is written x * P(x^2) / Q(x^2) with Q(0) = 1;
past C = 3.92 erf rounds to 1 in f32 (erfc(3.92) = 2.9e-8 is below half an
ULP of 1), and the routine clamps its argument there.  This script fits P
(degree M in t = x^2) and Q (degree N) to erf(x) / x over [0, C], minimising
the largest relative error:

  1. Sanathanan-Koerner: the linear least-squares problem
     x P(t) - erf(x) Q(t) = 0, weighted by 1 / (erf(x) Q_prev(t)), solved
     again with each new Q until the weights settle;
  2. Lawson: each point's weight then grows with its error, which moves the
     least-squares fit toward the minimax one.

It prints the largest relative error with the float64 coefficients and the
coefficients rounded to f32, ready for the C table.  The error of the
emitted routine (f32 arithmetic, the rounded coefficients) is what
tests/test_vmath.c measures; docs/backend.md "Vector math" has both.

  python3 bench/vmath/fit_erf.py [M N]     (default 6 4; needs numpy)

Debian's python3-numpy is enough, or the bench environment of
bench/anchors/run.sh.
"""
import math
import sys

import numpy as np

C = 3.92


def fit(m, n, points=6000, rounds=60):
    # uniform points plus points crowded toward 0, where erf(x)/x is flat
    # and the relative error is easiest to lose
    x = np.concatenate([np.linspace(0, C, points),
                        C * (1 - np.cos(np.linspace(0, np.pi / 2, points)))])
    x = np.unique(x[x > 0])
    f = np.array([math.erf(v) / v for v in x])
    s = x * x / (C * C)  # t scaled to [0, 1], for conditioning
    vp = np.vander(s, m + 1, increasing=True)
    vq = np.vander(s, n + 1, increasing=True)[:, 1:]
    a = np.hstack([vp, -f[:, None] * vq])
    q_prev = np.ones_like(s)
    w = np.ones_like(s)
    for r in range(rounds):
        weight = w / (f * q_prev)
        sol, *_ = np.linalg.lstsq(a * weight[:, None], f * weight, rcond=None)
        p = sol[:m + 1]
        q = np.concatenate([[1.0], sol[m + 1:]])
        q_prev = vq @ q[1:] + 1.0
        err = (vp @ p) / q_prev / f - 1
        if r >= 10:  # Lawson, once Sanathanan-Koerner has settled
            w = w * np.sqrt(np.abs(err))
            w /= w.max()
    # back to powers of t = x^2
    pt = [p[k] / C ** (2 * k) for k in range(m + 1)]
    qt = [q[k] / C ** (2 * k) for k in range(n + 1)]
    return pt, qt, float(np.abs(err).max())


def main():
    m, n = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) == 3 else (6, 4)
    p, q, worst = fit(m, n)
    print(f"erf(x) = x P(x^2) / Q(x^2) on [0, {C}], P of degree {m}, Q of degree {n}")
    print(f"largest relative error, float64 coefficients: {worst:.3g}")
    for name, c in (("P", p), ("Q", q)):
        print(f"{name}: " + ", ".join(f"{float(np.float32(v)):.9g}" for v in c))


if __name__ == "__main__":
    main()
