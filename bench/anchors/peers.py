"""Python peers of the anchor benchmark: TorchInductor (torch.compile, and
eager PyTorch) and Halide (a hand schedule that vectorizes along the row,
and the Adams2019 autoscheduler), on the cases bench_anchors exported.

Inputs are the exact buffers bench_anchors generated (DIR/data/CASE/*.bin,
described in DIR/c.json), and every peer's output is checked against the
FP64 oracle's output exported beside them (want.bin) with the oracle's rule
(|got - want| <= 5e-5 + 5e-5 |want|, NaN for NaN, the same infinity) before
it is timed; a peer that fails is reported as failing and not timed.

When run.sh has linked the case's chosen lanemap variant (chosen.so), each
peer is timed side by side with it in this process (alternating samples),
and the peer's entry carries the paired ratio lanemap / peer; lanemap is
then called through ctypes, about a microsecond per call more than from C.

Timing boundary: in-process, single-threaded (torch.set_num_threads(1),
Halide without parallel loops and HL_NUM_THREADS=1), after warm-up; a
sample is a loop of calls of the Python callable timed with perf_counter_ns,
so a time includes the per-call overhead of the framework (dispatch, guards,
output allocation for torch; buffer wrapping for Halide).  That overhead is
measured separately on a trivial 16-element operator and reported, so a
reader can see on which cases it matters.

Two threads: TorchInductor compiled again with torch.set_num_threads(2) is
timed side by side with lanemap's plan among one and two workers
(chosen_t2.so), launched on lanemap's shared pool with the cut
bench_anchors exported (lm_pool_launch_sched, as lm_compiled_launch does).

    python peers.py DIR [--quick] [--case ID] [--samples N] [--only torch|halide]

Writes DIR/peers.json.  Run from bench/anchors/run.sh, inside the bench
virtual environment."""

import argparse
import json
import math
import os
import sys
import time
import traceback

