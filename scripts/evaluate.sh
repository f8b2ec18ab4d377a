#!/usr/bin/env bash
# The main job: build the release preset, then run `lanemap evaluate --quick`
# with any extra arguments passed through.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/build.sh" release
exec "$root/build/release/lanemap" evaluate --quick --out "$root/build/evaluate" "$@"
