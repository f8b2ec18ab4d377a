#!/usr/bin/env bash
# The suite's half of a term trial: the regret of the analytic model's
# top-1 picks on measured cases, per kernel, with a profile as calibrated
# and with each term on trial fixed at 0 (docs/calibration.md, "Terms on
# trial").  No kernel is measured: the records of `lanemap evaluate` on the
# suite and validation cases (kernels/suite.json, kernels/validation.json)
# are re-scored by each profile (`lanemap learn`'s analytic column; the
# learned column is beside the point here).  Held-out records are refused
# by lanemap learn.
#
# usage: bench/terms/suite_check.sh PROFILE.json RECORDS.jsonl... [--terms a,b]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lanemap="$root/build/release/lanemap"
[ $# -ge 2 ] || { echo "usage: $0 PROFILE.json RECORDS.jsonl... [--terms a,b]" >&2; exit 2; }
profile=$1; shift
terms=mask_ins,spill
records=()
while [ $# -gt 0 ]; do
  case "$1" in
    --terms) terms=$2; shift 2 ;;
    *) records+=("$1"); shift ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the profile with the named terms fixed at 0 ("" leaves it as calibrated)
zeroed() {
  python3 - "$profile" "$1" "$2" <<'PY'
import json, sys
src, zero, dst = sys.argv[1], [t for t in sys.argv[2].split(",") if t], sys.argv[3]
p = json.load(open(src))
for t in p["terms"]:
    if t["name"] in zero:
        for f in ("coef", "p5", "p50", "p95"):
            t[f] = 0.0
names = [t["name"] for t in p["terms"]]
for b in p.get("bootstrap", []):
    for z in zero:
        if z in names and isinstance(b, list):
            b[names.index(z)] = 0.0
json.dump(p, open(dst, "w"))
PY
}
row() { # label zero-list
  zeroed "$2" "$tmp/p.json"
  LANEMAP_ACCEPT_NOISY=1 "$lanemap" learn --profile "$tmp/p.json" -o "$tmp/m.json" --rounds 10 "${records[@]}" \
    > "$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
  echo "== $1"
  sed -n '/^left out/,/^all/p' "$tmp/out" | awk 'NR > 1 {printf "  %-16s %s\n", $1, $4}'
}
row "as calibrated" ""
IFS=, read -r -a list <<< "$terms"
for t in "${list[@]}"; do row "without $t" "$t"; done
row "without all of $terms" "$terms"
