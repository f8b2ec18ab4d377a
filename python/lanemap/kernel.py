"""Kernels, their variants and predictions, compiled variants run on NumPy
arrays, and the FP64 oracle."""
import numbers
import os
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, \
    Tuple, Union

import numpy as np

from ._core import InputError, SysError, call, check, ffi, lib, new_error, \
    path_bytes, take_text, text, to_python

_NP = {
    lib.LM_F32: np.dtype(np.float32),
    lib.LM_F64: np.dtype(np.float64),
    lib.LM_I32: np.dtype(np.int32),
    lib.LM_BOOL: np.dtype(np.bool_),
}

ShapeLike = Union["Shape", str, Tuple[int, int], Tuple[int, int, str],
                  Tuple[int, int, Mapping[str, int]]]


class Param(NamedTuple):
    """One parameter of a kernel, as declared in its source."""

    name: str
    kind: str            #: "buffer" or "scalar"
    dtype: np.dtype      #: NumPy element type
    is_output: bool
    rank: int            #: buffers: 1 or 2; scalars: 0
    default: Optional[float]  #: scalars with a default value


def isa_value(isa):
    """An ISA name ("host", "avx512", "x86-64-v3", ...) as lm_isa."""
    out = ffi.new("lm_isa *")
    call(lib.lm_isa_parse, isa.encode(), out)
    return out[0]


def isa_name(value):
    return text(lib.lm_isa_name(value))


def parse_variant(variant):
    """A variant string as an lm_variant (syntax only)."""
    v = ffi.new("lm_variant *")
    try:
        call(lib.lm_variant_parse, variant.encode(), v)
    except InputError as e:
        if e.message.startswith("variant '"):
            raise
        raise InputError("variant '%s': %s" % (variant, e.message)) from None
    return v


def format_variant(v):
    buf = ffi.new("char[128]")
    lib.lm_variant_format(v, buf, 128)
    return ffi.string(buf).decode()


class Shape:
    """A shape bound to a kernel: the value of every symbol.  ``R`` is the
    instance count, ``C`` the columns of the kernel's first 2-D buffer."""

    def __init__(self, kernel: "Kernel", cshape):
        self.kernel = kernel
        self._c = ffi.new("lm_shape *", cshape[0])

    @property
    def dims(self) -> Dict[str, int]:
        """Every symbol's value, by name."""
        k = self.kernel._k
        return {text(k.syms[i]): int(self._c.dims[i])
                for i in range(k.nsyms)}

    @property
    def R(self) -> int:
        """The instance count."""
        return int(self._c.dims[0])

    @property
    def C(self) -> int:
        """The columns of the kernel's first 2-D buffer."""
        k = self.kernel._k
        for p in range(k.nparams):
            pa = k.params[p]
            if pa.kind == lib.LM_PARAM_BUFFER and pa.rank == 2:
                return int(lib.lm_dim_eval(pa.dims[1], self._c))
        return int(lib.lm_dim_eval(k.ncols, self._c))

    def extra(self) -> str:
        """The symbols besides R and the column one, as "H=33,K=4"."""
        k = self.kernel._k
        return ",".join("%s=%d" % (text(k.syms[i]), self._c.dims[i])
                        for i in range(1, k.nsyms) if i != k.col_sym)

    def __repr__(self):
        return "Shape(%s)" % ", ".join("%s=%d" % kv
                                       for kv in self.dims.items())


