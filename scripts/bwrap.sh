#!/usr/bin/env bash
# Installs Debian's bubblewrap, the sandbox toolset's jail for run_command
# (internal/rap/sandbox TestJail and serve's jailed commands), when it is
# missing. Idempotent: does nothing when bwrap is on PATH. Without root it
# says so and exits 0: the jail's tests then skip, saying why.
set -euo pipefail
if command -v bwrap >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "bwrap.sh: bwrap is missing and installing it needs root (apt-get install bubblewrap); the jail tests will skip" >&2
  exit 0
fi
echo "bwrap.sh: installing bubblewrap" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
command -v bwrap >/dev/null
