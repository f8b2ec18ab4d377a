"""Generate lanemap._native, the CFFI binding, from the installed headers.

Every type and function the package uses comes from the public headers of
the liblanemap it is built against: they are run through the C
preprocessor, the declarations from lanemap's own headers are kept, and
CFFI compiles them in API mode, so the C compiler lays out every struct
and checks every prototype.  Three rewrites make the headers CFFI's subset
of C without copying any layout:

- enum values are left to the compiler (``enum { A, B, ... }``);
- array lengths named by a constant become ``[...]``;
- the integer and floating-point ``#define`` constants become CFFI's
  ``#define NAME ...`` and ``static const double NAME;``, valued by the
  compiler.

The library is found under ``LANEMAP_PREFIX`` when that is set, else
through ``pkg-config lanemap``.  Run by setuptools (setup.py); also
``python lanemap/_build.py`` builds it in place for development.
"""
import os
import re
import shlex
import subprocess
import sys

import cffi

HEADER = "lanemap/lanemap.h"


def _pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "lanemap"], check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit("lanemap: pkg-config is not installed; set LANEMAP_PREFIX "
                 "to the prefix liblanemap was installed into")
    except subprocess.CalledProcessError as e:
        sys.exit("lanemap: pkg-config cannot find lanemap (%s); set "
                 "PKG_CONFIG_PATH=PREFIX/lib/pkgconfig or LANEMAP_PREFIX="
                 "PREFIX" % e.stderr.strip())
    return shlex.split(out)


def find_library():
    """Include dirs, library dirs, libraries and the data folder
    (PREFIX/share/lanemap) of the installed lanemap."""
    prefix = os.environ.get("LANEMAP_PREFIX")
    if prefix:
        prefix = os.path.abspath(prefix)
        libdirs = [d for d in (os.path.join(prefix, "lib"),
                               os.path.join(prefix, "lib64"))
                   if os.path.exists(os.path.join(d, "liblanemap.so"))]
        if not libdirs:
            sys.exit("lanemap: no liblanemap.so under %s/lib" % prefix)
        incs = [os.path.join(prefix, "include"), "/usr/include/cjson"]
        return incs, libdirs, ["lanemap"], os.path.join(prefix, "share",
                                                         "lanemap")
    cflags = _pkg_config("--cflags")
    libs = _pkg_config("--libs")
    incs = [os.path.normpath(f[2:]) for f in cflags if f.startswith("-I")]
    libdirs = [os.path.normpath(f[2:]) for f in libs if f.startswith("-L")]
    names = [f[2:] for f in libs if f.startswith("-l")]
    datadir = os.path.normpath(_pkg_config("--variable=datadir")[0])
    return incs, libdirs, names, datadir


def _lanemap_include(incs):
    for d in incs:
        if os.path.exists(os.path.join(d, HEADER)):
            return d
    sys.exit("lanemap: %s not found in %s" % (HEADER, ", ".join(incs)))


def _strip_comment(text):
    return re.sub(r"/\*.*?\*/", "", text).strip()


def _constants(incdir):
    """The object-like #define constants of the public headers, as CFFI
    declarations the compiler gives values to."""
    raw = {}
    hdir = os.path.join(incdir, "lanemap")
    for name in sorted(os.listdir(hdir)):
        with open(os.path.join(hdir, name)) as f:
            for line in f:
                m = re.match(r"#define\s+((?:LM|LANEMAP)_\w+)\s+(.+)$", line)
                if m and not line.rstrip().endswith("\\"):
                    raw[m.group(1)] = _strip_comment(m.group(2))
    decls = []
    for name, value in raw.items():
        while value in raw:  # an alias of another constant
            value = raw[value]
        if '"' in value or not value:
            continue
        if re.match(r"\(?0[xX]", value):  # hex: its digits are not a float
            decls.append("#define %s ..." % name)
            continue
        if re.search(r"\d\.\d|\d[eE][-+]?\d", value):
            decls.append("static const double %s;" % name)
        else:
            decls.append("#define %s ..." % name)
    return "\n".join(decls)


def _declarations(incs, incdir):
    """The preprocessed declarations of lanemap's own headers."""
    cc = shlex.split(os.environ.get("CC", "cc"))
    cmd = cc + ["-E", "-std=c11", "-D__attribute__(x)="]
    cmd += ["-I" + d for d in incs] + ["-"]
    out = subprocess.run(cmd, input="#include <%s>\n" % HEADER, check=True,
                         capture_output=True, text=True).stdout
    keep, here = [], False
    own = os.path.join(os.path.realpath(incdir), "lanemap") + os.sep
    for line in out.splitlines():
        m = re.match(r'# \d+ "([^"]+)"', line)
        if m:
            here = os.path.realpath(m.group(1)).startswith(own)
        elif here:
            keep.append(line)
    src = "\n".join(keep)

    def enum_body(m):
        names = [re.sub(r"=.*", "", x, flags=re.S).strip()
                 for x in m.group(2).split(",")]
        return m.group(1) + "{ " + ", ".join([n for n in names if n] +
                                             ["..."]) + " }"

    src = re.sub(r"(\benum\b\s*\w*\s*)\{([^}]*)\}", enum_body, src)
    src = re.sub(r"\[\s*[A-Za-z_][^\]]*\]", "[...]", src)
    return src


# What the package itself adds: the libc free() for malloc'ed results, the
# callbacks C calls back into Python, and where the installed data lives.
EXTRA_CDEF = """
void free(void *);
extern "Python" void _lm_py_progress(void *, int, int, const char *);
extern "Python" void _lm_py_eval_progress(void *, lm_evaluate_stage,
                                          const char *, int, int,
                                          const char *);
extern "Python" void _lm_py_eval_note(void *, int, const char *);
static const char *const lanemap_py_datadir;
"""


def make_builder():
    incs, libdirs, libs, datadir = find_library()
    incdir = _lanemap_include(incs)
    ffi = cffi.FFI()
    ffi.cdef("typedef struct cJSON cJSON;\n" + _declarations(incs, incdir) +
             "\n" + _constants(incdir) + EXTRA_CDEF)
    ffi.set_source(
        "lanemap._native",
        "#include <stdlib.h>\n#include <%s>\n"
        "static const char *const lanemap_py_datadir = \"%s\";\n"
        % (HEADER, datadir.replace("\\", "\\\\").replace('"', '\\"')),
        include_dirs=incs, library_dirs=libdirs, libraries=libs,
        runtime_library_dirs=libdirs)
    return ffi


ffibuilder = make_builder()

if __name__ == "__main__":
    ffibuilder.compile(tmpdir=os.path.join(os.path.dirname(__file__), ".."),
                       verbose=True)
