#!/usr/bin/env bash
# Can lanemap's main job be trusted on this machine?  The measurement-trust
# targets, measured (docs/evaluation.md, "Trust figures"):
#
#   quiet    RUNS back-to-back `lanemap evaluate --quick --fresh`, each with
#            its own empty profile cache, so each calibrates anew: the
#            spread of the plan's geomean regret, the plan picks two
#            independent calibrations agree on, the winner's-curse bias.
#   loaded   RUNS runs beside a process spinning on one CPU: first with an
#            empty cache (the calibration must be refused and nothing
#            cached), then priced with the first quiet run's cached profile
#            (every run must flag itself; the regret of the cases it did
#            not flag is compared with the quiet figure).
#
# usage: bench/trust/run.sh [--runs N] [--out DIR] [--quiet-only|--loaded-only]
#                           [-- extra evaluate arguments]
# Needs the release build (scripts/build.sh release).  Prints the summary
# and writes DIR/summary.md; every run keeps its folder under DIR.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lanemap="$root/build/release/lanemap"
runs=5
out="$root/build/bench-trust"
phases="quiet loaded"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quiet-only) phases=quiet; shift ;;
    --loaded-only) phases=loaded; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 [--runs N] [--out DIR] [--quiet-only|--loaded-only] [-- ARGS]" >&2; exit 2 ;;
  esac
done
[ -x "$lanemap" ] || { echo "$lanemap: build it first (scripts/build.sh release)" >&2; exit 2; }
mkdir -p "$out"
unset LANEMAP_ACCEPT_NOISY

# One evaluation: DIR, cache dir, then extra flags.  Records the load
# average before and after, the exit status and the last line.
run_one() {
  local dir=$1 cache=$2; shift 2
  rm -rf "$dir"; mkdir -p "$dir" "$cache"
  uptime > "$dir/uptime.before"
  local rc=0
  LANEMAP_CACHE_DIR="$cache" "$lanemap" evaluate --quick --fresh --out "$dir" \
    "$@" ${extra[@]+"${extra[@]}"} > "$dir/stdout" 2> "$dir/stderr" || rc=$?
  uptime > "$dir/uptime.after"
  echo "$rc" > "$dir/exit"
  ls "$cache" > "$dir/cache.after"
  echo "  $(basename "$dir"): exit $rc: $(tail -n 1 "$dir/stdout" "$dir/stderr" 2>/dev/null | grep -v '^==>' | grep . | tail -n 1 | cut -c1-160)"
}

if [[ " $phases " == *" quiet "* ]]; then
  echo "quiet: $runs runs, each calibrating anew"
  for i in $(seq 1 "$runs"); do
    # an empty cache: a folder left by an earlier run of this script would
    # hand evaluate that run's profile instead of a calibration
    rm -rf "$out/quiet-$i.cache"
    run_one "$out/quiet-$i" "$out/quiet-$i.cache"
  done
fi

if [[ " $phases " == *" loaded "* ]]; then
  [ -d "$out/quiet-1.cache" ] || { echo "loaded: needs the quiet phase's first cache ($out/quiet-1.cache)" >&2; exit 2; }
  cpu=$(( $(nproc) - 1 ))
  taskset -c "$cpu" sh -c 'while :; do :; done' &
  spinner=$!
  trap 'kill $spinner 2>/dev/null || true' EXIT
  sleep 1
  echo "loaded: $runs runs beside pid $spinner spinning on CPU $cpu"
  for i in $(seq 1 "$runs"); do
    rm -rf "$out/loaded-empty-$i.cache"
    run_one "$out/loaded-empty-$i" "$out/loaded-empty-$i.cache"
    rm -rf "$out/loaded-$i.cache"; cp -r "$out/quiet-1.cache" "$out/loaded-$i.cache"
    rm -f "$out/loaded-$i.cache"/*.lock
    run_one "$out/loaded-$i" "$out/loaded-$i.cache"
  done
  kill "$spinner"; trap - EXIT
fi

python3 "$root/bench/trust/summary.py" "$out" | tee "$out/summary.md.tmp"
mv "$out/summary.md.tmp" "$out/summary.md"
