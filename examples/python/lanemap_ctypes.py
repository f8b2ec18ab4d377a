#!/usr/bin/env python3
"""Call liblanemap from Python with ctypes (standard library only).

    python3 lanemap_ctypes.py [--lib PATH/liblanemap.so] [--cap K]
                              KERNEL.lk R,C[:WEIGHT] [R,C[:WEIGHT]...]
                              [-- KERNEL.lk R,C ...]

For each kernel: load it, enumerate its legal variants on this machine,
and predict every variant at every shape with the uncalibrated default
profile (lm_cost_predict).  Then build a solver problem from those
predictions -- one bucket per shape, weighted, each variant costing 50 ms
to compile, at most --cap variants per kernel -- solve it (lm_solve) and
print which variant runs each shape.  The plan is checked here against the
predictions: every shape runs a compiled variant, no kernel compiles more
than the cap, and the objective is the weighted sum of the chosen costs.

The structs mirrored below are the plain public ones of
include/lanemap/{core,ir,variant,costmodel,solver}.h; handles (lm_kernel,
lm_profile) stay opaque pointers.  Exit 0 ok, 1 a check failed, 2 bad
input (the library's message is printed), 3 system error.
"""
import ctypes
import ctypes.util
import math
import os
import sys

LM_MAX_SYMS = 8
COMPILE_MS = 50.0


class Error(ctypes.Structure):  # lm_error
    _fields_ = [("status", ctypes.c_int), ("msg", ctypes.c_char * 2048)]


class Variant(ctypes.Structure):  # lm_variant
    _fields_ = [("isa", ctypes.c_int), ("w", ctypes.c_int),
                ("l", ctypes.c_int), ("priv", ctypes.c_int),
                ("glob", ctypes.c_int), ("phase", ctypes.c_int),
                ("workers", ctypes.c_int), ("grain", ctypes.c_int64)]


class Shape(ctypes.Structure):  # lm_shape
    _fields_ = [("dims", ctypes.c_int64 * LM_MAX_SYMS),
                ("nsyms", ctypes.c_int)]


class EnumOpts(ctypes.Structure):  # lm_enum_opts
    _fields_ = [("isa", ctypes.c_int), ("workers", ctypes.c_int * 8),
                ("grains", ctypes.c_int * 8)]


class Prediction(ctypes.Structure):  # lm_prediction: ns, p5, p95 first
    _fields_ = [("ns", ctypes.c_double), ("p5", ctypes.c_double),
                ("p95", ctypes.c_double),
                ("_rest", ctypes.c_char * 8192)]  # room for the breakdown


class SolveKernel(ctypes.Structure):  # lm_solve_kernel
    _fields_ = [("nbuckets", ctypes.c_int), ("nvariants", ctypes.c_int),
                ("weight", ctypes.POINTER(ctypes.c_double)),
                ("cost", ctypes.POINTER(ctypes.c_double)),
                ("compile_cost", ctypes.POINTER(ctypes.c_double)),
                ("cap", ctypes.c_int)]


class SolveProblem(ctypes.Structure):  # lm_solve_problem
    _fields_ = [("nkernels", ctypes.c_int),
                ("kernel", ctypes.POINTER(SolveKernel)),
                ("nscenarios", ctypes.c_int), ("budget", ctypes.c_double)]


class SolveOpts(ctypes.Structure):  # lm_solve_opts
    _fields_ = [("time_limit", ctypes.c_double), ("mip_gap", ctypes.c_double),
                ("presolve", ctypes.c_int), ("threshold", ctypes.c_int),
                ("robust", ctypes.c_int), ("prune", ctypes.c_int),
                ("verbose", ctypes.c_int), ("method", ctypes.c_int),
                ("log", ctypes.c_void_p), ("log_ctx", ctypes.c_void_p)]


class SolveResult(ctypes.Structure):  # lm_solve_result
    _fields_ = [("status", ctypes.c_int), ("nkernels", ctypes.c_int),
                ("bucket_start", ctypes.POINTER(ctypes.c_int)),
                ("variant_start", ctypes.POINTER(ctypes.c_int)),
                ("choice", ctypes.POINTER(ctypes.c_int)),
                ("compiled", ctypes.POINTER(ctypes.c_ubyte)),
                ("objective", ctypes.c_double),
                ("greedy_objective", ctypes.c_double),
                ("bound", ctypes.c_double), ("gap", ctypes.c_double),
                ("compile_total", ctypes.c_double), ("time_s", ctypes.c_double),
                ("nodes", ctypes.c_long), ("mip_solves", ctypes.c_int),
                ("pruned", ctypes.c_int)]