class Kernel:
    """A parsed and checked kernel (``lm_kernel``)."""

    def __init__(self, ptr):
        self._k = ffi.gc(ptr, lib.lm_kernel_free)
        self._params = None

    @classmethod
    def _borrowed(cls, ptr, owner):
        """A kernel owned by another object (a dispatch), kept alive by
        this one."""
        self = cls.__new__(cls)
        self._k = ptr
        self._params = None
        self._owner = owner
        return self

    # ---- loading --------------------------------------------------------

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "Kernel":
        """Read, parse and check a ``.lk`` file.  A bad source raises
        InputError with ``file:line:col: error: ...``."""
        out = ffi.new("lm_kernel **")
        call(lib.lm_kernel_load, path_bytes(path), out)
        return cls(out[0])

    @classmethod
    def parse(cls, source: str, name: str = "<string>") -> "Kernel":
        """Parse and check kernel source text; ``name`` stands for the
        file in messages."""
        data = source.encode()
        out = ffi.new("lm_kernel **")
        call(lib.lm_kernel_parse, name.encode(), data, len(data), out)
        return cls(out[0])

    @staticmethod
    def check(path: Union[str, os.PathLike]) -> None:
        """Check a kernel file as ``lanemap check FILE`` does: returns
        None when it is valid, raises InputError naming
        ``file:line:col`` otherwise."""
        Kernel.load(path)

    # ---- facts ----------------------------------------------------------

    @property
    def name(self) -> str:
        """The kernel's name, as declared in its source."""
        return text(self._k.name)

    @property
    def file(self) -> str:
        """The source path (messages name it)."""
        return text(self._k.file)

    @property
    def symbols(self) -> List[str]:
        """Symbol names; the first is R, the instance count."""
        return [text(self._k.syms[i]) for i in range(self._k.nsyms)]

    @property
    def params(self) -> List[Param]:
        """The parameters in declaration order (computed once: a kernel
        never changes)."""
        if self._params is None:
            self._params = self._read_params()
        return list(self._params)

    def _read_params(self) -> List[Param]:
        out = []
        for i in range(self._k.nparams):
            p = self._k.params[i]
            buf = p.kind == lib.LM_PARAM_BUFFER
            out.append(Param(text(p.name), "buffer" if buf else "scalar",
                             _NP[p.dtype], bool(p.is_output), int(p.rank),
                             float(p.defval) if p.has_default else None))
        return out

    @property
    def input_names(self) -> List[str]:
        """The input parameters (buffers and scalars), in order."""
        return [p.name for p in self.params if not p.is_output]

    @property
    def output_names(self) -> List[str]:
        """The output buffers, in order."""
        return [p.name for p in self.params if p.is_output]

    @property
    def hash(self) -> str:
        """Content hash of the printed kernel (16 hex digits)."""
        buf = ffi.new("char[17]")
        lib.lm_kernel_hash(self._k, buf)
        return ffi.string(buf).decode()

    def source(self) -> str:
        """The kernel in .lk syntax (re-parses to the same IR)."""
        return _need(take_text(lib.lm_kernel_print(self._k)))

    def ir(self) -> str:
        """The IR listing with the checker's facts (``--print-ir``)."""
        return _need(take_text(lib.lm_kernel_dump(self._k)))

    def __repr__(self):
        return "Kernel(%r, %r)" % (self.name, self.file)

    # ---- shapes ---------------------------------------------------------

    def shape(self, shape: ShapeLike) -> Shape:
        """Bind a shape: a Shape, "R,C" or "RxC" (with ",H=33" for other
        symbols), (R, C), or (R, C, extra) with extra "H=33" or a dict."""
        if isinstance(shape, Shape):
            if shape.kernel._k != self._k:
                return self.shape((shape.R, shape.C, shape.extra()))
            return shape
        out = ffi.new("lm_shape *")
        if isinstance(shape, str):
            call(lib.lm_shape_parse, self._k, shape.encode(), out)
            return Shape(self, out)
        try:
            R, C, *rest = shape
        except (TypeError, ValueError):
            raise InputError("shape: expected (R, C), (R, C, extra) or "
                             "'R,C', got %r" % (shape,)) from None
        extra = rest[0] if rest else None
        if isinstance(extra, Mapping):
            extra = ",".join("%s=%d" % kv for kv in extra.items())
        if not all(isinstance(x, (int, np.integer)) for x in (R, C)):
            raise InputError("shape: R and C must be integers, got %r"
                             % (shape,))
        call(lib.lm_shape_bind, self._k, int(R), int(C),
             extra.encode() if extra else ffi.NULL, out)
        return Shape(self, out)

    def _shape_from_arrays(self, arrays: Mapping[str, np.ndarray]) -> Shape:
        """The shape the given buffers imply, every symbol solved from the
        buffers' extents and checked against each other."""
        k = self._k
        vals: Dict[int, Tuple[int, str]] = {}
        for i in range(k.nparams):
            p = k.params[i]
            name = text(p.name)
            a = arrays.get(name)
            if p.kind != lib.LM_PARAM_BUFFER or a is None:
                continue
            if not hasattr(a, "ndim") or a.ndim != p.rank:
                raise InputError("%s: expected a %d-D array, got %s" % (
                    name, p.rank, _describe(a)))
            for d in range(p.rank):
                dim = p.dims[d]
                ext = int(a.shape[d])
                if dim.sym < 0:
                    if ext != dim.coef:
                        raise InputError("%s: dim %d must be %d, got %d" % (
                            name, d, dim.coef, ext))
                    continue
                if ext % dim.coef or ext <= 0:
                    raise InputError(
                        "%s: dim %d is %d, not a positive multiple of %d" % (
                            name, d, ext, dim.coef))
                v = ext // dim.coef
                prior = vals.get(dim.sym)
                if prior and prior[0] != v:
                    raise InputError(
                        "%s: %s = %d disagrees with %s, which gives %d" % (
                            name, text(k.syms[dim.sym]), v, prior[1],
                            prior[0]))
                vals[dim.sym] = (v, name)
        missing = [text(k.syms[s]) for s in range(k.nsyms) if s not in vals]
        if missing:
            raise InputError("cannot tell %s from the arrays given; pass "
                             "the buffers that have them" %
                             ", ".join(missing))
        shape = ffi.new("lm_shape *")
        shape.nsyms = k.nsyms
        for s, (v, _) in vals.items():
            shape.dims[s] = v
        # lm_shape_bind checks every extent and size; bind (R, C, extra)
        tmp = Shape(self, shape)
        return self.shape((tmp.R, tmp.C, tmp.extra()))

    # ---- variants and predictions ---------------------------------------

    def variants(self, isa: str = "host", workers: Sequence[int] = (1,),
                 grains: Sequence[int] = (), fp: str = "strict") -> List[str]:
        """Every legal variant for an ISA target ("host", "avx512",
        "x86-64-v3", ...), with the worker counts given, in the library's
        stable order.  Worker counts above 1 come with the default splits
        (static, dyn2, dyn4, dyn8, dyn16); ``grains`` (in packets) adds
        fixed-grain gG splits.  ``fp`` is "strict" (the default),
        "relaxed" (the fp=relaxed variants where relaxed mode changes the
        kernel, else the strict ones) or "both"."""
        modes = {"strict": 1 << lib.LM_FP_STRICT,
                 "relaxed": 1 << lib.LM_FP_RELAXED,
                 "both": 1 << lib.LM_FP_STRICT | 1 << lib.LM_FP_RELAXED}
        if fp not in modes:
            raise InputError("fp: expected 'strict', 'relaxed' or 'both', got %r"
                             % (fp,))
        o = ffi.new("lm_enum_opts *")
        lib.lm_enum_defaults(o)
        o.isa = isa_value(isa)
        o.fps = modes[fp]
        _fill_list(o.workers, workers, "workers")
        if grains:
            _fill_list(o.grains, grains, "grains")
        out = ffi.new("lm_variant **")
        err = new_error()
        n = lib.lm_variant_enumerate(self._k, o, out, err)
        if n < 0:
            check(err.status or lib.LM_EINPUT, err)
        try:
            return [format_variant(out[0] + i) for i in range(n)]
        finally:
            lib.free(out[0])

    def check_variant(self, variant: str) -> None:
        """Raise InputError with the reason when the variant is not legal
        for this kernel."""
        call(lib.lm_variant_check, self._k, parse_variant(variant))

    def predict(self, shape: ShapeLike, variant: Optional[str] = None,
                profile=None, explain: bool = False, isa: str = "host",
                fp: str = "strict"):
        """Predicted time of one launch, in ns.

        With ``variant``, one prediction; without, every legal variant of
        ``isa``, fastest first (``lanemap predict``).  ``profile`` is a
        Profile, a path, "default" for the uncalibrated named defaults, or
        None for this machine's cached profile of the ISA; ``fp`` picks the
        floating-point modes as ``variants`` does.  A prediction is
        a dict: variant, predicted_ns, p5_ns, p95_ns; with ``explain`` also
        ``terms`` ({term: {"count", "ns"}} for every term with a count, as
        ``predict --json`` prints them), compute_ns, memory_ns, fork_ns,
        join_ns (what the workers' late join adds) and memory_bound."""
        from .profile import Profile
        sh = self.shape(shape)
        names = [variant] if variant else self.variants(isa, fp=fp)
        out = []
        profiles = {}  # one per ISA target, loaded once
        for name in names:
            v = parse_variant(name)
            call(lib.lm_variant_check, self._k, v)
            isa_of = isa_name(v.isa)
            if isa_of not in profiles:
                profiles[isa_of] = Profile.resolve(profile, isa_of)
            prof = profiles[isa_of]
            pred = ffi.new("lm_prediction *")
            call(lib.lm_cost_predict, prof._p, self._k, v, sh._c, pred)
            out.append(_prediction(format_variant(v), pred, explain))
        if variant:
            return out[0]
        out.sort(key=lambda p: p["predicted_ns"])
        return out

    # ---- compiling, data and the oracle ---------------------------------

    def compile(self, variant: str, opt_level: int = 3, ir: bool = False,
                asm: bool = False) -> "Compiled":
        """Lower, optimise and JIT one variant (``lm_compile``)."""
        v = parse_variant(variant)
        if not lib.lm_isa_runnable(v.isa):
            raise InputError("variant '%s': this machine cannot run %s code"
                             % (variant, isa_name(v.isa)))
        o = ffi.new("lm_compile_opts *")
        lib.lm_compile_defaults(o)
        o.opt_level = opt_level
        o.want_ir = int(ir)
        o.want_asm = int(asm)
        out = ffi.new("lm_compiled **")
        call(lib.lm_compile, self._k, v, o, out)
        return Compiled(self, out[0])

    def inputs(self, shape: ShapeLike, seed: int = 1) -> Dict[str, object]:
        """The seeded inputs the CLI and the harness use for this shape
        (``lm_data_gen``): one array per input buffer, and each scalar's
        value."""
        sh = self.shape(shape)
        out = ffi.new("lm_data **")
        call(lib.lm_data_gen, self._k, sh._c, seed, out)
        d = ffi.gc(out[0], lib.lm_data_free)
        res = {}
        for p, info in enumerate(self.params):
            if info.is_output:
                continue
            if info.kind == "scalar":
                res[info.name] = float(d.scalar[p])
            else:
                res[info.name] = _buffer_copy(d, p, info, sh)
        return res


