"""Profiles, calibration and evaluate."""
import json
import os

import pytest

import lanemap


def test_default_profile_round_trip(tmp_path):
    p = lanemap.Profile.default("avx2")
    assert p.isa == "x86-64-v3" and p.mode == "default"
    assert len(p.fingerprint["hash"]) == 16
    assert "vop" in p.terms and p.terms["vop"]["coef"] > 0
    p.save(tmp_path / "p.json")
    q = lanemap.Profile.load(tmp_path / "p.json")
    assert q.to_json() == p.to_json()
    assert q.warning == ""


def test_bad_profiles(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "lanemap.profile/1"}))
    with pytest.raises(lanemap.InputError, match="bad.json"):
        lanemap.Profile.load(bad)
    with pytest.raises(lanemap.InputError):
        lanemap.Profile.load(tmp_path / "missing.json")
    # the test's own cache is empty
    with pytest.raises(lanemap.InputError, match="calibrate"):
        lanemap.Profile.cached("avx2")


def test_calibrate_checks_where_it_writes_first():
    import time
    t0 = time.perf_counter()
    with pytest.raises(lanemap.SysError, match="/nonexistent/dir"):
        lanemap.calibrate("avx2", path="/nonexistent/dir/p.json",
                          progress=False)
    assert time.perf_counter() - t0 < 2  # refused before calibrating


def test_calibrate_quick_and_predict_with_it(cli, kernel_path, tmp_path):
    """A quick calibration, then predictions with the fitted profile (with
    its bootstrap interval) equal to the CLI's with the same file."""
    steps = []
    prof = lanemap.calibrate("avx2", quick=True, path=tmp_path / "q.json",
                             accept_noisy=True,
                             progress=lambda d, t, w: steps.append(d))
    assert prof.mode == "quick" and steps
    assert os.path.exists(prof.path)
    path = kernel_path("layernorm")
    rows = cli.jsonl("predict", path, "--shape", "17,300", "--isa", "avx2",
                     "--profile", prof.path, "--accept-noisy", "--json",
                     "--explain")
    k = lanemap.Kernel.load(path)
    got = {p["variant"]: p for p in k.predict(
        "17,300", profile=lanemap.Profile.load(prof.path, accept_noisy=True),
        explain=True, isa="avx2")}
    for r in rows:
        p = got[r["variant"]]
        assert (p["predicted_ns"], p["p5_ns"], p["p95_ns"]) == \
            (r["predicted_ns"], r["p5_ns"], r["p95_ns"])
        assert p["terms"] == r["terms"]


def test_evaluate_two_cases(tmp_path, source_dir):
    cases = {"schema": "lanemap.cases/1", "cases": [
        {"id": "rmsnorm-9x40",
         "kernel": os.path.join(source_dir, "kernels", "rmsnorm.lk"),
         "shape": [9, 40]},
        {"id": "swiglu-3x64",
         "kernel": os.path.join(source_dir, "kernels", "swiglu.lk"),
         "shape": [3, 64]}]}
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    lanemap.Profile.default("avx2").save(tmp_path / "p.json")
    seen = []
    res = lanemap.evaluate(tmp_path / "out", cases=tmp_path / "cases.json",
                           isa=["avx2"], quick=True, cross=False,
                           profile=tmp_path / "p.json", accept_noisy=True,
                           progress=lambda d, t, w: seen.append(w))
    assert res["cases"] == 2 and res["failures"] == 0
    t = res["targets"][0]
    assert t["isa"] == "x86-64-v3" and t["ncases"] == 2
    assert t["stats"]["plan"]["n"] == 2
    assert seen and res["notes"]
    assert (tmp_path / "out" / "report.md").exists()
    rows = lanemap.read_records(tmp_path / "out" / "x86-64-v3" /
                                "records.jsonl")
    assert {r["case"] for r in rows} == {"rmsnorm-9x40", "swiglu-3x64"}
    again = lanemap.evaluate(tmp_path / "out", cases=tmp_path / "cases.json",
                             isa=["avx2"], quick=True, cross=False,
                             profile=tmp_path / "p.json", accept_noisy=True,
                             progress=False)
    assert again["targets"][0]["measured"] == 0


