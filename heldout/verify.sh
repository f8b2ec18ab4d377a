#!/bin/sh
# Verify every legal variant of every held-out case against the FP64 oracle.
# usage: heldout/verify.sh [path/to/lanemap]   (default: build-rel/lanemap)
# Prints one line per case (id, exit code, the run's summary) and the
# output of any failing case.  Exits 1 if any case failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cli=${1:-$here/../build-rel/lanemap}
list=$(jq -r '.cases[] | "\(.id) \(.kernel) \(.shape[0]),\(.shape[1])"' "$here/cases.json") ||
  exit 2
status=0
while read -r id kernel shape; do
  out=$("$cli" run "$here/$kernel" --shape "$shape" --all-variants --verify 2>&1)
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