class LanemapError(Exception):
    def __init__(self, err):
        super().__init__(err.msg.decode(errors="replace"))
        self.status = err.status


def load_library(path):
    if not path:
        path = os.environ.get("LANEMAP_LIB") or ctypes.util.find_library("lanemap")
    if not path:
        raise OSError("liblanemap not found: give --lib or LANEMAP_LIB")
    lib = ctypes.CDLL(path)
    P, I, D = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    E = ctypes.POINTER(Error)
    sig = {
        "lm_version": ([], ctypes.c_char_p),
        "lm_kernel_load": ([ctypes.c_char_p, ctypes.POINTER(P), E], I),
        "lm_kernel_free": ([P], None),
        "lm_shape_parse": ([P, ctypes.c_char_p, ctypes.POINTER(Shape), E], I),
        "lm_enum_defaults": ([ctypes.POINTER(EnumOpts)], None),
        "lm_variant_enumerate": ([P, ctypes.POINTER(EnumOpts),
                                  ctypes.POINTER(ctypes.POINTER(Variant)), E], I),
        "lm_variant_format": ([ctypes.POINTER(Variant), ctypes.c_char_p,
                               ctypes.c_size_t], ctypes.c_char_p),
        "lm_variant_parse": ([ctypes.c_char_p, ctypes.POINTER(Variant), E], I),
        "lm_profile_default": ([I, ctypes.POINTER(P), E], I),
        "lm_profile_free": ([P], None),
        "lm_cost_predict": ([P, P, ctypes.POINTER(Variant),
                             ctypes.POINTER(Shape), ctypes.POINTER(Prediction),
                             E], I),
        "lm_solve_defaults": ([ctypes.POINTER(SolveOpts)], None),
        "lm_solve": ([ctypes.POINTER(SolveProblem), ctypes.POINTER(SolveOpts),
                      ctypes.POINTER(SolveResult), E], I),
        "lm_solve_result_free": ([ctypes.POINTER(SolveResult)], None),
        "lm_solve_status_name": ([I], ctypes.c_char_p),
    }
    for name, (args, res) in sig.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    libc = ctypes.CDLL(None)
    libc.free.argtypes, libc.free.restype = [P], None
    return lib, libc


def check(status, err):
    if status != 0:
        raise LanemapError(err)


def variant_name(lib, v):
    buf = ctypes.create_string_buffer(128)
    return lib.lm_variant_format(ctypes.byref(v), buf, 128).decode()


def predict_kernel(lib, libc, profile, path, shapes):
    """Variant names and costs[shape][variant] (ns) of one kernel."""
    err = Error()
    k = ctypes.c_void_p()
    check(lib.lm_kernel_load(path.encode(), ctypes.byref(k), ctypes.byref(err)),
          err)
    try:
        opts = EnumOpts()
        lib.lm_enum_defaults(ctypes.byref(opts))
        vs = ctypes.POINTER(Variant)()
        n = lib.lm_variant_enumerate(k, ctypes.byref(opts), ctypes.byref(vs),
                                     ctypes.byref(err))
        if n < 0:
            raise LanemapError(err)
        try:
            names = [variant_name(lib, vs[i]) for i in range(n)]
            costs = []
            for text, _ in shapes:
                shape = Shape()
                check(lib.lm_shape_parse(k, text.encode(), ctypes.byref(shape),
                                         ctypes.byref(err)), err)
                row = []
                for i, name in enumerate(names):
                    # The string form parses back to the same variant, which
                    # is how a pipeline storing variant names calls in.
                    v = Variant()
                    check(lib.lm_variant_parse(name.encode(), ctypes.byref(v),
                                               ctypes.byref(err)), err)
                    pr = Prediction()
                    check(lib.lm_cost_predict(profile, k, ctypes.byref(v),
                                              ctypes.byref(shape),
                                              ctypes.byref(pr),
                                              ctypes.byref(err)), err)
                    row.append(pr.ns)
                costs.append(row)
            return names, costs
        finally:
            libc.free(ctypes.cast(vs, ctypes.c_void_p))
    finally:
        lib.lm_kernel_free(k)


