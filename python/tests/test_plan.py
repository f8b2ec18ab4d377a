"""Workloads, solve, tune, dispatch and records, against the CLI."""
import json

import numpy as np
import pytest

import lanemap


def small_workload(kernel_path, isa="avx2"):
    w = lanemap.Workload()
    ki = w.add_kernel(kernel_path("rmsnorm"))
    for R, C, weight in ((1, 4096, 1.0), (64, 4096, 2.0), (17, 65, 4.0)):
        w.add_bucket(ki, R, C, weight)
    kj = w.add_kernel(kernel_path("swiglu"), max_variants=1)
    w.add_geometric(kj, 96, 1, 1000, 3)
    w.set_isas([isa])
    w.bind()
    return w


def test_workload_round_trip(kernel_path, tmp_path):
    w = small_workload(kernel_path)
    assert [len(k["buckets"]) for k in w.kernels] == [3, 3]
    assert w.isas == ["x86-64-v3"]
    path = tmp_path / "w.json"
    w.save(path)
    assert lanemap.Workload.load(path) == w
    assert lanemap.Workload.from_json(w.to_json(), dir=tmp_path) == w


def test_bad_workloads(kernel_path, tmp_path):
    w = lanemap.Workload()
    ki = w.add_kernel(kernel_path("rmsnorm"))
    with pytest.raises(lanemap.InputError):
        w.add_bucket(ki, 0, 4, 1.0)
    w.add_bucket(ki, 4, 4, 1.0)
    with pytest.raises(lanemap.InputError):
        w.add_bucket(ki, 4, 4, 1.0)
    with pytest.raises(lanemap.InputError):
        w.set_budgets(budget_ms=10, budget_variants=2)
    with pytest.raises(lanemap.InputError):
        w.set_workers([0])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "lanemap.workload/1",
                               "kernels": [{"file": "nope.lk"}]}))
    with pytest.raises(lanemap.InputError, match="bad.json"):
        lanemap.Workload.load(bad)


def test_solve_equals_the_cli(cli, kernel_path, tmp_path):
    w = small_workload(kernel_path)
    path = tmp_path / "w.json"
    w.save(path)
    cli.run("solve", path, "-o", tmp_path / "cli-plan.json",
            "--default-profile")
    theirs = lanemap.Plan.load(tmp_path / "cli-plan.json")
    ours = lanemap.solve(w, profiles="default")
    assert ours.status == "optimal"
    pick = lambda plan: [[(b["R"], b["C"], b["variant"], b["predicted_ns"])
                          for b in k["buckets"]] for k in plan.kernels]
    assert pick(ours) == pick(theirs)
    assert ours.objective == theirs.objective
    assert len(ours.kernels[1]["variants"]) == 1  # the cap
    ours.save(tmp_path / "plan.json")
    assert lanemap.Plan.load(tmp_path / "plan.json") == ours
    assert ours.to_json()["schema"] == "lanemap.plan/1"


def test_dispatch_runs_the_plan(kernel_path):
    w = small_workload(kernel_path)
    plan = lanemap.solve(w, profiles="default")
    d = plan.dispatch()
    assert d.kernel_names == ["rmsnorm", "swiglu"]
    k = d.kernel("rmsnorm")
    for R, C in ((64, 4096), (30, 4096), (3, 65)):
        inputs = k.inputs((R, C), seed=R)
        out = d.run("rmsnorm", **inputs)
        assert lanemap.check_outputs(k, inputs, out)["mismatches"] == 0
        assert d.last == d.lookup("rmsnorm", R, C)
    assert d.lookup("rmsnorm", 64, 4096)["match"] == "exact"
    assert d.lookup("rmsnorm", 3, 65)["match"] == "fallback"
    with pytest.raises(lanemap.InputError, match="no kernel"):
        d.run("layernorm")
    assert d.compile_ms() > 0


