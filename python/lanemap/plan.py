"""Workloads, plans (solve and tune) and dispatch by shape."""
import json
import os
from typing import Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from ._core import InputError, Progress, c_path, call, check, ffi, lib, \
    new_error, path_bytes, take_text, text, to_python
from .kernel import Bound, Kernel, _Launch, isa_name, isa_value
from .profile import Profile

PathLike = Union[str, os.PathLike]


class Workload:
    """What a pipeline runs (``lm_workload``): kernel files, per kernel the
    shape buckets (R, C) with how often each runs, the ISA targets, the
    worker counts and the compile budgets.  Build one in code or load a
    ``lanemap.workload/1`` file."""

    def __init__(self, name: str = "<code>", dir: Optional[PathLike] = None):
        err = new_error()
        w = lib.lm_workload_new(name.encode(), path_bytes(dir), err)
        if w == ffi.NULL:
            check(err.status or lib.LM_ESYS, err)
        self._w = ffi.gc(w, lib.lm_workload_free)

    @classmethod
    def _wrap(cls, ptr):
        self = cls.__new__(cls)
        self._w = ffi.gc(ptr, lib.lm_workload_free)
        return self

    @classmethod
    def load(cls, path: PathLike) -> "Workload":
        """Read, parse and bind a workload file (kernels loaded, every
        bucket checked against its kernel)."""
        out = ffi.new("lm_workload **")
        call(lib.lm_workload_load, path_bytes(path), out)
        return cls._wrap(out[0])

    @classmethod
    def from_json(cls, doc: Union[str, dict], dir: PathLike = ".",
                  name: str = "<json>") -> "Workload":
        """A workload from its JSON (text or a dict); kernel paths resolve
        against ``dir``."""
        data = (doc if isinstance(doc, str) else json.dumps(doc)).encode()
        out = ffi.new("lm_workload **")
        call(lib.lm_workload_from_json_text, name.encode(), path_bytes(dir),
             data, len(data), out)
        w = cls._wrap(out[0])
        w.bind()
        return w

    # ---- building -------------------------------------------------------

    def add_kernel(self, path: PathLike, extra: Optional[str] = None,
                   max_variants: int = 0,
                   compile_ms: Optional[float] = None) -> int:
        """Add a kernel file; returns its index.  ``extra`` gives symbols
        besides R and C for every bucket ("H=64")."""
        index = ffi.new("int *")
        call(lib.lm_workload_add_kernel, self._w, path_bytes(path),
             extra.encode() if extra else ffi.NULL, index)
        if max_variants or compile_ms is not None:
            call(lib.lm_workload_set_kernel_opts, self._w, index[0],
                 max_variants, -1.0 if compile_ms is None else compile_ms)
        return index[0]

    def add_bucket(self, kernel: int, R: int, C: int,
                   weight: float = 1.0) -> None:
        """Add the shape (R, C), run ``weight`` times per pipeline step."""
        call(lib.lm_workload_add_bucket, self._w, kernel, R, C, weight)

    def add_geometric(self, kernel: int, C: int, first: int, last: int,
                      n: int, weights: Optional[Sequence[float]] = None):
        """Add n buckets with R spaced geometrically from first to last."""
        w = ffi.NULL
        if weights is not None:
            if len(weights) != n:
                raise InputError("weights: expected %d values, got %d" %
                                 (n, len(weights)))
            w = ffi.new("double[]", list(weights))
        call(lib.lm_workload_add_geometric, self._w, kernel, C, first, last,
             n, w)

    def set_isas(self, isas: Sequence[str]) -> None:
        """The ISA targets the variants may use ("avx2", "host", ...)."""
        vals = ffi.new("lm_isa[]", [isa_value(i) for i in isas])
        call(lib.lm_workload_set_isas, self._w, vals, len(isas))

    def set_workers(self, workers: Sequence[int]) -> None:
        """The worker counts the variants may use."""
        vals = ffi.new("int[]", list(workers))
        call(lib.lm_workload_set_workers, self._w, vals, len(workers))

    def set_budgets(self, cap: int = 0, budget_ms: Optional[float] = None,
                    budget_variants: Optional[int] = None) -> None:
        """At most ``cap`` variants per kernel (0: no cap), and a compile
        budget in ms or in variants over the workload (not both)."""
        call(lib.lm_workload_set_budgets, self._w, cap,
             -1.0 if budget_ms is None else budget_ms,
             -1 if budget_variants is None else budget_variants)

    def bind(self) -> None:
        """Load the kernels and check every bucket against its kernel."""
        call(lib.lm_workload_bind, self._w)

    # ---- reading --------------------------------------------------------

    @property
    def isas(self) -> List[str]:
        """The ISA targets, by their names ("x86-64-v3", ...)."""
        return [isa_name(self._w.isa[i]) for i in range(self._w.nisa)]

    @property
    def kernels(self) -> List[dict]:
        """Per kernel: its path, resolved path, extra symbols and buckets
        as (R, C, weight)."""
        out = []
        for i in range(self._w.nkernels):
            k = self._w.kernels[i]
            out.append({
                "path": text(k.path), "resolved": text(k.resolved),
                "extra": text(k.extra),
                "buckets": [(int(b.R), int(b.C), float(b.weight))
                            for b in (k.buckets[j]
                                      for j in range(k.nbuckets))]})
        return out

    def to_json(self) -> dict:
        """The workload as its JSON file would hold it."""
        out = ffi.new("char **")
        call(lib.lm_workload_to_json_text, self._w, out)
        return json.loads(take_text(out[0]))

    def save(self, path: PathLike) -> None:
        """Write the workload file atomically."""
        out = ffi.new("char **")
        call(lib.lm_workload_to_json_text, self._w, out)
        data = take_text(out[0]).encode()
        call(lib.lm_file_write_atomic, path_bytes(path), data, len(data))

    def __eq__(self, other):
        return isinstance(other, Workload) and \
            bool(lib.lm_workload_equal(self._w, other._w))

    def __repr__(self):
        return "Workload(%d kernels, ISA %s)" % (self._w.nkernels,
                                                 ",".join(self.isas))