def parse_args(argv):
    lib, cap, groups, cur = None, 2, [], None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--lib" and i + 1 < len(argv):
            lib, i = argv[i + 1], i + 2
            continue
        if a == "--cap" and i + 1 < len(argv):
            cap, i = int(argv[i + 1]), i + 2
            continue
        if a == "--":
            cur = None
        elif cur is None:
            cur = [a, []]
            groups.append(cur)
        else:
            text, _, w = a.partition(":")
            cur[1].append((text, float(w) if w else 1.0))
        i += 1
    if not groups or any(not g[1] for g in groups) or cap < 1:
        raise ValueError("usage: lanemap_ctypes.py [--lib SO] [--cap K] "
                         "KERNEL.lk R,C[:W]... [-- KERNEL.lk R,C[:W]...]")
    return lib, cap, groups


def main(argv):
    try:
        libpath, cap, groups = parse_args(argv)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    lib, libc = load_library(libpath)
    print("lanemap", lib.lm_version().decode())
    err = Error()
    profile = ctypes.c_void_p()
    LM_ISA_HOST = 3
    try:
        check(lib.lm_profile_default(LM_ISA_HOST, ctypes.byref(profile),
                                     ctypes.byref(err)), err)
        try:
            kernels = [(path, shapes) + predict_kernel(lib, libc, profile, path,
                                                       shapes)
                       for path, shapes in groups]
        finally:
            lib.lm_profile_free(profile)
    except LanemapError as e:
        print("lanemap_ctypes: %s" % e, file=sys.stderr)
        return e.status

    for path, shapes, names, costs in kernels:
        for (text, _), row in zip(shapes, costs):
            best = min(range(len(names)), key=lambda v: row[v])
            print("predict %s %s: %d variants, best %s %.3f us" %
                  (os.path.basename(path), text, len(names), names[best],
                   row[best] * 1e-3))

    # The solver problem: arrays kept alive in `keep` while lm_solve runs.
    keep = []
    sk = (SolveKernel * len(kernels))()
    for j, (path, shapes, names, costs) in enumerate(kernels):
        w = (ctypes.c_double * len(shapes))(*[s[1] for s in shapes])
        c = (ctypes.c_double * (len(shapes) * len(names)))(
            *[x for row in costs for x in row])
        cc = (ctypes.c_double * len(names))(*([COMPILE_MS] * len(names)))
        keep += [w, c, cc]
        sk[j] = SolveKernel(len(shapes), len(names), w, c, cc, cap)
    prob = SolveProblem(len(kernels), sk, 1, -1.0)
    opts = SolveOpts()
    lib.lm_solve_defaults(ctypes.byref(opts))
    res = SolveResult()
    try:
        check(lib.lm_solve(ctypes.byref(prob), ctypes.byref(opts),
                           ctypes.byref(res), ctypes.byref(err)), err)
    except LanemapError as e:
        print("lanemap_ctypes: %s" % e, file=sys.stderr)
        return e.status
    try:
        status = lib.lm_solve_status_name(res.status).decode()
        total, ok = 0.0, True
        for j, (path, shapes, names, costs) in enumerate(kernels):
            vstart, bstart = res.variant_start[j], res.bucket_start[j]
            compiled = [v for v in range(len(names)) if res.compiled[vstart + v]]
            if len(compiled) > cap:
                print("check: %s compiles %d variants > cap %d" %
                      (path, len(compiled), cap))
                ok = False
            for s, (text, weight) in enumerate(shapes):
                v = res.choice[bstart + s]
                if v not in compiled or not math.isfinite(costs[s][v]):
                    print("check: %s %s runs a variant not compiled" %
                          (path, text))
                    ok = False
                total += weight * costs[s][v]
                print("solve %s %s -> %s (%.3f us, best alone %.3f us)" %
                      (os.path.basename(path), text, names[v],
                       costs[s][v] * 1e-3, min(costs[s]) * 1e-3))
        if abs(total - res.objective) > 1e-9 * max(1.0, abs(total)):
            print("check: objective %.6g != sum of chosen costs %.6g" %
                  (res.objective, total))
            ok = False
        print("solve: %s, objective %.3f us, %d compiled, %.1f ms compile" %
              (status, res.objective * 1e-3,
               sum(res.compiled[i] for i in range(res.variant_start[len(kernels)])),
               res.compile_total))
        return 0 if ok else 1
    finally:
        lib.lm_solve_result_free(ctypes.byref(res))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