def test_tune_resumes_from_its_records(kernel_path, tmp_path):
    w = lanemap.Workload()
    ki = w.add_kernel(kernel_path("rmsnorm"))
    w.add_bucket(ki, 8, 256, 1.0)
    w.add_bucket(ki, 64, 96, 1.0)
    w.set_isas(["avx2"])
    w.bind()
    records = tmp_path / "r.jsonl"
    seen = []
    first = lanemap.tune(w, measure=2, profiles="default", records=records,
                         samples=3, sample_ms=0.5, warmup_ms=2,
                         progress=lambda d, t, what: seen.append((d, t)))
    assert first.buckets == 2 and first.measured_buckets == 2
    assert first.measured >= 4 and first.failed == 0
    assert seen and seen[-1][0] == seen[-1][1] == 2
    again = lanemap.tune(w, measure=2, profiles="default", records=records,
                         samples=3, sample_ms=0.5, warmup_ms=2,
                         progress=False)
    assert again.resumed_buckets == 2 and again.measured == 0
    # the same picks; costs read back from records (s) within rounding
    picks = lambda plan: [[b["variant"] for b in k["buckets"]]
                          for k in plan.kernels]
    assert picks(again.plan) == picks(first.plan)
    assert again.plan.objective == pytest.approx(first.plan.objective,
                                                 rel=1e-12)
    rows = lanemap.read_records(records)
    assert len(rows) == first.measured
    assert {r["source"] for r in rows} == {"lanemap tune"}
    assert all(r["verified"] is True and r["median"] > 0 for r in rows)
    best = lanemap.read_records(records, best=True)
    assert len(best) == 2
    # the CLI reads the same records
    cli_rows = tmp_path / "r.jsonl"
    assert cli_rows.read_text().count("\n") == len(rows)


def test_a_tqdm_bar_appears_when_tqdm_is_installed(kernel_path, monkeypatch):
    """progress=None draws a tqdm bar when tqdm imports; a stand-in module
    records what the bar was told (Debian's python3-tqdm is optional)."""
    import sys
    import types
    bars = []

    class Bar:
        def __init__(self, total, desc, file, leave):
            self.total, self.desc, self.n, self.closed = total, desc, 0, False
            self.posts = []
            bars.append(self)

        def reset(self, total):
            self.total = total

        def set_postfix_str(self, s, refresh=True):
            self.posts.append(s)

        def refresh(self):
            pass

        def close(self):
            self.closed = True

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=Bar))
    w = lanemap.Workload()
    w.add_bucket(w.add_kernel(kernel_path("rmsnorm")), 8, 64)
    w.set_isas(["avx2"])
    lanemap.tune(w, measure=1, profiles="default", samples=3, sample_ms=0.2,
                 warmup_ms=1)
    assert len(bars) == 1 and bars[0].desc == "tune" and bars[0].closed
    assert bars[0].total == 1 and bars[0].n == 1 and bars[0].posts


def test_progress_errors_surface(kernel_path):
    w = lanemap.Workload()
    ki = w.add_kernel(kernel_path("rmsnorm"))
    w.add_bucket(ki, 8, 64, 1.0)
    w.set_isas(["avx2"])
    w.bind()

    def boom(done, total, what):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        lanemap.tune(w, measure=1, profiles="default", samples=3,
                     sample_ms=0.2, warmup_ms=1, progress=boom)


def test_solve_binds_a_workload_built_in_code(kernel_path):
    w = lanemap.Workload()
    w.add_bucket(w.add_kernel(kernel_path("rmsnorm")), 8, 64)
    w.set_isas(["avx2"])
    plan = lanemap.solve(w, profiles="default")  # no bind() first
    assert plan.kernels[0]["buckets"][0]["R"] == 8


def test_records_keep_line_separators_inside_strings(tmp_path):
    rec = {"schema": "lanemap.record/1", "kernel": "a\u2028b\u0085c",
           "kernel_hash": "0123456789abcdef", "shape": [1, 2],
           "variant": "x86-64-v3/w8/l8/t1", "isa": "x86-64-v3",
           "median": 1e-6, "times": [1e-6]}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(rec, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    rows = lanemap.read_records(path)
    assert len(rows) == 1 and rows[0]["kernel"] == "a\u2028b\u0085c"


def test_bad_records(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema": "lanemap.record/1", "kernel": 3}\n')
    with pytest.raises(lanemap.InputError, match="bad.jsonl:1"):
        lanemap.read_records(bad)
    with pytest.raises(lanemap.InputError):
        lanemap.read_records(tmp_path / "missing.jsonl")
