#!/bin/sh
# Verify every legal variant (strict and relaxed) of every held-out case
# against the FP64 oracle.
# usage: heldout/verify.sh [path/to/lanemap [cases.json]]
#   (defaults: build/release/lanemap, heldout/cases.json; set 2 is
#   heldout/set2/cases.json).  Kernel paths are relative to the case list.
# Prints one line per case (id, exit code, the run's summary) and the
# output of any failing case.  Exits 1 if any case failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cli=${1:-$here/../build/release/lanemap}
cases=${2:-$here/cases.json}
dir=$(cd "$(dirname "$cases")" && pwd) || exit 2
list=$(jq -r '.cases[] | "\(.id) \(.kernel) \(.shape[0]),\(.shape[1])"' "$cases") ||
  exit 2
status=0
while read -r id kernel shape; do
  out=$("$cli" run "$dir/$kernel" --shape "$shape" --all-variants --fp both --verify 2>&1)
  rc=$?
  printf '%-32s rc=%d  %s\n' "$id" "$rc" "$(printf '%s\n' "$out" | tail -n 1)"
  if [ "$rc" -ne 0 ]; then
    printf '%s\n' "$out" | grep -v ' ok, verified' | head -n 20
    status=1
  fi
done <<LIST
$list
LIST
exit $status
