#!/usr/bin/env bash
# Build one preset (default: release) and run its test suite, two tests at a
# time, printing the output of any test that fails.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${1:-release}
"$root/scripts/build.sh" "$preset"
cd "$root"
ctest --preset "$preset"
