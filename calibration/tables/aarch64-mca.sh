#!/usr/bin/env bash
# Cycles per unit of the instruction-level cost terms on AArch64 cores, read
# off LLVM 19's scheduling models (which encode the cores' public software
# optimisation guides) with llvm-mca: the block reciprocal throughput of a
# few independent instances of each term's instruction sequence, divided by
# the units the block holds.  calibration/defaults.c takes its AArch64 named
# defaults from this table (docs/aarch64.md, "Cost model").
#   aarch64-mca.sh            the table, one line per core and term
set -euo pipefail
mca=${LLVM_MCA:-/usr/lib/llvm-19/bin/llvm-mca}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# rthroughput CPU UNITS: the block on stdin, cycles per unit
rthroughput() {
  cat > "$tmp/b.s"
  local r
  r=$("$mca" -mtriple=aarch64 -mcpu="$1" -mattr=+sve "$tmp/b.s" 2>/dev/null |
      awk '/Block RThroughput/ {print $3}')
  awk -v r="$r" -v n="$2" 'BEGIN { printf "%.2f", r / n }'
}

# The sequences, for 4 lanes of f32 (NEON, SVE at 128 bits) or the SVE
# length's lanes; four independent copies each.
neon() { # term
  case $1 in
  vop) for i in 0 3 6 9; do echo "fadd v$i.4s, v$((i+1)).4s, v$((i+2)).4s"; done ;;
  vdiv) for i in 0 3 6 9; do echo "fdiv v$i.4s, v$((i+1)).4s, v$((i+2)).4s"; done ;;
  vload) for i in 0 1 2 3; do echo "ldr q$i, [x$i]"; done ;;
  vstore) for i in 0 1 2 3; do echo "str q$i, [x$i]"; done ;;
  # no masked load or store: per lane a test and a lane load (or store)
  maskload) for l in 0 1 2 3; do echo "tst w$l, #1"; echo "ld1 {v0.s}[$l], [x$l]"; done ;;
  maskstore) for l in 0 1 2 3; do echo "tst w$l, #1"; echo "st1 {v0.s}[$l], [x$l]"; done ;;
  # no gather or scatter: per lane an index out, an address, a lane access
  gather) for l in 0 1 2 3; do echo "mov w$((l+8)), v1.s[$l]"; echo "add x$((l+12)), x0, w$((l+8)), sxtw #2"; echo "ld1 {v0.s}[$l], [x$((l+12))]"; done ;;
  scatter) for l in 0 1 2 3; do echo "mov w$((l+8)), v1.s[$l]"; echo "add x$((l+12)), x0, w$((l+8)), sxtw #2"; echo "st1 {v0.s}[$l], [x$((l+12))]"; done ;;
  blend) for i in 0 3 6 9; do echo "bsl v$i.16b, v$((i+1)).16b, v$((i+2)).16b"; done ;;
  shuffle) for i in 0 3 6 9; do echo "zip1 v$i.4s, v$((i+1)).4s, v$((i+2)).4s"; done ;;
  hred) for i in 0 3 6 9; do echo "ext v$((i+1)).16b, v$i.16b, v$i.16b, #8"; echo "fadd v$((i+2)).4s, v$i.4s, v$((i+1)).4s"; done ;;
  esac
}
sve() { # term
  case $1 in
  vop) for i in 0 3 6 9; do echo "fadd z$i.s, z$((i+1)).s, z$((i+2)).s"; done ;;
  vdiv) for i in 0 3 6 9; do echo "fdiv z$i.s, p0/m, z$i.s, z$((i+1)).s"; done ;;
  vload) for i in 0 1 2 3; do echo "ld1w {z$i.s}, p0/z, [x$i]"; done ;;
  vstore) for i in 0 1 2 3; do echo "st1w {z$i.s}, p0, [x$i]"; done ;;
  maskload) for i in 0 1 2 3; do echo "whilelo p$((i+1)).s, x$((i+4)), x9"; echo "ld1w {z$i.s}, p$((i+1))/z, [x$i]"; done ;;
  maskstore) for i in 0 1 2 3; do echo "whilelo p$((i+1)).s, x$((i+4)), x9"; echo "st1w {z$i.s}, p$((i+1)), [x$i]"; done ;;
  gather) for i in 0 1 2 3; do echo "ld1w {z$i.s}, p0/z, [x0, z$((i+4)).s, sxtw #2]"; done ;;
  scatter) for i in 0 1 2 3; do echo "st1w {z$i.s}, p0, [x0, z$((i+4)).s, sxtw #2]"; done ;;
  blend) for i in 0 3 6 9; do echo "sel z$i.s, p0, z$((i+1)).s, z$((i+2)).s"; done ;;
  shuffle) for i in 0 3 6 9; do echo "zip1 z$i.s, z$((i+1)).s, z$((i+2)).s"; done ;;
  hred) for i in 0 3 6 9; do echo "ext z$((i+1)).b, z$((i+1)).b, z$i.b, #16"; echo "fadd z$((i+2)).s, z$i.s, z$((i+1)).s"; done ;;
  esac
}

# units per block: ops (4), lanes (4 ops x lanes) for vdiv, gather and
# scatter elements, steps (4) for hred
units() { # form term lanes
  case $1/$2 in
  neon/maskload | neon/maskstore) echo 1 ;; # the block is one op, lane by lane
  neon/gather | neon/scatter) echo 4 ;;     # the block is 4 elements
  */vdiv | */gather | */scatter) echo $((4 * $3)) ;;
  *) echo 4 ;;
  esac
}

# A gathered element is at least one load-port access, a scattered one a
# store-port access: the floor is the core's scalar load (store) throughput,
# where a model prices the SVE instruction below it.
floor() { # form term core
  case $1/$2 in
  sve/gather) for i in 0 1 2 3; do echo "ldr s$i, [x$i]"; done | rthroughput "$3" 4 ;;
  sve/scatter) for i in 0 1 2 3; do echo "str s$i, [x$i]"; done | rthroughput "$3" 4 ;;
  *) echo 0 ;;
  esac
}

# The core each target's defaults describe: Neoverse N1 (a NEON-only
# server core), V2 (SVE at 128 bits), V1 (256), A64FX (512).
echo "# target core term cycles_per_unit model floor"
for row in "aarch64-neon neoverse-n1 neon 4" "aarch64-sve128 neoverse-v2 sve 4" \
           "aarch64-sve256 neoverse-v1 sve 8" "aarch64-sve512 a64fx sve 16"; do
  set -- $row
  target=$1 core=$2 form=$3 lanes=$4
  for term in vop vdiv vload vstore maskload maskstore gather scatter blend shuffle hred; do
    # LLVM lowers SVE gathers and scatters of 128-bit fixed-length vectors
    # lane by lane, as on NEON (only from 256 bits does it use SVE's)
    f2=$form
    [ $target = aarch64-sve128 ] && [ $term = gather -o $term = scatter ] && f2=neon
    m=$($f2 $term | rthroughput "$core" "$(units $f2 $term $lanes)")
    f=$(floor $f2 $term "$core")
    echo "$target $core $term $(awk -v m="$m" -v f="$f" 'BEGIN { printf "%.2f", (m + 0 > f + 0) ? m : f }') $m $f"
  done
done
