"""Measurement records (``lanemap.record/1`` JSON Lines) as dicts."""
import json
import os
from typing import List, Union

from ._core import call, ffi, lib, path_bytes


def _as_dicts(rs) -> List[dict]:
    out = ffi.new("char **")
    n = ffi.new("size_t *")
    call(lib.lm_records_to_text, rs, out, n)
    try:  # n bytes, whatever follows them
        text = ffi.unpack(out[0], n[0]).decode("utf-8")
    finally:
        lib.free(out[0])
    # JSON Lines: lines end with "\n" only (a string may hold U+2028)
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def read_records(path: Union[str, os.PathLike], best: bool = False) \
        -> List[dict]:
    """Every record of a records file, checked by the library (a bad line
    raises InputError naming path:line and the field; an interrupted last
    line is skipped).  Each record is a dict with the standard fields
    (kernel, kernel_hash, R, C, variant, isa, fingerprint, predicted, mean,
    stddev, median, min, max, times in s, verified, timestamp) and any
    caller's fields.  With ``best``, only the fastest verified record per
    (kernel, shape), as ``lm_records_best``."""
    rs = ffi.new("lm_records *")
    call(lib.lm_records_read, path_bytes(path), rs)
    try:
        if not best:
            return _as_dicts(rs)
        picked = ffi.new("lm_records *")
        call(lib.lm_records_best, rs, picked)
        try:
            return _as_dicts(picked)
        finally:
            lib.lm_records_free(picked)
    finally:
        lib.lm_records_free(rs)
