#!/usr/bin/env bash
# The storage load test (loadtest/storage): THREADS threads (default 10000)
# through the embedded system on the DSQL store (PostgreSQL) and the
# DynamoDB dedup store (DynamoDB Local). Starts both services and stops
# them on exit, like scripts/test.sh. Extra arguments go to the driver.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/services.sh
use_services postgres dynamodb
go run ./loadtest/storage -threads "${THREADS:-10000}" "$@"