os.environ.setdefault("HL_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32}
ATOL = RTOL = 5e-5


# ---- inputs and the oracle check ------------------------------------------


def load_case(case):
    """The case's inputs as flat numpy arrays, scalars as floats, and the
    oracle output (f64) with its name."""
    ins, scal, want, out_name = {}, {}, None, None
    for p in case["params"]:
        if "value" in p:
            scal[p["name"]] = float(p["value"])
            continue
        n = int(p["count"])
        if p["output"]:
            want = np.fromfile(p["want"], dtype=np.float64, count=n)
            out_name = p["name"]
            continue
        a = np.fromfile(p["file"], dtype=DTYPES[p["dtype"]], count=n)
        ins[p["name"]] = a
    return ins, scal, want, out_name


def shape_inputs(kernel, ins, R):
    """Row buffers as [R, N], column buffers (g, b) as [N]."""
    out = {}
    for name, a in ins.items():
        a = a.reshape(-1)
        if kernel in ("rmsnorm", "layernorm") and name in ("g", "b"):
            out[name] = a
        else:
            out[name] = a.reshape(R, a.size // R)
    return out


def check(got, want):
    """Mismatch count and max abs error under the oracle's rule."""
    g = np.asarray(got, dtype=np.float64).reshape(-1)
    if g.size != want.size:
        return want.size, math.inf
    nan_w = np.isnan(want)
    inf_w = np.isinf(want)
    fin = ~(nan_w | inf_w)
    bad = np.zeros(want.size, dtype=bool)
    bad |= nan_w & ~np.isnan(g)
    bad |= inf_w & (g != want)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - want)
        bad |= fin & ~(err <= ATOL + RTOL * np.abs(want))
    mx = float(np.nanmax(np.where(fin, err, 0))) if want.size else 0.0
    return int(bad.sum()), mx


# ---- lanemap's chosen code, in this process ----------------------------------


class Lanemap:
    """The case's chosen variant (DIR/data/ID/chosen.so, linked by run.sh
    from the object bench_anchors emitted), called through ctypes on the same
    buffers; None when it is missing.  Its output is checked like a peer's."""

    def __init__(self, case, ins, scal, obj=None, symbol="lanemap_chosen"):
        import ctypes
        obj = obj if obj is not None else case.get("chosen_object", "")
        so = os.path.splitext(obj)[0] + ".so"
        if not obj or not os.path.exists(so):
            raise FileNotFoundError(so)
        self.lib = ctypes.CDLL(so)
        self.fn = getattr(self.lib, symbol)
        self.fn.restype = None
        self.fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        self.keep, slots = [], []
        for p in case["params"]:
            if "value" in p:
                slots.append(int(np.array(p["value"], dtype=np.float64).view(np.uint64)))
                continue
            if p["output"]:
                a = np.empty(int(p["count"]), dtype=DTYPES[p["dtype"]])
                self.out = a
            else:
                a = np.ascontiguousarray(ins[p["name"]].reshape(-1))
            self.keep.append(a)
            slots.append(a.ctypes.data)
        slots += [int(v) for v in case["symbols"]]
        self.args = np.array(slots, dtype=np.uint64)
        self.ptr = self.args.ctypes.data
        self.R = int(case["R"])

    def __call__(self):
        self.fn(self.ptr, 0, self.R)


class LanemapT2(Lanemap):
    """The plan's choice among one and two workers (chosen_t2.so), launched
    on lanemap's shared pool with the exported cut, as lm_compiled_launch
    launches it (one worker: inline)."""

    def __init__(self, case, ins, scal):
        import ctypes
        t2 = case["t2"]
        super().__init__(case, ins, scal, t2["object"], "lanemap_chosen_t2")

        class Sched(ctypes.Structure):
            _fields_ = [("kind", ctypes.c_int), ("batch", ctypes.c_int64)]

        self.workers, self.grain = int(t2["workers"]), int(t2["grain"])
        self.sched = Sched(int(t2["sched"]), int(t2["batch"]))
        self.err = ctypes.create_string_buffer(4096)  # an lm_error
        # the runtime: liblanemap itself (run.sh names it), which the
        # object's shared library may not list when it calls nothing of it
        rt = ctypes.CDLL(os.environ["LANEMAP_LIB"]) if os.environ.get("LANEMAP_LIB") else self.lib
        rt.lm_pool_shared.restype = ctypes.c_void_p
        self.pool = rt.lm_pool_shared()
        self.launch = rt.lm_pool_launch_sched
        self.launch.restype = ctypes.c_int
        self.launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self.fnptr = ctypes.cast(self.fn, ctypes.c_void_p)
        self.sref, self.eref = ctypes.byref(self.sched), ctypes.byref(self.err)

    def __call__(self):
        if self.workers == 1:
            self.fn(self.ptr, 0, self.R)
        elif self.launch(self.pool, self.fnptr, self.ptr, self.R, self.grain, self.workers,
                         self.sref, self.eref) != 0:
            raise RuntimeError(self.err.raw[4:].split(b"\0")[0].decode(errors="replace"))


# ---- timing -----------------------------------------------------------------


def time_callable(fn, samples, sample_ms, warmup_ms):
    """ns per call: calibrate a repetition count so one sample lasts about
    sample_ms, warm up, then take `samples` samples; returns p50, min and
    the interquartile spread over p50."""
    t0 = time.perf_counter_ns()
    reps = 0
    while time.perf_counter_ns() - t0 < warmup_ms * 1e6 or reps < 3:
        fn()
        reps += 1
    per = (time.perf_counter_ns() - t0) / reps
    reps = max(1, int(sample_ms * 1e6 / per))
    ts = []
    for _ in range(samples):
        a = time.perf_counter_ns()
        for _ in range(reps):
            fn()
        ts.append((time.perf_counter_ns() - a) / reps)
    q = np.percentile(ts, [25, 50, 75])
    return {"p50_ns": float(q[1]), "min_ns": float(min(ts)),
            "spread": float((q[2] - q[0]) / q[1]), "reps": reps,
            "samples": samples}


def time_paired(fn, lm, samples, sample_ms, warmup_ms):
    """fn and lanemap's chosen code lm side by side: each round times one
    sample of both, in alternating order; returns fn's statistics plus the
    paired ratio lm / fn (median over rounds) and lm's p50."""
    t0 = time.perf_counter_ns()
    n = 0
    while time.perf_counter_ns() - t0 < warmup_ms * 1e6 or n < 3:
        fn()
        lm()
        n += 1
    reps = []
    for f in (fn, lm):
        a = time.perf_counter_ns()
        for _ in range(3):
            f()
        reps.append(max(1, int(sample_ms * 1e6 / ((time.perf_counter_ns() - a) / 3))))
    tf, tl = [], []
    for r in range(samples):
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):
            f, k = (fn, reps[0]) if which == 0 else (lm, reps[1])
            a = time.perf_counter_ns()
            for _ in range(k):
                f()
            (tf if which == 0 else tl).append((time.perf_counter_ns() - a) / k)
    q = np.percentile(tf, [25, 50, 75])
    return {"p50_ns": float(q[1]), "min_ns": float(min(tf)),
            "spread": float((q[2] - q[0]) / q[1]), "reps": reps[0], "samples": samples,
            "lanemap_p50_ns": float(np.median(tl)),
            "chosen_over_paired": float(np.median(np.array(tl) / np.array(tf)))}


