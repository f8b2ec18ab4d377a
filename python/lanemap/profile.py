"""Profiles (a machine's fitted cost coefficients per ISA target) and
calibration."""
import json
import os
from typing import Optional, Union

from ._core import Error, Progress, call, ffi, lib, path_bytes, take_text, text, \
    to_python
from .kernel import isa_name, isa_value



def _mode_value(mode):
    if mode in ("any", "default"):
        return lib.LM_PROFILE_DEFAULT
    out = ffi.new("lm_profile_mode *")
    call(lib.lm_profile_mode_parse, mode.encode(), out)
    return out[0]


class Profile:
    """A profile (``lm_profile``): the cost model's coefficients for one ISA
    target, with the machine fingerprint, the fit's diagnostics and the
    noise verdict of its calibration."""

    def __init__(self, ptr, path=None, warning=""):
        self._p = ffi.gc(ptr, lib.lm_profile_free)
        self.path = path
        #: A fingerprint warning: "" when the profile is this machine's.
        self.warning = warning

    @classmethod
    def load(cls, path: Union[str, os.PathLike],
             accept_noisy: bool = False) -> "Profile":
        """Read and check a profile file.  A profile whose calibration was
        noisy raises CheckError unless ``accept_noisy`` (or
        LANEMAP_ACCEPT_NOISY=1).  Another machine's profile loads, with
        ``warning`` naming what differs."""
        out = ffi.new("lm_profile **")
        info = ffi.new("lm_profile_load_info *")
        call(lib.lm_profile_load, path_bytes(path), out, info)
        prof = cls(out[0], os.fspath(path), text(info.warning))
        call(lib.lm_profile_check_noisy, prof._p, path_bytes(path),
             lib.lm_profile_accept_noisy(int(accept_noisy)))
        return prof

    @classmethod
    def default(cls, isa: str = "host") -> "Profile":
        """The uncalibrated profile: every coefficient a named default."""
        out = ffi.new("lm_profile **")
        call(lib.lm_profile_default, isa_value(isa), out)
        return cls(out[0])

    @classmethod
    def cached(cls, isa: str = "host", mode: str = "any",
               calibrate: bool = False, accept_noisy: bool = False,
               progress=None) -> "Profile":
        """This machine's cached profile for the ISA target (quick or full,
        or either with "any"; the cache folder is LANEMAP_CACHE_DIR, else
        ~/.cache/lanemap).  An empty cache raises InputError naming how to
        get one, or with ``calibrate`` calibrates now and caches."""
        o = ffi.new("lm_profile_lookup_opts *")
        lib.lm_profile_lookup_defaults(o)
        o.isa = isa_value(isa)
        o.mode = _mode_value(mode)
        o.require_isa = 1
        o.accept_noisy = int(accept_noisy)
        o.missing = lib.LM_PROFILE_MISSING_CALIBRATE if calibrate else \
            lib.LM_PROFILE_MISSING_ERROR
        found = ffi.new("lm_profile_found *")
        out = ffi.new("lm_profile **")
        with Progress(progress if calibrate else False,
                      "calibrate " + isa) as pr:
            if pr.active:
                o.calib.progress = lib._lm_py_progress
                o.calib.progress_ctx = pr.handle
            call(lib.lm_profile_lookup, o, out, found)
            prof = cls(out[0], text(found.path) or None,
                       text(found.info.warning))
        return prof

    @staticmethod
    def resolve(profile, isa: str) -> "Profile":
        """A Profile from what callers pass: a Profile, a path, "default",
        or None (this machine's cached profile for ``isa``)."""
        if isinstance(profile, Profile):
            return profile
        if profile is None:
            return Profile.cached(isa)
        if profile == "default":
            return Profile.default(isa)
        return Profile.load(profile)

    # ---- contents -------------------------------------------------------

    @property
    def isa(self) -> str:
        """The ISA target the profile prices ("x86-64-v4", ...)."""
        return text(lib.lm_profile_get_isa(self._p))

    @property
    def mode(self) -> str:
        """"default", "quick" or "full"."""
        return text(lib.lm_profile_mode_name(lib.lm_profile_get_mode(self._p)))

    @property
    def fingerprint(self) -> dict:
        """The machine fingerprint (CPU, features, caches, cores, hash)."""
        return to_python(lib.lm_profile_get_fingerprint(self._p))

    @property
    def noisy(self) -> bool:
        """The calibration's noise verdict was noisy."""
        return bool(lib.lm_profile_noisy(self._p))

    @property
    def terms(self) -> dict:
        """Every term's fitted coefficient and interval, by name."""
        out = {}
        for i in range(lib.lm_profile_nterms(self._p)):
            t = to_python(lib.lm_profile_term_at(self._p, i))
            out[t.pop("name")] = t
        return out

    def to_json(self) -> dict:
        """The profile as the JSON its file holds."""
        out = ffi.new("char **")
        call(lib.lm_profile_to_json_text, self._p, out)
        return json.loads(take_text(out[0]))

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write the profile atomically."""
        call(lib.lm_profile_save, self._p, path_bytes(path))
        self.path = os.fspath(path)

    def __repr__(self):
        return "Profile(isa=%r, mode=%r, fingerprint=%r)" % (
            self.isa, self.mode, self.fingerprint["hash"])


def calibrate(isa: str = "host", quick: bool = True, seed: int = 1,
              cache: bool = False, path: Optional[str] = None,
              accept_noisy: bool = False, progress=None) -> Profile:
    """Run the calibration suite for an ISA target and fit a profile
    (``lanemap calibrate``).

    With ``cache`` the profile becomes this machine's cached one; with
    ``path`` it is written there.  A calibration whose timing was noisy is
    then not kept under that name but beside it (``*.noisy.json``) and
    CheckError says why, unless ``accept_noisy``.  Without either, the
    profile is only returned (its ``noisy`` says how it was measured).
    ``progress``: a callable (done, total, what), False, or None for a tqdm
    bar when tqdm is installed."""
    o = ffi.new("lm_calib_opts *")
    lib.lm_calib_defaults(o)
    o.isa = isa_value(isa)
    o.quick = int(quick)
    o.seed = seed
    # where it goes, checked before minutes of calibration
    targets = []
    if cache:
        buf = ffi.new("char[4096]")
        mode = lib.LM_PROFILE_QUICK if quick else lib.LM_PROFILE_FULL
        call(lib.lm_profile_cache_path, isa_name(o.isa).encode(), mode, buf,
             4096)
        targets.append((ffi.string(buf), 1))
    if path is not None:
        targets.append((path_bytes(path), 0))
    for target, _ in targets:
        call(lib.lm_file_check_writable, target)
    out = ffi.new("lm_profile **")
    with Progress(progress, "calibrate " + isa) as pr:
        if pr.active:
            o.progress = lib._lm_py_progress
            o.progress_ctx = pr.handle
        call(lib.lm_calibrate, o, out)
        prof = Profile(out[0])  # owned before a callback's error is raised
    accept = lib.lm_profile_accept_noisy(int(accept_noisy))
    first = None
    for target, is_cache in targets:  # every target, whatever the first did
        wrote = ffi.new("char[4096]")
        try:
            call(lib.lm_profile_save_calibrated, prof._p, target, is_cache,
                 accept, wrote, 4096)
        except Error as e:
            e.profile = prof  # the fitted profile is not lost
            first = first or e
        if ffi.string(wrote):
            prof.path = text(wrote)
    if first is not None:
        raise first
    return prof
