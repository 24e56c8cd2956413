# agentslice — the two commands a newcomer needs:
#   make loadtest   the density benchmark on the embedded runtime (the main job)
#   make test       every test, with the local stand-ins for AWS started and stopped
GO      ?= go
AGENTS  ?= 20000
TURNS   ?= 20
WAVE    ?= 500

.PHONY: all test test-go loadtest loadtest-full vet fmt fuzz

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

fuzz:
	$(GO) test -run XXX -fuzz FuzzDecodeMessage -fuzztime 30s ./internal/runtime/
