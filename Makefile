# agentslice — the two commands a newcomer needs:
#   make loadtest   the density benchmark on the embedded runtime (the main job)
#   make test       every test, with the local stand-ins for AWS started and stopped
#                   (it ends with make e2e's local cloud test)
#   make e2e        only the local cloud test: the Lambda bootstraps under the
#                   Runtime Interface Emulator against fauxqs, DynamoDB Local, PostgreSQL
GO      ?= go
AGENTS  ?= 20000
TURNS   ?= 20
WAVE    ?= 500

.PHONY: all test test-go e2e loadtest loadtest-full vet fmt fuzz

all: test

test:
	bash scripts/test.sh

# The local cloud test; starts and stops the services itself unless their
# variables are already exported (scripts/test.sh does both).
e2e:
	bash scripts/e2e.sh

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
	$(GO) test -run XXX -fuzz FuzzHandle -fuzztime 30s ./internal/serverless/
	$(GO) test -run XXX -fuzz FuzzFunctionURLHandler -fuzztime 30s ./internal/lambdafn/
