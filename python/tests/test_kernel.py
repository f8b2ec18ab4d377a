"""Kernels, variants, predictions, compiled variants and the oracle,
checked against the CLI on the same inputs."""
import os

import numpy as np
import pytest

import lanemap

ISA = "avx512"

# An f64 kernel, so that every element type the oracle writes is covered.
F64_SOURCE = """\
kernel scale64(x: f64[R, C], g: f64[C], eps: f64 = 1e-6) -> (y: f64[R, C]) {
  ms = sum(x[r, :] * x[r, :]) / C
  y[r, :] = x[r, :] * rsqrt(ms + eps) * g[:]
}
"""


def isa_for_machine():
    """The widest ISA target this machine runs, by the CLI's names."""
    return ISA if lanemap.lib.lm_isa_runnable(lanemap.lib.LM_ISA_AVX512) \
        else "avx2"


def test_load_and_facts(kernel_path):
    k = lanemap.Kernel.load(kernel_path("rmsnorm"))
    assert k.name == "rmsnorm"
    assert k.symbols == ["R", "C"]
    names = [(p.name, p.kind, p.is_output) for p in k.params]
    assert names == [("x", "buffer", False), ("g", "buffer", False),
                     ("eps", "scalar", False), ("y", "buffer", True)]
    assert len(k.hash) == 16
    assert lanemap.Kernel.parse(k.source()).hash == k.hash
    assert "rmsnorm" in k.ir()


def test_bad_source_names_the_place(tmp_path):
    bad = tmp_path / "bad.lk"
    bad.write_text("kernel bad(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                   "  y[r, :] = nope(x[r, :])\n}\n")
    with pytest.raises(lanemap.InputError) as e:
        lanemap.Kernel.check(bad)
    assert e.value.status == 2
    assert str(e.value).startswith(str(bad) + ":2:")
    with pytest.raises(lanemap.InputError):
        lanemap.Kernel.load(tmp_path / "missing.lk")


def test_variants_match_the_cli(cli, kernel_path):
    isa = isa_for_machine()
    for name in ("rmsnorm", "masked_softmax"):
        path = kernel_path(name)
        k = lanemap.Kernel.load(path)
        rows = cli.jsonl("predict", path, "--shape", "33,127", "--isa", isa,
                         "--default-profile", "--json")
        assert sorted(k.variants(isa)) == sorted(r["variant"] for r in rows)


@pytest.mark.parametrize("name,shape", [("rmsnorm", "33,127"),
                                        ("layernorm", "1,4096"),
                                        ("ragged_softmax", "17,65"),
                                        ("swiglu", "100,96")])
def test_predictions_equal_the_cli(cli, kernel_path, name, shape):
    """Every variant's prediction and per-term breakdown, bit for bit."""
    isa = isa_for_machine()
    path = kernel_path(name)
    rows = cli.jsonl("predict", path, "--shape", shape, "--isa", isa,
                     "--default-profile", "--json", "--explain")
    k = lanemap.Kernel.load(path)
    got = {p["variant"]: p for p in k.predict(shape, profile="default",
                                              explain=True, isa=isa)}
    assert len(got) == len(rows)
    for r in rows:
        p = got[r["variant"]]
        assert (p["predicted_ns"], p["p5_ns"], p["p95_ns"]) == \
            (r["predicted_ns"], r["p5_ns"], r["p95_ns"]), r["variant"]
        assert p["terms"] == r["terms"], r["variant"]
    one = k.predict(shape, rows[0]["variant"], profile="default")
    assert one["predicted_ns"] == rows[0]["predicted_ns"]
    assert "terms" not in one


def _load_dump(folder):
    return {f[:-4]: np.load(os.path.join(folder, f))
            for f in os.listdir(folder) if f.endswith(".npy")}


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("name,shape", [("rmsnorm", "5,33"),
                                        ("masked_softmax", "7,100"),
                                        ("ragged_softmax", "9,40"),
                                        ("cross_entropy", "6,50")])
def test_oracle_and_inputs_equal_the_cli(cli, kernel_path, tmp_path, name,
                                         shape):
    path = kernel_path(name)
    cli.run("oracle", path, "--shape", shape, "--seed", 7, "--dump", tmp_path)
    dumped = _load_dump(tmp_path)
    k = lanemap.Kernel.load(path)
    inputs = k.inputs(shape, seed=7)
    for p in k.params:
        if p.kind == "buffer" and not p.is_output:
            assert inputs[p.name].dtype == dumped[p.name].dtype
            assert np.array_equal(_bits(inputs[p.name]),
                                  _bits(dumped[p.name])), p.name
    want, written = lanemap.oracle(k, inputs, written=True)
    for name_out in k.output_names:
        assert want[name_out].dtype == np.float64
        assert np.array_equal(_bits(want[name_out]),
                              _bits(dumped[name_out])), name_out
        assert written[name_out].dtype == np.bool_