def _workload_profiles(w: Workload, profiles):
    """One Profile per ISA target of the workload, kept alive by the list.
    profiles: None (each target's cached profile), "default", one Profile or
    path (a lone target), or a dict {isa: Profile or path}."""
    isas = w.isas
    if isinstance(profiles, Mapping):
        by_isa = {isa_name(isa_value(k)): v for k, v in profiles.items()}
        missing = [i for i in isas if i not in by_isa]
        if missing:
            raise InputError("profiles: none for ISA target %s" %
                             ", ".join(missing))
        owned = [Profile.resolve(by_isa[i], i) for i in isas]
    elif profiles is None or profiles == "default":
        owned = [Profile.resolve(profiles, i) for i in isas]
    else:
        if len(isas) != 1:
            raise InputError("profiles: the workload has %d ISA targets; "
                             "pass a dict {isa: profile}" % len(isas))
        owned = [Profile.resolve(profiles, isas[0])]
    arr = ffi.new("lm_profile *[]", [p._p for p in owned])
    return owned, arr


class Plan:
    """What the solver decided for a workload (``lanemap.plan/1``): per
    kernel the variants to compile and the variant each bucket runs."""

    def __init__(self, ptr):
        self._p = ffi.gc(ptr, lib.lm_plan_free)

    @classmethod
    def load(cls, path: PathLike) -> "Plan":
        """Read a plan; ``warning`` says when it was priced on another
        machine."""
        out = ffi.new("lm_plan **")
        info = ffi.new("lm_plan_load_info *")
        call(lib.lm_plan_load, path_bytes(path), out, info)
        plan = cls(out[0])
        plan.warning = text(info.warning)
        return plan

    warning = ""

    def save(self, path: PathLike) -> None:
        """Write the plan atomically."""
        call(lib.lm_plan_save, self._p, path_bytes(path))

    def to_json(self) -> dict:
        """The plan as its JSON file holds it."""
        out = ffi.new("char **")
        call(lib.lm_plan_to_json_text, self._p, out)
        return json.loads(take_text(out[0]))

    @property
    def kernels(self) -> List[dict]:
        """Per kernel: name, path, extra symbols ("H=64" or None),
        variants, and buckets as dicts (R, C, weight, variant,
        predicted_ns, unsure)."""
        out = []
        for i in range(self._p.nkernels):
            k = self._p.kernels[i]
            variants = [text(k.variants[j]) for j in range(k.nvariants)]
            buckets = []
            for j in range(k.nbuckets):
                b = k.buckets[j]
                buckets.append({
                    "R": int(b.R), "C": int(b.C), "weight": float(b.weight),
                    "variant": variants[b.variant],
                    "predicted_ns": float(b.predicted_ns),
                    "unsure": [text(b.unsure[u]) for u in range(b.nunsure)]})
            out.append({"name": text(k.name), "path": text(k.path),
                        "extra": text(k.extra), "variants": variants,
                        "buckets": buckets})
        return out

    @property
    def status(self) -> str:
        """The solver's status: "optimal", "feasible", "time-limit"."""
        return ffi.string(self._p.status).decode()

    @property
    def objective(self) -> float:
        """The weighted predicted (or measured) time of the plan, ns."""
        return float(self._p.objective)

    def __eq__(self, other):
        return isinstance(other, Plan) and \
            bool(lib.lm_plan_equal(self._p, other._p))

    def dispatch(self, check_hash: bool = True,
                 opt_level: int = 3) -> "Dispatch":
        """Compile every planned variant and build the lookup by shape."""
        return Dispatch(self, check_hash, opt_level)

    def __repr__(self):
        return "Plan(%d kernels, %s, objective %.6g ns)" % (
            self._p.nkernels, self.status, self.objective)


