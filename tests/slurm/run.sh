#!/usr/bin/env bash
# The sharding docs, run for real (docs/evaluation.md, "Sharding"):
#
#  1. a one-node Slurm cluster (scripts/slurm-local.sh: munged, slurmctld,
#     slurmd) runs examples/slurm/study.sh on a tiny case list with the
#     quick protocol: one calibration job, a 3-task exclusive job array of
#     `evaluate --shard`, and a dependency job that merges and reports;
#  2. the GNU parallel form (`parallel -j1`) runs the same shards locally;
#  3. a shard killed mid-append is merged and resumed.
#
# It checks that the merged case set equals the unsharded list, that every
# record names the node and the machine type (fingerprint) that measured
# it, that `evaluate` on the merged folder reports without calibrating or
# measuring again, and that the daemons are gone afterwards, even when a
# check fails.  A daemon that cannot start fails the test with its reason.
#
#   tests/slurm/run.sh LANEMAP_CLI SOURCE_DIR WORK_DIR
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 LANEMAP_CLI SOURCE_DIR WORK_DIR" >&2; exit 2; }
cli=$1
src=$2
work=$3
t0=$(date +%s)
rm -rf "$work"
mkdir -p "$work"
cluster=$work/cluster

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "== $* ($(($(date +%s) - t0)) s)"; }

stop_cluster() {
  "$src/scripts/slurm-local.sh" stop "$cluster" || true
  if pgrep -f "$cluster" >/dev/null; then
    echo "FAIL: processes of $cluster outlived the stop:" >&2
    pgrep -af "$cluster" >&2
    exit 1
  fi
}
trap stop_cluster EXIT

for b in sbatch parallel; do
  command -v "$b" >/dev/null ||
    fail "$b not found: scripts/deps.sh installs slurm-wlm, munge and parallel"
done

# The unsharded case list and this machine's identity.
cases=$src/tests/fixtures/eval/cases.json
"$cli" evaluate --cases "$cases" --list | awk '{print $1}' | sort >"$work/want"
[ "$(wc -l <"$work/want")" -eq 3 ] || fail "the case list: $(cat "$work/want")"
node=$(hostname)

# The case ids of a records file, sorted, once each.
case_set() { grep -o '"case":"[^"]*"' "$1" | cut -d'"' -f4 | sort -u; }

# Every record names node $2 and one fingerprint; prints it.
identity() {
  local fps
  fps=$(grep -o '"fingerprint":"[0-9a-f]*"' "$1" | cut -d'"' -f4 | sort -u)
  [ "$(wc -w <<<"$fps")" -eq 1 ] || fail "$1: fingerprints: '$fps'"
  [ "$(grep -c '"schema"' "$1")" -eq "$(grep -c "\"node\":\"$2\"" "$1")" ] ||
    fail "$1: a record without \"node\":\"$2\""
  echo "$fps"
}

step "start the cluster"
"$src/scripts/slurm-local.sh" start "$cluster"
export SLURM_CONF=$cluster/slurm.conf
sinfo

step "the job array (examples/slurm/study.sh)"
study=$work/study
export LANEMAP=$cli CASES=$cases SHARDS=3 ISA=host QUICK=1
# the shards share the machine with whatever else runs: their verdicts are
# recorded, and the orchestration is what this test checks
export LANEMAP_ACCEPT_NOISY=1
if ! timeout 240 "$src/examples/slurm/study.sh" --wait "$study"; then
  tail -n 20 "$study"/logs/* >&2 || true
  squeue >&2 || true
  fail "the study's merge job did not succeed (logs above)"
fi
ls "$study/logs"
[ "$(ls "$study"/logs/lanemap-evaluate-*_*.out | wc -l)" -eq 3 ] ||
  fail "expected 3 array tasks' logs"
for i in 0 1 2; do
  grep -q "1 cases, 1 measured now" "$study"/logs/lanemap-evaluate-*_$i.out ||
    fail "shard $i did not measure its one case"
  grep -q "calibrate host *cached $study/cache/" \
    "$study"/logs/lanemap-evaluate-*_$i.out ||
    fail "shard $i did not take the calibration step's cached profile"
done

merged=$study/merged/host/records.jsonl
case_set "$merged" >"$work/got"
diff -u "$work/want" "$work/got" || fail "merged cases differ from the list"
fp=$(identity "$merged" "$node")
ls "$study/cache" | grep -q "^profile-$fp-host-quick" ||
  fail "no cached profile of machine type $fp in $study/cache"
[ -f "$study/merged/host/profile-$fp-quick.json" ] ||
  fail "the merge did not bundle the shards' profile"
log=$(ls "$study"/logs/lanemap-merge-*.out)
grep -q "3 complete cases" "$log" || fail "merge: $(head -3 "$log")"
grep -q "machine type $fp: [0-9]* records, nodes $node\$" "$log" ||
  fail "merge did not name the machine type: $(head -3 "$log")"
grep -q "calibrate host *bundled" "$log" ||
  fail "the report step did not plan with the bundled profile"
grep -q "3 cases, 0 measured now" "$log" ||
  fail "the report step measured again: $(grep 'measured now' "$log")"
[ -s "$study/merged/report.md" ] || fail "no merged report"

step "the GNU parallel form"
par=$work/parallel
parallel -j1 --halt now,fail=1 \
  "$cli" evaluate --quick --cases "$cases" --isa host --cross none \
  --cache-dir "$study/cache" --shard {}/3 --out "$par/shard{}" ::: 0 1 2 \
  >"$work/parallel.log" 2>&1 || { cat "$work/parallel.log" >&2; fail "parallel"; }
"$cli" merge -o "$par/merged/host" "$par"/shard*/host
case_set "$par/merged/host/records.jsonl" >"$work/got"
diff -u "$work/want" "$work/got" || fail "parallel: merged cases differ"
[ "$(identity "$par/merged/host/records.jsonl" "$node")" = "$fp" ] ||
  fail "parallel: another fingerprint than the array's"
"$cli" evaluate --quick --cases "$cases" --isa host --cross none \
  --cache-dir "$study/cache" --out "$par/merged" >"$work/report.log"
grep -q "3 cases, 0 measured now" "$work/report.log" ||
  fail "parallel: the report measured again"

step "a shard killed mid-append"
cut=$work/cut
mkdir -p "$cut"
cp -r "$par/shard2" "$cut/shard2"
rec=$cut/shard2/host/records.jsonl
head -c $(($(wc -c <"$rec") - 40)) "$rec" >"$rec.tmp" && mv "$rec.tmp" "$rec"
"$cli" merge -o "$cut/merged/host" "$par/shard0/host" "$par/shard1/host" \
  "$cut/shard2/host" >"$work/merge-cut.log" 2>&1
grep -q "1 unterminated line skipped" "$work/merge-cut.log" &&
  grep -q "2 complete cases, 1 incomplete case kept" "$work/merge-cut.log" ||
  fail "merge of a cut shard: $(cat "$work/merge-cut.log")"
"$cli" evaluate --quick --cases "$cases" --isa host --cross none \
  --cache-dir "$study/cache" --out "$cut/merged" >"$work/resume.log"
grep -q "3 cases, 1 measured now" "$work/resume.log" ||
  fail "the cut case was not measured again: $(grep 'measured' "$work/resume.log")"

step "stop the cluster"
trap - EXIT
stop_cluster
echo "slurm test passed in $(($(date +%s) - t0)) s"