VARIANTS = {
    "rmsnorm": ["x86-64-v3/w8/l8/phase=reread/t1",
                "x86-64-v3/w8/l1/priv=slot/glob=transpose/phase=snapshot/t1",
                "x86-64-v3/w8/l8/phase=reread/t2/g16"],
    "ragged_softmax": None,  # every legal x86-64-v3 variant, t1
    "swiglu": ["x86-64-v3/w8/l1/glob=gather/t1", "x86-64-v3/w8/l4/glob=transpose/t1"],
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_outputs_equal_the_cli(cli, kernel_path, tmp_path, name):
    """A variant run here and by `lanemap run` writes the same bits."""
    path = kernel_path(name)
    k = lanemap.Kernel.load(path)
    shape = "13,70"
    variants = VARIANTS[name] or k.variants("avx2")
    inputs = k.inputs(shape, seed=3)
    for v in variants:
        folder = tmp_path / v.replace("/", "_")
        cli.run("run", path, "--shape", shape, "--variant", v, "--seed", 3,
                "--verify", "--dump", folder)
        dumped = _load_dump(folder)
        out = k.compile(v)(**inputs)
        for o in k.output_names:
            assert np.array_equal(_bits(out[o]), _bits(dumped[o])), (v, o)
        assert lanemap.check_outputs(k, inputs, out)["mismatches"] == 0


def test_f64_kernel_and_given_outputs():
    k = lanemap.Kernel.parse(F64_SOURCE, "scale64.lk")
    x = np.random.default_rng(1).standard_normal((10, 37))
    g = np.linspace(0.5, 1.5, 37)
    y = np.zeros((10, 37))
    variant = k.variants("avx2")[0]
    out = k.compile(variant)(x=x, g=g, y=y)
    assert out["y"] is y
    want = lanemap.oracle(k, {"x": x, "g": g})["y"]
    ref = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * g
    assert np.allclose(want, ref, rtol=1e-12, atol=1e-12)
    assert lanemap.check_outputs(k, {"x": x, "g": g}, {"y": y})[
        "mismatches"] == 0
    y[3, 4] += 1e-3
    res = lanemap.check_outputs(k, {"x": x, "g": g}, {"y": y})
    assert res["mismatches"] == 1 and res["first_param"] == "y"


@pytest.fixture(scope="module")
def rmsnorm(kernel_path):
    k = lanemap.Kernel.load(kernel_path("rmsnorm"))
    return k, k.compile("x86-64-v3/w8/l8/phase=reread/t1")


def test_bad_arrays_raise_before_any_c_call(rmsnorm):
    k, c = rmsnorm
    x = np.ones((4, 16), np.float32)
    g = np.ones(16, np.float32)
    cases = [
        (dict(x=x.astype(np.float64), g=g), "dtype"),
        (dict(x=np.ones((4, 32), np.float32)[:, ::2], g=g), "C-contiguous"),
        (dict(x=x, g=g, y=x), "share memory"),
        (dict(x=x, g=np.ones(15, np.float32)), "disagrees"),
        (dict(x=x, g=g, y=np.ones((4, 15), np.float32)), "disagrees"),
        (dict(x=x, g=g, y=np.ones((3, 16), np.float32)), "disagrees"),
        (dict(x=x, g=g, y=np.ones(64, np.float32)), "2-D"),
        (dict(x=x.tolist(), g=g), "2-D array"),
        (dict(g=g), "missing"),
        (dict(x=x, g=None), "missing"),
        (dict(x=x, g=g, eps=True), "expected a number"),
        (dict(x=x, g=g, z=g), "no parameter named z"),
        (dict(x=x, g=g, eps="small"), "expected a number"),
        (dict(x=np.ones((0, 16), np.float32), g=g), "positive"),
    ]
    for arrays, words in cases:
        with pytest.raises(lanemap.InputError, match=words):
            c(**arrays)
    ro = np.zeros((4, 16), np.float32)
    ro.flags.writeable = False
    with pytest.raises(lanemap.InputError, match="read-only"):
        c(x=x, g=g, y=ro)
    # a view into a bigger buffer that overlaps an input is aliasing too
    big = np.zeros((8, 16), np.float32)
    with pytest.raises(lanemap.InputError, match="share memory"):
        c(x=big[:4], g=g, y=big[2:6])
    with pytest.raises(lanemap.InputError):
        lanemap.oracle(k, dict(x=x.astype(np.float16), g=g))
    assert c(x=x, g=g)["y"].shape == (4, 16)


def test_bad_variants_and_shapes(rmsnorm):
    k, _ = rmsnorm
    with pytest.raises(lanemap.InputError, match="variant"):
        k.compile("x86-64-v3/w7/l8/t1")
    with pytest.raises(lanemap.InputError):
        k.predict("33,127", "x86-64-v3/w8/l8/t1", profile="default")
    with pytest.raises(lanemap.InputError):
        k.shape("0,4")
    with pytest.raises(lanemap.InputError):
        k.shape(("a", 4))
    with pytest.raises(lanemap.InputError):
        k.variants("avx9000")
    assert k.shape((33, 127)).dims == {"R": 33, "C": 127}


def test_relaxed_variants_are_offered_only_when_asked(rmsnorm):
    k, _ = rmsnorm
    strict = k.variants("avx2")
    relaxed = k.variants("avx2", fp="relaxed")
    assert not any("/fp=relaxed/" in v for v in strict)
    assert len(relaxed) == len(strict)
    assert all("/fp=relaxed/" in v for v in relaxed)
    assert len(k.variants("avx2", fp="both")) == 2 * len(strict)
    p = k.predict("33,127", relaxed[0], profile="default")
    assert p["predicted_ns"] > 0
    with pytest.raises(lanemap.InputError, match="fp"):
        k.variants("avx2", fp="fast")


def test_constants_keep_their_types():
    assert lanemap.lib.LM_BOOTSTRAP_SEED == 0x6c616e656d6170
    assert isinstance(lanemap.lib.LM_BOOTSTRAP_SEED, int)
    assert lanemap.lib.LM_SETTLE_ALPHA == 0.2


def test_compiled_facts(rmsnorm):
    k, c = rmsnorm
    assert c.variant == "x86-64-v3/w8/l8/phase=reread/t1"
    assert c.compile_ms > 0
    assert c.counts["emit_glob_vector_loads"] > 0
    assert c.llvm_ir is None
    with_ir = k.compile(c.variant, ir=True)
    assert "define" in with_ir.llvm_ir
