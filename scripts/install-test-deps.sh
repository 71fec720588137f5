#!/usr/bin/env bash
# Installs the system packages `npm test` needs that a fresh Debian machine lacks: redis-server
# and redis-cli for every suite, Debian's chromium for the sandbox's browser test, openssl for
# the TLS test. Run by .ci/run, and by the browser test itself when chromium is missing and it
# runs as root.
# `--list` only prints the missing packages (nothing when all are there).
set -euo pipefail

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools)
command -v chromium >/dev/null || missing+=(chromium)
command -v openssl >/dev/null || missing+=(openssl)

if [[ ${1:-} == --list ]]; then
  echo "${missing[*]}"
  exit 0
fi
if ((${#missing[@]} == 0)); then
  exit 0
fi

command=(apt-get install -y --no-install-recommends "${missing[@]}")
if ! command -v apt-get >/dev/null; then
  echo "Missing: ${missing[*]}, and there is no apt-get: install them with your package manager." >&2
  exit 1
fi
if ((EUID != 0)); then
  echo "Missing: ${missing[*]}. Installing needs root: sudo $0" >&2
  echo "(or: sudo apt-get update && sudo ${command[*]})" >&2
  exit 1
fi
echo "Installing ${missing[*]} (apt-get)" >&2
apt-get update
DEBIAN_FRONTEND=noninteractive "${command[@]}"
