#!/usr/bin/env bash
# The library and the CLI compile for AArch64: every source of the build's
# compile_commands.json (tests, benchmarks and examples left out) is
# checked by aarch64-linux-gnu-gcc -fsyntax-only with -Wall -Wextra -Werror
# and the build's own include paths and definitions.  Third-party headers
# that keep arch-specific parts under /usr/include/x86_64-linux-gnu (hwloc's
# config, OpenBLAS's cblas.h) are read from there last: they declare the
# same API on arm64.  This checks the code a native AArch64 build would
# compile (host detection, the math table, LLVM's host triple); it does not
# link or run it (docs/aarch64.md).
#   syntax-check.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: syntax-check.sh BUILD_DIR}
command -v aarch64-linux-gnu-gcc >/dev/null ||
  { echo "aarch64-linux-gnu-gcc not found: scripts/deps.sh installs gcc-aarch64-linux-gnu" >&2; exit 1; }
python3 - "$build/compile_commands.json" > "$build/aarch64-syntax.cmds" <<'PY'
import json, shlex, sys
for e in json.load(open(sys.argv[1])):
    f = e["file"]
    if any(p in f for p in ("/tests/", "/bench/", "/examples/")):
        continue
    args = shlex.split(e["command"])
    out = ["aarch64-linux-gnu-gcc", "-fsyntax-only", "-Wall", "-Wextra", "-Werror"]
    out += [a for a in args if a.startswith(("-I", "-D", "-std"))]
    it = iter(args)
    for a in it:
        if a == "-isystem":
            out += ["-isystem", next(it).replace("x86_64-linux-gnu", "aarch64-linux-gnu")]
    out += ["-idirafter", "/usr/include", "-idirafter", "/usr/include/x86_64-linux-gnu",
            "-idirafter", "/usr/include/x86_64-linux-gnu/openblas-pthread", f]
    print(" ".join(shlex.quote(x) for x in out))
PY
n=0 failed=0
while read -r cmd; do
  n=$((n + 1))
  if ! eval "$cmd"; then
    failed=$((failed + 1))
    echo "FAILED for aarch64: ${cmd##* }" >&2
  fi
done < "$build/aarch64-syntax.cmds"
echo "aarch64 syntax check: $n sources, $failed failed"
[ "$n" -gt 50 ] && [ "$failed" -eq 0 ]