def solve(workload: Workload, profiles=None, threshold: bool = False,
          robust: bool = False, settle: Optional[float] = None,
          time_limit: float = 10.0) -> Plan:
    """Choose variants and a dispatch per shape bucket (``lanemap solve``).

    ``profiles`` price the workload's ISA targets: None for this machine's
    cached profiles, "default" for the uncalibrated defaults, a Profile or
    path for a lone target, or a dict {isa: Profile or path}.  Near ties
    within the calibration's uncertainty settle on the named defaults'
    pick (share ``settle``, default LM_SETTLE_ALPHA), unless ``robust``
    (min-max over the bootstrap scenarios) or ``settle=0`` (the point
    predictions alone)."""
    workload.bind()
    owned, arr = _workload_profiles(workload, profiles)
    so = ffi.new("lm_solve_opts *")
    lib.lm_solve_defaults(so)
    so.threshold = int(threshold)
    so.robust = int(robust)
    so.time_limit = time_limit
    alpha = lib.LM_SETTLE_ALPHA if settle is None else float(settle)
    bo = ffi.new("lm_plan_build_opts *")
    bo.robust = int(robust)
    bo.settle = int(alpha > 0)
    pp = ffi.new("lm_plan_problem *")
    res = ffi.new("lm_solve_result *")
    out = ffi.new("lm_plan **")
    try:
        call(lib.lm_plan_problem_build, workload._w, arr, bo, pp)
        if alpha > 0:
            call(lib.lm_plan_problem_settle, pp, alpha)
        call(lib.lm_solve, ffi.addressof(pp, "p"), so, res)
        try:
            call(lib.lm_plan_from_result, workload._w, arr, pp, so, res, out)
        finally:
            lib.lm_solve_result_free(res)
    finally:
        lib.lm_plan_problem_free(pp)
    del owned
    return Plan(out[0])


class TuneResult:
    """What ``tune`` did: the plan, and its counts and wall times (the
    fields of ``lm_tune_result``) as attributes and in ``stats``."""

    def __init__(self, plan: Plan, stats: dict):
        self.plan = plan
        self.stats = stats

    def __getattr__(self, name):
        try:
            return self.__dict__["stats"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self):
        s = self.stats
        return ("TuneResult(%d buckets: %d measured, %d resumed; %d cells "
                "timed, %.1f s)" % (s["buckets"], s["measured_buckets"],
                                    s["resumed_buckets"], s["measured"],
                                    s["total_s"]))


