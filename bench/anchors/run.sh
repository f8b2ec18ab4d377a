#!/usr/bin/env bash
# The anchor benchmark in one command: build bench_anchors, time the C
# entries, set up the bench virtual environment and run the Python peers
# (TorchInductor, eager PyTorch, Halide), then merge everything into one
# report with a chart.  See bench/anchors/README.md.
#
#   bench/anchors/run.sh [--quick] [--no-python] [--out DIR] [--build DIR]
#                        [--case ID] [--samples N]
#
# --build DIR  the CMake build directory (default: build/release; configured
#              as a Release build if it has no CMakeCache.txt)
# --out DIR    where results go (default: BUILD/anchors)
# --samples N  rounds per entry, C and Python (default 7, --quick 5)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
quick=() peers=1 out="" build="$root/build/release" case=() samples=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick) ;;
    --no-python) peers=0 ;;
    --out) [ $# -ge 2 ] || { echo "run.sh: --out needs a directory" >&2; exit 2; }; out=$2; shift ;;
    --build) [ $# -ge 2 ] || { echo "run.sh: --build needs a directory" >&2; exit 2; }; build=$2; shift ;;
    --case) [ $# -ge 2 ] || { echo "run.sh: --case needs a case id" >&2; exit 2; }; case=(--case "$2"); shift ;;
    --samples) [ $# -ge 2 ] || { echo "run.sh: --samples needs a count" >&2; exit 2; }; samples=(--samples "$2"); shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
out=${out:-$build/anchors}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# ---- build
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
ninja -C "$build" -j2 bench_anchors
bin="$build/bench/anchors/bench_anchors"

# ---- the C entries (one process, side by side)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
rc=0
"$bin" "${quick[@]}" "${case[@]}" "${samples[@]}" --out "$out" | tee "$out/c.md" || rc=$?
if [ "$rc" -ge 2 ]; then
  echo "run.sh: bench_anchors failed (exit $rc)" >&2
  exit "$rc"
fi

# ---- the Python peers, in their own virtual environment
if [ "$peers" = 1 ]; then
  # the chosen variants as shared objects, so peers.py times lanemap's code
  # side by side with each peer in its own process
  lib=$(dirname "$(find "$build" -maxdepth 1 -name 'liblanemap.so' | head -1)")
  for o in "$out"/data/*/chosen.o "$out"/data/*/chosen_t2.o; do
    [ -f "$o" ] || continue
    cc -shared -o "${o%.o}.so" "$o" -L"$lib" -Wl,-rpath,"$lib" -llanemap -lsleef -lm
  done
  venv="${XDG_CACHE_HOME:-$HOME/.cache}/lanemap/bench-venv"
  # torch's Linux wheel links its CUDA runtime libraries when it is
  # imported, even on a machine without a GPU, so pip installs them with it
  # (about 5 GiB); --no-deps alone leaves `import torch` failing.
  reqs="torch==2.15.0 halide==21.0.0 numpy imageio"
  if [ ! -f "$venv/.lanemap-reqs" ] || [ "$(cat "$venv/.lanemap-reqs")" != "$reqs" ]; then
    python3 -m venv "$venv"
    # shellcheck disable=SC2086
    "$venv/bin/pip" install --quiet $reqs
    echo "$reqs" > "$venv/.lanemap-reqs"
  fi
  # Freed output tensors stay in the heap, so a call does not page-fault
  # fresh memory in; bench/anchors/README.md says why.
  LANEMAP_LIB="$lib/liblanemap.so" \
  GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296 \
    "$venv/bin/python" "$here/peers.py" "$out" "${quick[@]}" "${case[@]}" "${samples[@]}" 2>"$out/peers.err" \
    | tee "$out/peers.md" || { echo "run.sh: peers.py failed, see $out/peers.err" >&2; exit 3; }
else
  rm -f "$out/peers.json"
fi

# ---- merge and draw
machine="$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $(date -u +%Y-%m-%d)"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
python3 "$here/report.py" "$out" --machine "$machine" \
  --load "$load_start at the start, $load_end at the end" > /dev/null
(cd "$out" && gnuplot anchors.gp)
echo "run.sh: report $out/anchors.md, chart $out/anchors.png"
exit "$rc"
