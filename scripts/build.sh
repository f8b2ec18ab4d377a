#!/usr/bin/env bash
# Install missing dependencies, then configure and build one preset
# (default: release) into build/<preset>.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${1:-release}
"$root/scripts/deps.sh"
cd "$root"
cmake --preset "$preset"
cmake --build --preset "$preset"
