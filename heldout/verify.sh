#!/bin/sh
# Verify every legal variant of every held-out case against the FP64 oracle.
# usage: heldout/verify.sh [path/to/lanemap]   (default: build-rel/lanemap)
# Prints one line per case: id, variants, ok, failed.  Exit 1 if any failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cli=${1:-$here/../build-rel/lanemap}
status=0
jq -r '.cases[] | "\(.id) \(.kernel) \(.shape[0]),\(.shape[1])"' "$here/cases.json" |
while read -r id kernel shape; do
  out=$("$cli" run "$here/$kernel" --shape "$shape" --all-variants --verify 2>&1)
  rc=$?
  summary=$(printf '%s\n' "$out" | tail -n 1)
  printf '%-32s rc=%d  %s\n' "$id" "$rc" "$summary"
  [ "$rc" -eq 0 ] || { printf '%s\n' "$out" | grep -v ' ok, verified' | head -n 20; status=1; }
done
exit $status
