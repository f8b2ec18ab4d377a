"""lanemap for Python: decide how a SIMD kernel maps onto CPU vector lanes,
per kernel and shape, and prove each decision on measured data.

A thin binding of the installed liblanemap (CFFI, API mode, built from its
public headers).  The pieces, in the order a pipeline meets them:

- :class:`Kernel` (``load``, ``check``, ``variants``, ``predict``,
  ``compile``, ``inputs``) and :class:`Compiled`, called on NumPy arrays;
- :func:`oracle` and :func:`check_outputs`, the FP64 reference;
- :class:`Profile` and :func:`calibrate`;
- :class:`Workload`, :func:`solve` and :func:`tune` giving a :class:`Plan`,
  run by shape through :class:`Dispatch`;
- :func:`evaluate`, the held-out evaluation, :func:`deploy`, the
  deployment evaluation under compile budgets, and :func:`read_records`.

Errors raise :class:`Error` subclasses carrying the C status and the
library's message: :class:`InputError` (bad input, exit code 2 in the CLI),
:class:`CheckError` (a checked property failed, 1) and :class:`SysError`
(the system refused, 3).
"""
from ._core import CheckError, Error, InputError, SysError, ffi, lib, text
from .evaluate import bundled_cases, bundled_deploy_spec, deploy, evaluate
from .kernel import Bound, Compiled, Kernel, Param, Shape, check_outputs, oracle
from .plan import Dispatch, Plan, TuneResult, Workload, solve, tune
from .profile import Profile, calibrate
from .records import read_records

__version__ = "0.1.0"


def library_version() -> str:
    """The version of the liblanemap this package runs on."""
    return text(lib.lm_version())


__all__ = [
    "Bound", "CheckError", "Compiled", "Dispatch", "Error", "InputError", "Kernel",
    "Param", "Plan", "Profile", "Shape", "SysError", "TuneResult",
    "Workload", "bundled_cases", "bundled_deploy_spec", "calibrate",
    "deploy", "check_outputs", "evaluate",
    "library_version", "oracle", "read_records", "solve", "tune",
]
