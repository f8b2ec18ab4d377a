"""The held-out evaluation (``lanemap evaluate``)."""
import os
from typing import List, Optional, Sequence, Tuple, Union

from ._core import InputError, Progress, c_path, call, ffi, lib, text, \
    to_python
from .kernel import isa_name, isa_value

PathLike = Union[str, os.PathLike]


def _installed(*parts: str) -> str:
    """A file of the library's installed data (PREFIX/share/lanemap)."""
    return os.path.join(ffi.string(lib.lanemap_py_datadir).decode(), *parts)


def _run(fn, o, res, progress, desc):
    """fn(o, res) with o's note and progress callbacks wired to a Progress;
    returns the (warning, line) notes the library reported."""
    with Progress(progress, desc) as pr:
        o.note = lib._lm_py_eval_note
        o.ctx = pr.handle
        if pr.active:
            o.progress = lib._lm_py_eval_progress
        call(fn, o, res)
    return pr.notes


def bundled_cases() -> str:
    """The held-out case list installed with the library
    (PREFIX/share/lanemap/heldout/cases.json)."""
    return _installed("heldout", "cases.json")


def evaluate(out: PathLike, cases: Optional[PathLike] = None,
             isa: Sequence[str] = (), quick: bool = False,
             profile: Optional[PathLike] = None, fresh: bool = False,
             accept_noisy: bool = False,
             shard: Optional[Tuple[int, int]] = None, seed: int = 1,
             cross: Optional[Union[str, bool]] = None,
             all_splits: bool = False, fp: str = "strict",
             progress=None) -> dict:
    """Held-out regret of the plan and the baseline policies
    (``lm_evaluate``): per ISA target take the profile (given, cached, or
    calibrated and cached), predict, solve, compile, measure every variant
    and the plan's picks, score, and write ``out/report.md`` with records,
    plans and plots per target.  A later call with the same ``out`` resumes
    from the records unless ``fresh``.

    Returns the result as a dict: ``targets`` (one per ISA target and
    machine type: regret ``stats`` per policy, verdict counts, wall
    times), ``failures``, ``noisy``, ``cases``, ``noise``, ``total_s``,
    and ``notes``: the (warning, line) pairs the library reported.
    ``shard`` = (i, n) evaluates block i of n of the cases; ``all_splits``
    screens every split and every math provider of every code variant
    (``--all-splits``) instead of the oracle's pruning; ``fp="relaxed"``
    judges the relaxed floating-point mode in a run of its own
    (``--fp relaxed``)."""
    if fp not in ("strict", "relaxed"):
        raise InputError("fp: expected 'strict' or 'relaxed', got %r" % (fp,))
    o = ffi.new("lm_evaluate_options *")
    lib.lm_evaluate_options_defaults(o)
    keep = [c_path(cases if cases is not None else bundled_cases()),
            c_path(out), c_path(profile)]
    o.cases, o.out, o.profile = keep
    isas = list(isa)
    if len(isas) > lib.LM_EVALUATE_MAX_ISAS:
        raise InputError("isa: at most %d targets" %
                         lib.LM_EVALUATE_MAX_ISAS)
    for i, name in enumerate(isas):
        o.isa[i] = isa_value(name)
    o.nisa = len(isas)
    if cross is False:
        o.cross = 0
    elif isinstance(cross, str):
        o.cross, o.cross_isa = 1, isa_value(cross)
    o.quick, o.fresh = int(quick), int(fresh)
    o.all_splits = int(all_splits)
    o.fp = lib.LM_FP_RELAXED if fp == "relaxed" else lib.LM_FP_STRICT
    o.accept_noisy = lib.lm_profile_accept_noisy(int(accept_noisy))
    if shard is not None:
        o.shard_i, o.shard_n = shard
    o.seed = seed
    res = ffi.new("lm_evaluate_result *")
    notes = _run(lib.lm_evaluate, o, res, progress, "evaluate")
    result = to_python(res[0])
    targets = result["target"][:result.pop("ntargets")]
    policies = _policy_names()
    for t in targets:
        t["isa"] = isa_name(t["isa"])
        t["cross_isa"] = isa_name(t["cross_isa"]) if t["has_cross"] else None
        t["stats"] = dict(zip(policies, t["stats"]))
    result["targets"] = targets
    del result["target"]
    result["notes"] = notes
    return result


def _policy_names() -> List[str]:
    return [text(lib.lm_policy_name(p)) for p in range(lib.LM_POLICY__COUNT)]


def bundled_deploy_spec() -> str:
    """The deployment spec installed with the library
    (PREFIX/share/lanemap/heldout/deploy.json)."""
    return _installed("heldout", "deploy.json")


def deploy(out: PathLike, spec: Optional[PathLike] = None,
           budgets: Sequence[int] = (), isa: Optional[str] = None,
           quick: bool = False, profile: Optional[PathLike] = None,
           shapes: int = 0, fresh: bool = False, accept_noisy: bool = False,
           seed: int = 1, progress=None) -> dict:
    """The deployment evaluation (``lanemap evaluate --deploy``,
    ``lm_deploy``): plans under compile budgets ``budgets`` (variants per
    kernel, 0 for no cap; default 1, 2, 4 and no cap), judged on held-out
    shapes drawn between the planning buckets of ``spec`` (default: the
    bundled one), against the per-shape best and the budget oracle.
    Writes ``out/deploy.md`` and the rest (docs/evaluation.md,
    "Deployment").  Returns the result as a dict whose ``rows`` hold one
    entry per policy and budget (``policy`` by name)."""
    o = ffi.new("lm_deploy_options *")
    lib.lm_deploy_options_defaults(o)
    keep = [c_path(spec if spec is not None else bundled_deploy_spec()),
            c_path(out), c_path(profile)]
    o.spec, o.out, o.profile = keep
    if isa is not None:
        o.isa = isa_value(isa)
    budgets = list(budgets)
    if len(budgets) > lib.LM_DEPLOY_MAX_BUDGETS:
        raise InputError("budgets: at most %d" % lib.LM_DEPLOY_MAX_BUDGETS)
    for i, k in enumerate(budgets):
        o.budgets[i] = k
    o.nbudgets = len(budgets)
    o.quick, o.fresh, o.shapes, o.seed = int(quick), int(fresh), shapes, seed
    o.accept_noisy = lib.lm_profile_accept_noisy(int(accept_noisy))
    res = ffi.new("lm_deploy_result *")
    notes = _run(lib.lm_deploy, o, res, progress, "deploy")
    result = to_python(res[0])
    rows = result.pop("row")[:result.pop("nrows")]
    for r in rows:
        r["policy"] = text(lib.lm_deploy_policy_name(r["policy"]))
    result["rows"] = rows
    result["notes"] = notes
    return result
