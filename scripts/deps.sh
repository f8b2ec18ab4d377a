#!/usr/bin/env bash
# Install the Debian packages lanemap needs (scripts/debian-packages.txt),
# only those that are missing, so a second run does nothing.  Runs as root on
# a fresh Debian 12; as another user it only reports what is missing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
list="$here/debian-packages.txt"

installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

missing=()
while read -r pkg _; do
  case "$pkg" in '' | '#'*) continue ;; esac
  installed "$pkg" || missing+=("$pkg")
done <"$list"

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all $(grep -cv '^\s*\(#\|$\)' "$list") packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing Debian packages: ${missing[*]}" >&2
  echo "deps: run this script as root, or: apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
