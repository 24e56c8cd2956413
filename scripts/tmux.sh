#!/usr/bin/env bash
# Installs Debian's tmux for the terminal UI's test (cmd/agentslice
# TestCodeUnderTmux drives `agentslice code` in a real terminal with
# send-keys and capture-pane), when it is missing. Idempotent: does nothing
# when tmux is on PATH.
set -euo pipefail
if command -v tmux >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "tmux.sh: tmux is missing and installing it needs root (apt-get install tmux)" >&2
  exit 1
fi
echo "tmux.sh: installing tmux" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tmux >/dev/null
command -v tmux >/dev/null
