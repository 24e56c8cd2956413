#!/usr/bin/env bash
# Installs Debian's chromium for the console's browser test
# (internal/server TestConsoleInBrowser, driven by chromedp), when it is
# missing. Idempotent: does nothing when chromium is on PATH.
set -euo pipefail
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "chromium.sh: chromium is missing and installing it needs root (apt-get install chromium)" >&2
  exit 1
fi
echo "chromium.sh: installing chromium" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