def _need(text_or_none):
    """A string a C call returned, or SysError when it returned NULL (the
    only reason it does is memory)."""
    if text_or_none is None:
        raise SysError("out of memory")
    return text_or_none


def _describe(a):
    if isinstance(a, np.ndarray):
        return "%s array of shape %s" % (a.dtype, a.shape)
    return type(a).__name__


def _fill_list(carray, values, what):
    values = list(values)
    if len(values) > len(carray):
        raise InputError("%s: at most %d values" % (what, len(carray)))
    for i in range(len(carray)):
        carray[i] = values[i] if i < len(values) else 0


def _prediction(name, pred, explain):
    d = {"variant": name, "predicted_ns": pred.ns, "p5_ns": pred.p5,
         "p95_ns": pred.p95}
    if explain:
        d["terms"] = {
            text(lib.lm_term_name(t)): {"count": pred.f.n[t],
                                        "ns": pred.term_ns[t]}
            for t in range(lib.LM_T__COUNT) if pred.f.n[t] > 0}
        d["compute_ns"] = pred.compute_ns
        d["memory_ns"] = pred.memory_ns
        d["fork_ns"] = pred.fork_ns
        d["join_ns"] = pred.join_ns
        d["memory_bound"] = bool(pred.memory_bound)
    return d


