#!/usr/bin/env bash
# Installs the Debian packages gaia-env needs, or prints the exact command when it cannot.
# Arguments: package lists to read (default scripts/apt-packages.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
lists=("${@:-scripts/apt-packages.txt}")
mapfile -t wanted < <(cat "${lists[@]}" | grep -v '^\s*#' | tr -s ' \t' '\n' | sed '/^$/d')
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  $cmd
else
  echo "Missing system packages: ${missing[*]}" >&2
  echo "Install them with:  sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
