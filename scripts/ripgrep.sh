#!/usr/bin/env bash
# Installs Debian's ripgrep, the sandbox toolset's search backend
# (internal/rap/sandbox TestSearchBackendsAgree compares it with the Go
# search), when it is missing. Idempotent: does nothing when rg is on PATH.
# Without root it says so and exits 0: that test then skips, saying why.
set -euo pipefail
if command -v rg >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "ripgrep.sh: rg is missing and installing it needs root (apt-get install ripgrep); the search backends' test will skip" >&2
  exit 0
fi
echo "ripgrep.sh: installing ripgrep" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ripgrep >/dev/null
command -v rg >/dev/null
