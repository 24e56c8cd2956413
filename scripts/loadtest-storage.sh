#!/usr/bin/env bash
# The storage load test (loadtest/storage): THREADS threads (default 10000)
# through the embedded system on the DSQL store (PostgreSQL) and the
# DynamoDB dedup store (DynamoDB Local). Starts both services and stops
# them on exit, like scripts/test.sh. Extra arguments go to the driver.
set -euo pipefail
cd "$(dirname "$0")/.."

services=(scripts/services/postgres.sh scripts/services/dynamodb.sh)
cleanup() {
	for s in "${services[@]}"; do bash "$s" stop >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
bash scripts/npm-deps.sh >/dev/null
for s in "${services[@]}"; do
	bash "$s" start
	eval "$(bash "$s" env)"
done
go run ./loadtest/storage -threads "${THREADS:-10000}" "$@"