def _expected_shape(k, p, shape_c):
    pa = k._k.params[p]
    return tuple(int(lib.lm_dim_eval(pa.dims[i], shape_c))
                 for i in range(pa.rank))


def _buffer_copy(d, p, info, sh):
    n = int(d.count[p])
    raw = ffi.buffer(d.buf[p], n * info.dtype.itemsize)
    arr = np.frombuffer(raw, dtype=info.dtype).copy()
    return arr.reshape(_expected_shape(sh.kernel, p, sh._c))


class _Launch:
    """An lm_data over the caller's arrays: inputs checked, outputs checked
    or allocated (filled with the sentinel byte, so elements a kernel does
    not write -- past a ragged row's end -- are recognisable)."""

    def __init__(self, kernel: Kernel, arrays: Mapping[str, object]):
        k = kernel._k
        params = kernel.params
        known = {p.name for p in params}
        unknown = sorted(set(arrays) - known)
        if unknown:
            raise InputError("%s: no parameter named %s (it has %s)" % (
                kernel.name, ", ".join(unknown), ", ".join(sorted(known))))
        for p in params:
            if p.kind == "buffer" and not p.is_output and \
                    arrays.get(p.name) is None:
                raise InputError("%s: input %r is missing" % (kernel.name,
                                                              p.name))
        self.shape = kernel._shape_from_arrays(arrays)
        self.kernel = kernel
        self.keep = []
        self.outputs = {}
        d = ffi.new("lm_data *")
        self.buf = ffi.new("void *[]", max(k.nparams, 1))
        self.count = ffi.new("int64_t[]", max(k.nparams, 1))
        self.scalar = ffi.new("double[]", max(k.nparams, 1))
        d.k = k
        d.shape = self.shape._c[0]
        d.buf, d.count, d.scalar = self.buf, self.count, self.scalar
        self.data = d
        given = []
        for i, p in enumerate(params):
            self.count[i] = int(lib.lm_param_count(k, i, self.shape._c))
            if p.kind == "scalar":
                value = arrays.get(p.name, p.default)
                if value is None:
                    raise InputError("%s: scalar %r has no default; pass it" %
                                     (kernel.name, p.name))
                if not isinstance(value, numbers.Real) or \
                        isinstance(value, (bool, np.bool_)):
                    raise InputError("%s: expected a number, got %r" % (
                        p.name, value))
                self.scalar[i] = float(value)
                continue
            want = _expected_shape(kernel, i, self.shape._c)
            a = arrays.get(p.name)
            if a is None:
                a = np.empty(want, dtype=p.dtype)
                a.view(np.uint8)[...] = lib.LM_SENTINEL_BYTE
            else:
                _check_array(p, a, want)
                given.append((p, a))
            if p.is_output:
                self.outputs[p.name] = a
            self.keep.append(a)
            self.buf[i] = ffi.from_buffer(a)
        _check_aliasing(given)