def tune(workload: Workload, measure: int = 3, profiles=None,
         records: Optional[PathLike] = None,
         time_budget: Optional[float] = None, samples: Optional[int] = None,
         sample_ms: Optional[float] = None,
         warmup_ms: Optional[float] = None, alpha: Optional[float] = None,
         threshold: bool = False, progress=None) -> TuneResult:
    """Measured autotuning of a whole workload, ending in a plan
    (``lanemap tune``): per bucket the model's top ``measure`` variants
    and its near ties are compiled, verified against the oracle and timed
    interleaved; the plan is solved on the measured costs.  ``measure=0``
    measures only the buckets the model is unsure of.  With ``records``,
    measurements are appended there and a later call resumes from them.
    ``progress``: a callable (done, total, what), False, or None for a tqdm
    bar when tqdm is installed."""
    workload.bind()
    owned, arr = _workload_profiles(workload, profiles)
    o = ffi.new("lm_tune_opts *")
    lib.lm_tune_defaults(o)
    o.measure = measure
    if alpha is not None:
        o.alpha = alpha
    if time_budget is not None:
        o.time_budget_s = time_budget
    keep = c_path(records)
    o.records = keep
    if samples is not None:
        o.timing.samples = samples
    if sample_ms is not None:
        o.timing.sample_ms = sample_ms
    if warmup_ms is not None:
        o.timing.warmup_ms = warmup_ms
    o.solve.threshold = int(threshold)
    res = ffi.new("lm_tune_result *")
    with Progress(progress, "tune") as pr:
        if pr.active:
            o.progress = lib._lm_py_progress
            o.ctx = pr.handle
        call(lib.lm_tune, workload._w, arr, o, res)
        # owned by Python before a callback's error is raised on exit
        try:
            stats = to_python(res[0])
            stats.pop("plan", None)
            plan = Plan(res.plan)
            res.plan = ffi.NULL
        finally:
            lib.lm_tune_result_free(res)
    del owned, keep
    return TuneResult(plan, stats)


class Dispatch:
    """A compiled plan: every planned variant JIT-compiled, and per kernel
    the lookup from a shape to its variant (``lm_dispatch``)."""

    def __init__(self, plan: Plan, check_hash: bool = True,
                 opt_level: int = 3):
        o = ffi.new("lm_dispatch_opts *")
        lib.lm_dispatch_defaults(o)
        o.check_hash = int(check_hash)
        o.compile.opt_level = opt_level
        out = ffi.new("lm_dispatch **")
        call(lib.lm_dispatch_new, plan._p, o, out)
        self._d = ffi.gc(out[0], lib.lm_dispatch_free)
        self._kernels: Dict[str, int] = {}
        for i in range(lib.lm_dispatch_nkernels(self._d)):
            self._kernels[text(lib.lm_dispatch_kernel(self._d, i).name)] = i

    @property
    def kernel_names(self) -> List[str]:
        """The plan's kernels, in order."""
        return list(self._kernels)

    def kernel(self, name: str) -> Kernel:
        """The kernel as the dispatch loaded it (valid while the dispatch
        lives)."""
        return Kernel._borrowed(lib.lm_dispatch_kernel(self._d,
                                                       self._index(name)),
                                self)

    def compile_ms(self) -> float:
        """Compile wall time of every variant, ms."""
        return float(lib.lm_dispatch_compile_ms(self._d, ffi.NULL))

    def _index(self, name):
        try:
            return self._kernels[name]
        except KeyError:
            raise InputError("the plan has no kernel %r (it has %s)" % (
                name, ", ".join(self._kernels))) from None

    def lookup(self, kernel: str, R: int, C: int) -> dict:
        """Which variant a shape runs: variant, match ("exact", "between",
        "fallback"), and the bucket used."""
        info = ffi.new("lm_dispatch_info *")
        call(lib.lm_dispatch_lookup, self._d, self._index(kernel), R, C, info)
        return _info(info)

    def bind(self, kernel: str, **arrays: np.ndarray) -> Bound:
        """Check the arrays once and pack the launch of a kernel through
        its dispatch; each call of the result looks the shape up and runs
        its variant (its ``info`` says which)."""
        k = self.kernel(kernel)
        launch = _Launch(k, arrays)
        ki = self._index(kernel)
        d = self._d
        R, C = launch.shape.R, launch.shape.C

        def run(args):
            info = ffi.new("lm_dispatch_info *")  # per call: threads
            call(lib.lm_dispatch_launch, d, ki, R, C, args, info)
            return _info(info)

        return Bound(launch, run, self)

    def run(self, kernel: str, **arrays: np.ndarray) -> Dict[str, np.ndarray]:
        """Run a kernel through its dispatch on the arrays given by name
        (the checks of Compiled.__call__); returns the outputs.  The
        variant that ran is in ``last``."""
        bound = self.bind(kernel, **arrays)
        out = bound()
        self.last = bound.info
        return out

    last: Optional[dict] = None


def _info(info) -> dict:
    return {"variant": text(info.variant_name),
            "match": text(lib.lm_dispatch_match_name(info.match)),
            "bucket": int(info.bucket), "bucket_R": int(info.bucket_R),
            "bucket_C": int(info.bucket_C)}
