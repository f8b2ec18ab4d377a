#!/usr/bin/env bash
# ctest `python_package`: install liblanemap into a temporary prefix
# (cmake --install), build the Python package against it in a fresh virtual
# environment, as a user would, and run its pytest suite and the pipeline
# example.  Nothing is fetched: the environment sees Debian's numpy, pytest
# and cffi (--system-site-packages), and pip runs with --no-build-isolation
# --no-index.
#
#   tests/python/run.sh BUILD_DIR MODE CC [PYTEST ARGS...]
#
# MODE is "plain", or "asan" for a sanitizer build, whose liblanemap is
# instrumented: the interpreter then runs with the AddressSanitizer runtime
# of the build's compiler CC preloaded (an uninstrumented python3 must load
# it first), and with leak detection off, since CPython keeps its own
# allocations until exit by design; every other check of the sanitizers
# stays on.  A build whose runtime cannot be found is skipped (exit 77,
# which ctest counts as skipped) with the reason.
set -euo pipefail
build=$(cd "$1" && pwd)
mode=$2
cc=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
preload=
if [[ $mode == asan ]]; then
  preload=$("$cc" -print-file-name=libasan.so)
  if [[ $preload != /* || ! -e $preload ]]; then
    echo "skipped: $cc has no libasan.so to preload into python3; the" \
      "package is tested in the release preset"
    exit 77
  fi
fi
python=/usr/bin/python3 # Debian's, whose site-packages hold numpy and cffi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lanemap-python.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
"$python" -m venv --system-site-packages "$tmp/venv"
# a copy of the package, so the build leaves nothing in the source tree
cp -r "$root/python" "$tmp/src"
rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" \
  "$tmp/venv/bin/pip" install --quiet --no-build-isolation --no-index \
  --disable-pip-version-check "$tmp/src"

export LANEMAP_CLI="$tmp/prefix/bin/lanemap"
export LANEMAP_SOURCE_DIR="$root"
export LANEMAP_CACHE_DIR="$tmp/cache"
cd "$tmp" # import the installed package, not the source folder
if [[ -n $preload ]]; then
  export LD_PRELOAD=$preload ASAN_OPTIONS=detect_leaks=0
fi
"$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider "$tmp/src/tests" \
  "${@:4}"