def _check_array(p, a, want):
    if not isinstance(a, np.ndarray):
        raise InputError("%s: expected a numpy array, got %s" % (
            p.name, type(a).__name__))
    if a.dtype != p.dtype:
        raise InputError("%s: expected dtype %s, got %s" % (
            p.name, p.dtype, a.dtype))
    if a.shape != want:
        raise InputError("%s: expected shape %s, got %s" % (
            p.name, want, a.shape))
    if not a.flags.c_contiguous:
        raise InputError("%s: not C-contiguous; pass "
                         "numpy.ascontiguousarray(%s)" % (p.name, p.name))
    if not a.flags.aligned:
        raise InputError("%s: not aligned to its element size" % p.name)
    if p.is_output and not a.flags.writeable:
        raise InputError("%s: output array is read-only" % p.name)


def _check_aliasing(given):
    """No output may share memory with any other buffer given.  Every
    buffer is C-contiguous by now, so overlapping bounds are overlapping
    memory, and the bounds check is exact."""
    for i, (p, a) in enumerate(given):
        for q, b in given[i + 1:]:
            if (p.is_output or q.is_output) and np.may_share_memory(a, b):
                raise InputError("%s and %s share memory; an output must "
                                 "not alias another buffer" % (p.name, q.name))


class Bound:
    """A launch whose arrays are checked and packed: each call runs it and
    returns the outputs (the same arrays every time).  It keeps the arrays,
    and what runs them, alive."""

    def __init__(self, launch: _Launch, run, owner):
        self.launch = launch
        self.owner = owner
        self._run = run
        args = lib.lm_args_pack(launch.kernel._k, launch.data)
        if args == ffi.NULL:
            raise SysError("lm_args_pack: out of memory")
        self._args = ffi.gc(args, lib.free)
        #: What the last call reported (the dispatch's choice), or None.
        self.info = None

    @property
    def outputs(self) -> Dict[str, np.ndarray]:
        """The output arrays every call writes."""
        return self.launch.outputs

    def __call__(self) -> Dict[str, np.ndarray]:
        self.info = self._run(self._args)
        return self.launch.outputs


