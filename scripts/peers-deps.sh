#!/usr/bin/env bash
# Installs the peers benchmark's npm packages (loadtest/peers/package-lock.json:
# restate-server, the Restate SDK, the DBOS SDK, exact versions; about 240 MB)
# unless already installed from that lock file. Not part of make test.
set -euo pipefail
exec bash "$(dirname "$0")/npm-deps.sh" loadtest/peers
