"""What every module of the package shares: the binding, errors carrying
the library's status and message, paths and structs converted, and the
progress callbacks."""
import math
import os
import sys

from ._native import ffi, lib


class Error(Exception):
    """A lanemap call failed.

    ``status`` is the C status (``lm_status``: 1 a checked property failed,
    2 bad input, 3 the system refused), which is also the CLI's exit code
    for the same failure; ``message`` is the library's message, for kernel
    sources ``file:line:col: error: ...``."""

    status = 0

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class CheckError(Error):
    """A checked property failed (``LM_EFAIL``): verification against the
    oracle, a noisy profile refused, a solver time limit passed before any
    plan was found.  (Budgets no plan can meet are bad input.)"""

    status = 1


class InputError(Error, ValueError):
    """Bad input (``LM_EINPUT``): a kernel source, shape, variant string,
    file, option, or an array that does not fit the kernel."""

    status = 2


class SysError(Error, OSError):
    """The system refused (``LM_ESYS``): I/O, memory, LLVM."""

    status = 3

    def __str__(self):
        return self.message


_BY_STATUS = {1: CheckError, 2: InputError, 3: SysError}
for _cls in (Error, *_BY_STATUS.values()):
    _cls.__module__ = "lanemap"  # shown as lanemap.InputError


def raise_status(status, message):
    raise _BY_STATUS.get(int(status), Error)(message, int(status))


def new_error():
    return ffi.new("lm_error *")


def check(status, err):
    """Raise the Error subclass for a status other than LM_OK."""
    if status != lib.LM_OK:
        raise_status(status, ffi.string(err.msg).decode("utf-8", "replace"))


def call(fn, *args):
    """fn(*args, err) for a library call whose last parameter is an
    lm_error; raises on failure."""
    err = new_error()
    check(fn(*args, err), err)


def path_bytes(path):
    if path is None:
        return ffi.NULL
    return os.fsencode(os.fspath(path))


def c_path(path):
    """A path as an owned C string for a struct field (keep the result
    alive while C may read it); NULL for None."""
    if path is None:
        return ffi.NULL
    return ffi.new("char[]", path_bytes(path))


def text(cstr):
    """A C string as str; None for NULL."""
    if cstr == ffi.NULL:
        return None
    return ffi.string(cstr).decode("utf-8", "replace")


def take_text(cstr):
    """A malloc'ed C string as str, freed."""
    try:
        return text(cstr)
    finally:
        if cstr != ffi.NULL:
            lib.free(cstr)


def to_python(value):
    """A C value as plain Python: structs as dicts, arrays as lists, char
    arrays as str, enums as int; pointers are left out (None)."""
    t = ffi.typeof(value) if isinstance(value, ffi.CData) else None
    if t is None:
        return value
    if t.kind == "struct":
        return {name: to_python(getattr(value, name)) for name, _ in t.fields}
    if t.kind == "array":
        if t.item.cname == "char":
            return ffi.string(value).decode("utf-8", "replace")
        return [to_python(value[i]) for i in range(len(value))]
    if t.kind == "pointer" and t.item.cname == "char":
        return text(value)
    if t.kind == "pointer" and t.item.kind == "struct":
        return None if value == ffi.NULL else to_python(value[0])
    return None


def nan_to_none(x):
    return None if isinstance(x, float) and math.isnan(x) else x


# ---- progress -------------------------------------------------------------


class Progress:
    """The progress of one long call, reported to a callback or a tqdm bar.

    ``progress`` is a callable ``(done, total, what)``, ``False`` for none,
    or ``None``: a tqdm bar on stderr when tqdm is installed, else none.
    An exception raised by the callback cannot stop the C call; it is
    raised when the call returns."""

    def __init__(self, progress, desc):
        self.error = None
        self.bar = None
        self.fn = None
        self.desc = desc
        if callable(progress):
            self.fn = progress
        elif progress is None:
            try:
                import tqdm  # optional
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm.tqdm(total=0, desc=desc, file=sys.stderr,
                                     leave=False)
        self.notes = []  # evaluate's (warning, line) notes
        self.handle = ffi.new_handle(self)

    @property
    def active(self):
        return self.fn is not None or self.bar is not None

    def report(self, done, total, what):
        if self.error is not None:
            return
        try:
            if self.fn is not None:
                self.fn(done, total, what)
            if self.bar is not None:
                if self.bar.total != total:
                    self.bar.reset(total=total)
                self.bar.n = done
                self.bar.set_postfix_str(what or "", refresh=False)
                self.bar.refresh()
        except BaseException as e:  # raised after the call
            self.error = e

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if exc[0] is None and self.error is not None:
            raise self.error
        return False


@ffi.def_extern()
def _lm_py_progress(ctx, done, total, what):
    ffi.from_handle(ctx).report(done, total, text(what))


@ffi.def_extern()
def _lm_py_eval_progress(ctx, stage, isa, done, total, what):
    p = ffi.from_handle(ctx)
    stage_name = "calibrate" if stage == lib.LM_EVALUATE_CALIBRATE else \
        "measure"
    label = "%s %s" % (stage_name, text(isa) or "")
    w = text(what)
    p.report(done, total, label + (": " + w if w else ""))


@ffi.def_extern()
def _lm_py_eval_note(ctx, warning, line):
    p = ffi.from_handle(ctx)
    p.notes.append((bool(warning), text(line)))