class Compiled:
    """A compiled variant.  Call it with the kernel's buffers by name:

    >>> out = compiled(x=x, g=g)          # doctest: +SKIP
    >>> out["y"]                          # doctest: +SKIP

    Inputs must be C-contiguous arrays of the parameter's dtype and shape;
    outputs are allocated, or taken from the keywords (then written in
    place).  Every array is checked before any C call.  Returns the
    outputs, by name."""

    def __init__(self, kernel: Kernel, ptr):
        self.kernel = kernel
        self._c = ffi.gc(ptr, lib.lm_compiled_free)

    @property
    def variant(self) -> str:
        """The variant string."""
        return format_variant(lib.lm_compiled_variant(self._c))

    @property
    def compile_ms(self) -> float:
        """Wall time of lowering, optimising and the JIT, ms."""
        return float(lib.lm_compiled_ms(self._c))

    @property
    def counts(self) -> dict:
        """Static counts of what was emitted (``lm_counts``)."""
        return to_python(lib.lm_compiled_counts(self._c))

    @property
    def llvm_ir(self) -> Optional[str]:
        """The optimised LLVM IR (compiled with ``ir=True``), else None."""
        return text(lib.lm_compiled_ir(self._c))

    @property
    def asm(self) -> Optional[str]:
        """The assembly (compiled with ``asm=True``), else None."""
        return text(lib.lm_compiled_asm(self._c))

    def bind(self, **arrays) -> "Bound":
        """Check the arrays once and pack the launch: calling the result
        runs the variant on them again and again with no further checks
        (a pipeline's inner loop, or timing)."""
        launch = _Launch(self.kernel, arrays)
        c = self._c

        def run(args):
            call(lib.lm_compiled_launch, c, ffi.NULL, args, launch.shape.R)
            return None

        return Bound(launch, run, self)

    def __call__(self, **arrays) -> Dict[str, np.ndarray]:
        return self.bind(**arrays)()

    def __repr__(self):
        return "Compiled(%r, %r)" % (self.kernel.name, self.variant)


def oracle(kernel: Kernel, inputs: Mapping[str, object],
           written: bool = False):
    """The FP64 oracle on the given inputs (``lm_oracle_run``): a dict of
    float64 arrays, one per output.  Elements the kernel does not write
    (past a ragged row's length) are 0; with ``written=True`` the call
    returns ``(outputs, written)``, the second a dict of boolean masks."""
    launch = _Launch(kernel, inputs)
    out = ffi.new("lm_oracle **")
    call(lib.lm_oracle_run, kernel._k, launch.data, out)
    o = ffi.gc(out[0], lib.lm_oracle_free)
    want, mask = {}, {}
    for i, p in enumerate(kernel.params):
        if not p.is_output:
            continue
        n = int(o.count[i])
        shape = _expected_shape(kernel, i, launch.shape._c)
        want[p.name] = np.frombuffer(ffi.buffer(o.want[i], n * 8),
                                     dtype=np.float64).copy().reshape(shape)
        mask[p.name] = np.frombuffer(ffi.buffer(o.written[i], n),
                                     dtype=np.uint8).astype(bool).reshape(
                                         shape)
    return (want, mask) if written else want


def check_outputs(kernel: Kernel, inputs: Mapping[str, object],
                  outputs: Mapping[str, np.ndarray]) -> dict:
    """Compare outputs of a run on ``inputs`` with the FP64 oracle, by the
    library's rule (``lm_oracle_compare``: atol = rtol = 5e-5 for f32
    outputs, 1e-9 for f64, i32 exact, NaN and infinities matched, and
    elements the kernel must not write still holding the sentinel bytes).
    Returns the comparison as a dict; ``mismatches`` is 0 when it passes.
    """
    launch = _Launch(kernel, {**inputs, **outputs})
    out = ffi.new("lm_oracle **")
    call(lib.lm_oracle_run, kernel._k, launch.data, out)
    o = ffi.gc(out[0], lib.lm_oracle_free)
    res = ffi.new("lm_compare_result *")
    lib.lm_oracle_compare(kernel._k, o, launch.data, res)
    d = to_python(res[0])
    if d["first_param"] >= 0 and d["mismatches"]:
        d["first_param"] = kernel.params[d["first_param"]].name
    return d