def timed(call, lm, opts):
    return time_paired(call, lm, *opts) if lm else time_callable(call, *opts)


def lanemap_for(case, ins, scal, want, out, cls=Lanemap, key="lanemap_in_process"):
    """The in-process lanemap entry, verified, or None (with the reason,
    under `key`)."""
    try:
        lm = cls(case, ins, scal)
        lm()
        bad, _ = check(lm.out, want)
        if bad:
            out["cases"].setdefault(case["id"], {})[key] = {
                "status": "fails-oracle", "mismatches": bad}
            return None
        return lm
    except (OSError, KeyError, AttributeError, RuntimeError) as e:
        out.setdefault(key, f"not available: {e}")
        return None


# ---- PyTorch ----------------------------------------------------------------


def torch_ops(torch):
    """The suite's operators in PyTorch, in the .lk sources' arithmetic."""

    def rmsnorm(x, g, eps):
        C = x.shape[-1]
        ms = (x * x).sum(-1, keepdim=True) / C
        return x / torch.sqrt(ms + eps) * g

    def layernorm(x, g, b, eps):
        C = x.shape[-1]
        mu = x.sum(-1, keepdim=True) / C
        d = x - mu
        var = (d * d).sum(-1, keepdim=True) / C
        return d / torch.sqrt(var + eps) * g + b

    def masked_softmax(x, m):
        z = torch.where(m != 0, x, float("-inf"))
        e = torch.exp(z - z.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True)

    def gelu_residual(x, res):
        return 0.5 * x * (1 + torch.erf(x * 0.7071067811865476)) + res

    def swiglu(a, b):
        return a * torch.sigmoid(a) * b

    def rope(x, cs, sn):
        a = x[:, 0::2]
        b = x[:, 1::2]
        return torch.stack((a * cs - b * sn, a * sn + b * cs), -1).reshape(x.shape)

    return {"rmsnorm": rmsnorm, "layernorm": layernorm,
            "masked_softmax": masked_softmax, "gelu_residual": gelu_residual,
            "swiglu": swiglu, "rope": rope}


ARGS = {"rmsnorm": ("x", "g", "eps"), "layernorm": ("x", "g", "b", "eps"),
        "masked_softmax": ("x", "m"), "gelu_residual": ("x", "res"),
        "swiglu": ("a", "b"), "rope": ("x", "cs", "sn")}


