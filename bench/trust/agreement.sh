#!/usr/bin/env bash
# How far do independent calibrations agree on the plan?  Calibrates N
# profiles one after another (quick by default), solves one workload with
# each, and prints the share of buckets on which every pair of plans picks
# the same variant, with the coefficients that moved the most between the
# profiles.  No kernel is measured, so a round takes N calibrations and N
# solves: the loop to tune calibration on (docs/evaluation.md, "Trust
# figures").
#
# usage: bench/trust/agreement.sh WORKLOAD.json [--runs N] [--out DIR]
#                                 [-- extra calibrate arguments]
# WORKLOAD: e.g. the workload.json `lanemap evaluate` writes per target.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lanemap="$root/build/release/lanemap"
[ $# -ge 1 ] || { echo "usage: $0 WORKLOAD.json [--runs N] [--out DIR] [-- ARGS]" >&2; exit 2; }
workload=$1; shift
runs=5
out="$root/build/bench-agreement"
extra=(--quick)
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 WORKLOAD.json [--runs N] [--out DIR] [-- ARGS]" >&2; exit 2 ;;
  esac
done
isa=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["isa"][0])' "$workload")
mkdir -p "$out"
for i in $(seq 1 "$runs"); do
  uptime > "$out/uptime.$i"
  "$lanemap" calibrate --isa "$isa" --out "$out/profile-$i.json" --accept-noisy "${extra[@]}" > "$out/calibrate-$i.log" 2>&1 || true
  "$lanemap" solve "$workload" -o "$out/plan-$i.json" --profile "$out/profile-$i.json" --accept-noisy > "$out/solve-$i.log" 2>&1
  echo "  run $i: $(grep -E '^noise:' "$out/calibrate-$i.log" | cut -c1-100); load $(sed 's/.*load average: //' "$out/uptime.$i")"
done
python3 "$root/bench/trust/agreement.py" "$out" "$runs"
