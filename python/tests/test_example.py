"""examples/python/pipeline.py runs end to end: tune the transformer
workload (top 1, short timing, the named defaults), write the plan, serve
random shapes through its dispatch, each checked against the oracle; and a
second run resumes every bucket from the records."""
import os
import subprocess
import sys


def test_pipeline_example(source_dir, tmp_path):
    script = os.path.join(source_dir, "examples", "python", "pipeline.py")
    cmd = [sys.executable, script, "--out", str(tmp_path), "--measure", "1",
           "--samples", "3", "--sample-ms", "1", "--default-profile",
           "--shapes", "3", "--seed", "5"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("tune: 96 buckets (96 measured, 0 resumed)")
    assert os.path.exists(tmp_path / "plan.json")
    served = [l for l in lines if " us  " in l]
    assert len(served) == 6 * 3, r.stdout
    assert lines[-1] == "ok: 0 shape(s) failed the oracle check"
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.startswith("tune: 96 buckets (0 measured, "
                                   "96 resumed)")


def test_pipeline_example_bad_input(source_dir, tmp_path):
    script = os.path.join(source_dir, "examples", "python", "pipeline.py")
    bad = tmp_path / "w.json"
    bad.write_text('{"schema": "lanemap.workload/1", "kernels": 3}')
    r = subprocess.run([sys.executable, script, str(bad), "--out",
                        str(tmp_path / "o")], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.startswith("pipeline: " + str(bad))
