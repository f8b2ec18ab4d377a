#!/usr/bin/env bash
# The vector math providers side by side, on each routine's ordinary range
# and on the ranges where a routine may leave its vector path (results that
# under- or overflow, large arguments, subnormals).  For each (routine,
# range) it writes a one-line kernel `y[r, :] = f(x[r, :])` with `in(LO,
# HI)` and times every provider that is legal for it with `lanemap bench`
# (interleaved rounds in one process, ratios against sleef-u10).  A provider
# refused for a range (its fast range, docs/backend.md "Vector math") is
# listed as refused.
#
#   bench/vmath/run.sh [--build DIR] [--isa host|avx512|avx2|sse4.2]
#                      [--shape R,C] [--samples N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build/release isa=host shape=256,256 samples=5
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift ;;
    --isa) isa=$2; shift ;;
    --shape) shape=$2; shift ;;
    --samples) samples=$2; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
lanemap=$build/lanemap
[ -x "$lanemap" ] || { echo "run.sh: $lanemap not built (scripts/build.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| routine | input range | provider | p50 us | ratio to sleef-u10 |\n|---|---|---|---:|---:|\n'
# routine:lo:hi, the ordinary range first
for spec in exp:-4:4 exp:-100:-90 exp:-300:-200 erf:-4:4 erf:-100:100 tanh:-4:4 \
            tanh:-100:100 log:0.5:2 log:1e-44:1e-39 sin:-3:3 sin:-3000:3000 \
            sin:-20000:20000; do
  IFS=: read -r f lo hi <<<"$spec"
  k=$tmp/$f.lk
  printf 'kernel k(x: f32[R, C] in(%s, %s)) -> (y: f32[R, C]) {\n  y[r, :] = %s(x[r, :])\n}\n' \
    "$lo" "$hi" "$f" >"$k"
  # the widest packet-local variant the target has for f32
  w=
  for cand in 16 8 4; do
    if "$lanemap" run "$k" --variant "$isa/w$cand/l$cand/t1" --shape 1,16 >/dev/null 2>&1; then
      w=$cand
      break
    fi
  done
  [ -n "$w" ] || { echo "run.sh: no packet-local f32 variant of $isa runs $f" >&2; exit 1; }
  vs=() refused=()
  for m in sleef-u10 sleef-u35 mvec ir; do
    v=$isa/w$w/l$w/math=$m/t1
    [ "$m" = sleef-u10 ] && v=$isa/w$w/l$w/t1
    rc=0
    "$lanemap" run "$k" --variant "$v" --shape 1,16 --verify >/dev/null 2>&1 || rc=$?
    case $rc in
      0) vs+=("$v") ;;
      2) refused+=("$m refused") ;;
      *) refused+=("$m failed (exit $rc)") ;;
    esac
  done
  list=$(IFS=,; echo "${vs[*]}")
  "$lanemap" bench "$k" --shape "$shape" --variants "$list" --samples "$samples" |
    awk -v f="$f" -v r="[$lo, $hi]" '$1 ~ /\/t1$/ {
      m = "sleef-u10"; if (match($1, /math=[^/]*/)) m = substr($1, RSTART + 5, RLENGTH - 5)
      printf "| %s | %s | %s | %s | %s |\n", f, r, m, $2, $5 }'
  for m in "${refused[@]}"; do
    printf '| %s | [%s, %s] | %s | %s | |\n' "$f" "$lo" "$hi" "${m%% *}" "${m#* }"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