def run_torch(cases, opts, out):
    import torch
    torch.set_num_threads(1)
    ops = torch_ops(torch)
    out["torch_version"] = torch.__version__
    out["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    triv = torch.compile(lambda x: x + 1)
    t16 = torch.zeros(16)
    triv(t16)
    out["inductor_overhead_ns"] = time_callable(lambda: triv(t16), *opts)["p50_ns"]
    out["eager_overhead_ns"] = time_callable(lambda: t16 + 1, *opts)["p50_ns"]
    for case in cases:
        ins, scal, want, _ = load_case(case)
        ins = shape_inputs(case["kernel"], ins, int(case["R"]))
        args = []
        for name in ARGS[case["kernel"]]:
            args.append(scal[name] if name in scal else torch.from_numpy(ins[name]))
        fn = ops[case["kernel"]]
        lm = lanemap_for(case, ins, scal, want, out)
        res = out["cases"].setdefault(case["id"], {})
        for key, call in (("torch_eager", fn),
                          ("torch_inductor", torch.compile(fn, dynamic=False))):
            try:
                t = time.perf_counter()
                y = call(*args)
                first = time.perf_counter() - t
                bad, mx = check(y.numpy(), want)
                if bad:
                    res[key] = {"status": "fails-oracle", "mismatches": bad, "max_abs_err": mx}
                    continue
                res[key] = dict(status="ok", first_call_s=first, max_abs_err=mx,
                                **timed(lambda: call(*args), lm, opts))
            except Exception as e:  # a peer that cannot run is reported, not fatal
                res[key] = {"status": "error", "error": f"{type(e).__name__}: {e}"[:300]}
            print(f"  {case['id']:26s} {key:16s} {fmt(res[key])}", flush=True)
    run_torch_t2(torch, ops, cases, opts, out)


def run_torch_t2(torch, ops, cases, opts, out):
    """TorchInductor with two threads against lanemap's plan among one and
    two workers, paired."""
    torch.set_num_threads(2)
    torch._dynamo.reset()  # compile again: Inductor bakes the thread count in
    for case in cases:
        if "t2" not in case:
            continue
        ins, scal, want, _ = load_case(case)
        ins = shape_inputs(case["kernel"], ins, int(case["R"]))
        args = [scal[n] if n in scal else torch.from_numpy(ins[n]) for n in ARGS[case["kernel"]]]
        res = out["cases"].setdefault(case["id"], {})
        lm = lanemap_for(case, ins, scal, want, out, LanemapT2, "lanemap_t2_in_process")
        key = "torch_inductor_t2"
        try:
            call = torch.compile(ops[case["kernel"]], dynamic=False)
            y = call(*args)
            bad, mx = check(y.numpy(), want)
            if bad:
                res[key] = {"status": "fails-oracle", "mismatches": bad, "max_abs_err": mx}
            elif lm is None:
                res[key] = {"status": "error", "error": "lanemap's 2-worker plan is not available"}
            else:
                res[key] = dict(status="ok", max_abs_err=mx, lanemap_variant=case["t2"]["variant"],
                                **time_paired(lambda: call(*args), lm, *opts))
        except Exception as e:
            res[key] = {"status": "error", "error": f"{type(e).__name__}: {e}"[:300]}
        print(f"  {case['id']:26s} {key:16s} {fmt(res[key])}", flush=True)
    torch.set_num_threads(1)


# ---- Halide -----------------------------------------------------------------


def halide_pipeline(hl, kernel, R, N, scal, auto):
    """The operator as a Halide pipeline over ImageParams; with auto=False a
    hand schedule (16-lane vectors along the row, reductions rfactored into
    16 partial sums, one row at a time), else estimates for an
    autoscheduler.  Returns (pipeline, {name: ImageParam}, output Func)."""
    f32 = hl.Float(32)
    c, r, u = hl.Var("c"), hl.Var("r"), hl.Var("u")
    P = {}

    def img(name, t, dims):
        P[name] = hl.ImageParam(t, dims, name)
        return P[name]

    def reduce_vec(fn, rdom, combine):
        """Vectorize a row reduction fn(r) over rdom by rfactor."""
        ko, ki = hl.RVar("ko"), hl.RVar("ki")
        fn.update().split(rdom.x, ko, ki, 16, hl.TailStrategy.GuardWithIf)
        intm = fn.update().rfactor(ki, u)
        intm.compute_at(fn, r).vectorize(u)
        intm.update().vectorize(u)
        return intm

    y = hl.Func("y")
    reds = []
    k = hl.RDom([(0, N)], "k")
    if kernel == "rmsnorm":
        x, g = img("x", f32, 2), img("g", f32, 1)
        eps = hl.f32(scal["eps"])
        ms = hl.Func("ms")
        ms[r] = hl.f32(0)
        ms[r] += x[k.x, r] * x[k.x, r]
        y[c, r] = x[c, r] / hl.sqrt(ms[r] / hl.f32(N) + eps) * g[c]
        reds = [ms]
    elif kernel == "layernorm":
        x, g, b = img("x", f32, 2), img("g", f32, 1), img("b", f32, 1)
        eps = hl.f32(scal["eps"])
        s, v = hl.Func("s"), hl.Func("v")
        s[r] = hl.f32(0)
        s[r] += x[k.x, r]
        mu = s[r] / hl.f32(N)
        v[r] = hl.f32(0)
        v[r] += (x[k.x, r] - mu) * (x[k.x, r] - mu)
        y[c, r] = (x[c, r] - mu) / hl.sqrt(v[r] / hl.f32(N) + eps) * g[c] + b[c]
        reds = [s, v]
    elif kernel == "masked_softmax":
        x, m = img("x", f32, 2), img("m", hl.Int(32), 2)
        z = hl.Func("z")
        z[c, r] = hl.select(m[c, r] != 0, x[c, r], hl.f32(-math.inf))
        mx, s = hl.Func("mx"), hl.Func("s")
        mx[r] = hl.f32(-math.inf)
        mx[r] = hl.max(mx[r], z[k.x, r])
        s[r] = hl.f32(0)
        s[r] += hl.exp(z[k.x, r] - mx[r])
        y[c, r] = hl.exp(z[c, r] - mx[r]) / s[r]
        reds = [mx, s]
    elif kernel == "gelu_residual":
        x, res = img("x", f32, 2), img("res", f32, 2)
        y[c, r] = hl.f32(0.5) * x[c, r] * (1 + hl.erf(x[c, r] * hl.f32(0.7071067811865476))) + res[c, r]
    elif kernel == "swiglu":
        a, b = img("a", f32, 2), img("b", f32, 2)
        y[c, r] = a[c, r] * (1 / (1 + hl.exp(-a[c, r]))) * b[c, r]
    elif kernel == "rope":
        x, cs, sn = img("x", f32, 2), img("cs", f32, 2), img("sn", f32, 2)
        i = c / 2
        av, bv = x[2 * i, r], x[2 * i + 1, r]
        y[c, r] = hl.select(c % 2 == 0, av * cs[i, r] - bv * sn[i, r], av * sn[i, r] + bv * cs[i, r])
    W = 2 * N if kernel == "rope" else N
    if auto:
        y.set_estimates([(0, W), (0, R)])
        for name, p in P.items():
            dims = [(0, 2 * N if (kernel == "rope" and name == "x") else N)]
            if p.dimensions() == 2:
                dims.append((0, R))
            p.set_estimates(dims)
    else:
        # the output's last vector shifts inwards (recomputes a few columns)
        # rather than going scalar: every row has at least 16 columns
        y.vectorize(c, 32 if kernel == "rope" else 16, hl.TailStrategy.ShiftInwards)
        for fn in reds:
            fn.compute_at(y, r)
            reduce_vec(fn, k, None)
    return hl.Pipeline(y), P, y, W


def run_halide(cases, opts, out):
    import halide as hl
    target = hl.get_jit_target_from_environment()
    out["halide_target"] = str(target)
    have_adams = True
    try:
        lib = os.path.join(os.path.dirname(hl.__file__), "lib64", "libautoschedule_adams2019.so")
        hl.load_plugin(lib if os.path.exists(lib) else "autoschedule_adams2019")
    except Exception as e:
        have_adams = False
        out["adams2019"] = f"not available: {e}"
    for case in cases:
        kernel, R = case["kernel"], int(case["R"])
        ins, scal, want, _ = load_case(case)
        ins = shape_inputs(kernel, ins, R)
        N = int(case["C"]) // 2 if kernel == "rope" else int(case["C"])
        lm = lanemap_for(case, ins, scal, want, out)
        res = out["cases"].setdefault(case["id"], {})
        modes = [("halide_hand", False)] + ([("halide_adams2019", True)] if have_adams else [])
        for key, auto in modes:
            try:
                pipe, P, y, W = halide_pipeline(hl, kernel, R, N, scal, auto)
                if auto:
                    pipe.apply_autoscheduler(target, hl.AutoschedulerParams(
                        "Adams2019", {"parallelism": "1"}))
                t = time.perf_counter()
                pipe.compile_jit(target)
                first = time.perf_counter() - t
                for name, p in P.items():
                    p.set(hl.Buffer(np.ascontiguousarray(ins[name])))
                ynp = np.empty((R, W), dtype=np.float32)
                yb = hl.Buffer(ynp)
                pipe.realize(yb)
                bad, mx = check(ynp, want)
                if bad:
                    res[key] = {"status": "fails-oracle", "mismatches": bad, "max_abs_err": mx}
                else:
                    res[key] = dict(status="ok", first_call_s=first, max_abs_err=mx,
                                    **timed(lambda: pipe.realize(yb), lm, opts))
            except Exception as e:
                res[key] = {"status": "error", "error": f"{type(e).__name__}: {e}"[:300]}
                traceback.print_exc(limit=2, file=sys.stderr)
            print(f"  {case['id']:26s} {key:16s} {fmt(res[key])}", flush=True)
    # the per-call overhead of realize on a trivial pipeline
    xi = hl.ImageParam(hl.Float(32), 1, "t")
    f, v = hl.Func("t1"), hl.Var("v")
    f[v] = xi[v] + 1
    f.vectorize(v, 16)
    tp = hl.Pipeline(f)
    tp.compile_jit(target)
    xi.set(hl.Buffer(np.zeros(16, dtype=np.float32)))
    tb = hl.Buffer(np.zeros(16, dtype=np.float32))
    out["halide_overhead_ns"] = time_callable(lambda: tp.realize(tb), *opts)["p50_ns"]


def fmt(r):
    if r.get("status") == "ok":
        return f"p50 {r['p50_ns'] / 1e3:10.2f} us"
    return r.get("status", "?") + " " + r.get("error", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--case")
    ap.add_argument("--only", choices=["torch", "halide"])
    ap.add_argument("--samples", type=int)
    a = ap.parse_args()
    try:
        with open(os.path.join(a.dir, "c.json")) as f:
            c = json.load(f)
    except (OSError, ValueError) as e:
        print(f"peers.py: {a.dir}/c.json: {e}", file=sys.stderr)
        return 2
    cases = [x for x in c.get("cases", []) if "params" in x and (not a.case or x["id"] == a.case)]
    if not cases:
        print("peers.py: no exported case to run", file=sys.stderr)
        return 2
    opts = (5, 10.0, 20.0) if a.quick else (7, 30.0, 100.0)
    if a.samples is not None:
        if a.samples < 1:
            print("peers.py: --samples: expected a positive integer", file=sys.stderr)
            return 2
        opts = (a.samples,) + opts[1:]
    out = {"schema": "lanemap.anchors.peers/1", "samples": opts[0], "sample_ms": opts[1],
           "boundary": "in-process, single thread, after warm-up; per call of the Python callable",
           "cases": {}}
    if a.only in (None, "torch"):
        run_torch(cases, opts, out)
    if a.only in (None, "halide"):
        run_halide(cases, opts, out)
    path = os.path.join(a.dir, "peers.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