def one_case(tmp_path, source_dir, kernel, R, C):
    """tmp_path/cases.json with one suite kernel at R x C, and the avx2
    default profile as tmp_path/p.json."""
    cases = {"schema": "lanemap.cases/1", "cases": [
        {"id": "%s-%dx%d" % (kernel, R, C),
         "kernel": os.path.join(source_dir, "kernels", kernel + ".lk"),
         "shape": [R, C]}]}
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    lanemap.Profile.default("avx2").save(tmp_path / "p.json")


def test_evaluate_all_splits_times_every_verified_variant(tmp_path,
                                                         source_dir):
    one_case(tmp_path, source_dir, "swiglu", 40, 64)
    res = lanemap.evaluate(tmp_path / "out", cases=tmp_path / "cases.json",
                           isa=["avx2"], quick=True, cross=False,
                           profile=tmp_path / "p.json", accept_noisy=True,
                           all_splits=True, progress=False)
    assert res["failures"] == 0
    rows = lanemap.read_records(tmp_path / "out" / "x86-64-v3" /
                                "records.jsonl")
    assert any("/dyn16" in r["variant"] for r in rows)
    assert all((r.get("median") or 0) > 0
               for r in rows if r.get("verified") is True)
    assert "## Split pruning" in (tmp_path / "out" / "x86-64-v3" /
                                  "report.md").read_text()


def test_evaluate_relaxed_judges_the_relaxed_variants(tmp_path, source_dir):
    one_case(tmp_path, source_dir, "rmsnorm", 9, 40)
    with pytest.raises(lanemap.InputError, match="fp"):
        lanemap.evaluate(tmp_path / "bad", cases=tmp_path / "cases.json",
                         isa=["avx2"], quick=True, fp="fast", progress=False)
    res = lanemap.evaluate(tmp_path / "out", cases=tmp_path / "cases.json",
                           isa=["avx2"], quick=True, cross=False,
                           profile=tmp_path / "p.json", accept_noisy=True,
                           fp="relaxed", progress=False)
    assert res["failures"] == 0
    rows = lanemap.read_records(tmp_path / "out" / "x86-64-v3" /
                                "records.jsonl")
    assert rows and all("/fp=relaxed/" in r["variant"] for r in rows)
    assert all(r["protocol"].endswith(" fp=relaxed") for r in rows)
    assert "**relaxed**" in (tmp_path / "out" / "x86-64-v3" /
                             "report.md").read_text()


def test_deploy_two_kernels(tmp_path, source_dir):
    spec = {"schema": "lanemap.deploy/1", "seed": 3, "shapes": 2,
            "quick_shapes": 2, "buckets": 3, "quick_max_elements": 65536,
            "kernels": [
                {"kernel": os.path.join(source_dir, "kernels", "rmsnorm.lk"),
                 "C": [256], "R": [1, 1024]},
                {"kernel": os.path.join(source_dir, "kernels", "swiglu.lk"),
                 "C": [96], "R": [1, 512]}]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    lanemap.Profile.default("avx2").save(tmp_path / "p.json")
    res = lanemap.deploy(tmp_path / "out", spec=tmp_path / "spec.json",
                         budgets=[1, 0], isa="avx2", quick=True,
                         profile=tmp_path / "p.json", accept_noisy=True,
                         progress=False)
    assert res["kernels"] == 2 and res["shapes"] == 4
    assert res["failures"] == 0 and res["dispatched"] == 8
    plan = [r for r in res["rows"] if r["policy"] == "plan"]
    assert [r["budget"] for r in plan] == [1, 0]
    # the oracle bounds the plan when no pick was timed contended
    assert all(r["workload_oracle"] >= -1e-9 for r in plan
               if r["left_out"] == 0)
    assert (tmp_path / "out" / "deploy.md").exists()
    with pytest.raises(lanemap.InputError, match="twice"):
        lanemap.deploy(tmp_path / "o2", spec=tmp_path / "spec.json",
                       budgets=[2, 2], progress=False)
    assert os.path.exists(lanemap.bundled_deploy_spec())


def test_evaluate_bad_input(tmp_path):
    with pytest.raises(lanemap.InputError):
        lanemap.evaluate(tmp_path / "out", cases=tmp_path / "none.json",
                         progress=False)
    assert os.path.exists(lanemap.bundled_cases())
