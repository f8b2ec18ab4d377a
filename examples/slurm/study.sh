#!/usr/bin/env bash
# A sharded held-out study on a Slurm cluster, in three steps:
#
#   1. calibrate.sbatch  one job per machine type calibrates the profile into
#                        a cache folder shared by the nodes (keyed by
#                        fingerprint, so nodes of one type share one profile);
#   2. evaluate.sbatch   a job array, one exclusive node per shard, measures
#                        its block of cases with that type's profile;
#   3. merge.sbatch      once every shard has ended, merges the shards'
#                        records and profiles and writes the report, without
#                        measuring again.
#
#   examples/slurm/study.sh [--wait] STUDY_DIR
#
# --wait returns when the merge job ends, with its exit status.  Settings,
# from the environment (sbatch passes the environment to the jobs):
#   LANEMAP      the lanemap command (default: lanemap on PATH)
#   CASES        the case list (default: the bundled held-out set)
#   SHARDS       array tasks (default 8)
#   ISA          ISA target (default avx512); CROSS its leave-one-ISA-out
#                partner (default none)
#   QUICK=1      the quick protocol and quick calibrations (default: full)
#   TYPES        node features, one per machine type: one calibration job
#                each, with --constraint=TYPE (default: one job, any node)
#   MERGE_ARGS   more arguments for `lanemap merge` (--allow-mixed: shards
#                of several machine types, reported apart)
#   SBATCH_ARGS  more arguments for every sbatch (partition, account, time)
# docs/evaluation.md, "Sharding on a Slurm cluster", shows a run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
wait=()
if [ "${1:-}" = --wait ]; then
  wait=(--wait)
  shift
fi
[ $# -eq 1 ] || { echo "usage: $0 [--wait] STUDY_DIR" >&2; exit 2; }
mkdir -p "$1/logs" "$1/cache"
export STUDY
STUDY=$(cd "$1" && pwd)
export SHARDS=${SHARDS:-8} ISA=${ISA:-avx512} CROSS=${CROSS:-none}
read -r -a extra <<<"${SBATCH_ARGS:-}"

# 1. one calibration per machine type
cal=()
for type in ${TYPES:-any}; do
  constraint=()
  [ "$type" = any ] || constraint=(--constraint="$type")
  cal+=("$(sbatch --parsable "${extra[@]}" "${constraint[@]}" \
    --output="$STUDY/logs/%x-%j.out" "$here/calibrate.sbatch")")
done
deps=$(IFS=:; echo "${cal[*]}")

# 2. the shards, once the calibrations succeeded
array=$(sbatch --parsable "${extra[@]}" --array=0-$((SHARDS - 1)) \
  --dependency=afterok:"$deps" --output="$STUDY/logs/%x-%A_%a.out" \
  "$here/evaluate.sbatch")

# 3. merge and report once every shard ended, even one that failed: the
#    merge keeps the cases it finished and reports the rest as missing
merge=$(sbatch --parsable "${extra[@]}" "${wait[@]}" \
  --dependency=afterany:"$array" --output="$STUDY/logs/%x-%j.out" \
  "$here/merge.sbatch")
echo "calibrate ${cal[*]}, evaluate $array, merge $merge -> $STUDY/merged/report.md"
