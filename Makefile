# agentslice — the two commands a newcomer needs:
#   make loadtest   the density benchmark on the embedded runtime (the main job)
#   make test       every test, with the local stand-ins for AWS started and stopped
# and, for the reliability claims (docs/reliability.md):
#   make chaos      the crash/redelivery/race matrix; ends with its summary line
#   make fuzz       every fuzz target for FUZZTIME each
GO      ?= go
AGENTS  ?= 20000
TURNS   ?= 20
WAVE    ?= 500

.PHONY: all test test-go loadtest loadtest-full loadtest-storage vet fmt fuzz chaos

all: test

test:
	bash scripts/test.sh

# Only the Go tests, assuming services are already up (see scripts/test.sh).
test-go:
	$(GO) test -race -count=1 ./...

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

# The density benchmark, both profiles, on one core like Infinity's published
# run. Results (CSV, JSON, SVG chart) land in loadtest/results/.
loadtest:
	GOMAXPROCS=1 $(GO) run ./loadtest/density -profile infinity -agents $(AGENTS) -turns $(TURNS) -wave $(WAVE)
	GOMAXPROCS=1 $(GO) run ./loadtest/density -profile unique -agents $(AGENTS) -turns $(TURNS) -wave $(WAVE)

# The full-size run the README reports (80,000 agents x 20 turns).
loadtest-full:
	$(MAKE) loadtest AGENTS=80000

# Many threads on the real stores (DSQL store on PostgreSQL, DynamoDB dedup
# on DynamoDB Local): completions/s, slice latency, round trips per slice.
THREADS ?= 10000
loadtest-storage:
	THREADS=$(THREADS) bash scripts/loadtest-storage.sh

# Every fuzz target (found by scripts/fuzz.sh), FUZZTIME each.
FUZZTIME ?= 10s
fuzz:
	FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

# The crash/redelivery/race proof on the memory stores and on the DSQL
# (PostgreSQL) + DynamoDB Local stores. Ends with one line:
#   crash points: N, scenarios: M, runs: R, divergences: D
chaos:
	bash scripts/chaos.sh
