# agentslice — the two commands a newcomer needs:
#   make loadtest   the density benchmark on the embedded runtime (the main job)
#   make loadtest-priority  priority classes under a background flood (issue 17)
#   make loadtest-longrun   one orchestrator over 10,000 turns: slice cost as a thread ages (issue 31)
#   make loadtest-peers     the same agent workload on Restate, DBOS and agentslice (docs/peers.md)
#   make loadtest-million   a million durable agents under serve: RSS, wake-up, kill -9 recovery (issue 35)
#   make test       every test, with the local stand-ins for AWS started and stopped
#                   (it ends with make e2e's local cloud test)
#   make e2e        only the local cloud test: the Lambda bootstraps under the
#                   Runtime Interface Emulator against fauxqs, DynamoDB Local, PostgreSQL
# For the reliability claims (docs/reliability.md):
#   make chaos      the crash/redelivery/race matrix, then the mutants; ends with its summary line
#   make mutants    the matrix against each deliberate bug in internal/runtime/mutants.go
#   make mutation   mutation score per package (go-gremlins; tests + matrix as oracle); hours
#   make fuzz       every fuzz target for FUZZTIME each
# Deploying to AWS (docs/aws.md): make build, make synth, make deploy, make destroy.
GO      ?= go
AGENTS  ?= 20000
TURNS   ?= 20
WAVE    ?= 500

.PHONY: all test test-go e2e loadtest loadtest-longrun loadtest-million loadtest-full loadtest-durable loadtest-scaling loadtest-storage loadtest-cost loadtest-priority loadtest-sharedtpm loadtest-sandbox loadtest-peers test-peers bench-codec vet fmt fuzz chaos mutants mutation build synth deploy destroy cdk-deps

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
# run. Results (CSV, JSON, SVG chart) land in loadtest/results/. AGENTS,
# TURNS, WAVE, PROFILE (one or both of "infinity unique") and GOMAXPROCS may
# be set in the environment or on the command line.
PROFILE ?= infinity unique
LOADTEST_GOMAXPROCS := $(or $(GOMAXPROCS),1)
loadtest:
	@for p in $(PROFILE); do \
	  GOMAXPROCS=$(LOADTEST_GOMAXPROCS) $(GO) run ./loadtest/density -profile $$p -agents $(AGENTS) -turns $(TURNS) -wave $(WAVE) || exit 1; \
	done

# The full-size run docs/performance.md reports (80,000 agents x 20 turns).
loadtest-full:
	$(MAKE) loadtest AGENTS=80000

# The durable store of serve under the same workload: every commit and
# accepted message fsynced (journal, group commit), 80,000 agents x 20 turns
# on two cores, both profiles (docs/performance.md, "On the durable store").
DURABLE_AGENTS ?= 80000
loadtest-durable:
	@for p in $(PROFILE); do \
	  GOMAXPROCS=2 $(GO) run ./loadtest/density -store sqlite -profile $$p -agents $(DURABLE_AGENTS) -turns $(TURNS) -wave $(WAVE) -baseline-agents -1 || exit 1; \
	done

# Multi-core scaling: each profile at GOMAXPROCS=1 and at every core (nproc),
# each in a fresh child process; per profile one JSON line with cps_1, cps_n,
# scaling and cpu_per_completion_ratio (see docs/performance.md, "Using every core").
loadtest-scaling:
	@for p in $(PROFILE); do \
	  $(GO) run ./loadtest/density -scaling -profile $$p -agents $(AGENTS) -turns $(TURNS) -wave $(WAVE) -progress=false || exit 1; \
	done

# The cold tier's codec alone, on histories shaped like the density
# benchmark's, one core: MB/s, ratio, bytes and CPU-µs per completion for
# each codec in reach (docs/performance.md, "What one core can do").
bench-codec:
	GOMAXPROCS=1 $(GO) test ./loadtest/density -run '^$$' -bench ColdCodec -benchtime 2000x

# Priority classes under a flood (issue 17): 10,000 background threads woken
# at once while 100 interactive users talk, against a simulated provider with
# a rate limit; variants priority, fifo, no_flood. Prints one JSON line last;
# JSON and SVG land in loadtest/results/.
loadtest-priority:
	$(GO) run ./loadtest/priority

# The serverless shared token bucket (AGENTSLICE_SHARED_TPM) on DynamoDB
# Local under 256 concurrent slices (docs/budgets.md); needs
# AGENTSLICE_TEST_DYNAMODB_ENDPOINT.
loadtest-sharedtpm:
	$(GO) run ./loadtest/sharedtpm

# The sandbox toolset: worktree creation (plain and stacked) and search on
# a 5,000-file repository, and 100 coding threads idle on running commands
# (docs/sandbox.md).
loadtest-sandbox:
	$(GO) run ./loadtest/sandbox

# The same agent workload on agentslice (memory and durable store), Restate,
# DBOS and Cloudflare's Agents SDK (workerd), one after the other, each in
# processes of its own (issue 37, docs/peers.md). DBOS needs PostgreSQL:
# AGENTSLICE_TEST_PG_DSN (a schema of its own is created and dropped). One
# JSON line per system, then the table and docs/peers.svg. PEERS_RAMP: after
# the measured run, how long each system may add waiting agents to find the
# largest N within PEERS_LIMIT_GIB (0: no ramp).
PEERS_AGENTS ?= 10000
PEERS_RAMP ?= 5m
PEERS_LIMIT_GIB ?= 8
PEERS_SYSTEMS ?= agentslice-memory,agentslice-sqlite,density-sqlite,restate,dbos,cloudflare
loadtest-peers:
	bash scripts/peers-deps.sh
	$(GO) run ./loadtest/peers -systems $(PEERS_SYSTEMS) -agents $(PEERS_AGENTS) -turns $(TURNS) -ramp $(PEERS_RAMP) -limit-gib $(PEERS_LIMIT_GIB) -chart docs/peers.svg

# The peers harness's own test: a few agents through every system (not in make test).
test-peers:
	bash scripts/peers-deps.sh
	AGENTSLICE_PEERS_TEST=1 $(GO) test -count=1 -v -run TestPeers ./loadtest/peers

# Many threads on the real stores (DSQL store on PostgreSQL, DynamoDB dedup
# on DynamoDB Local): completions/s, slice latency, round trips per slice.
THREADS ?= 10000
loadtest-storage:
	THREADS=$(THREADS) bash scripts/loadtest-storage.sh

# The cost model (agentslice cost, docs/cost.md) fed this machine's
# measurements: the storage load test's requests per slice (checked against
# the model) and the density benchmark's bytes per waiting agent. Not part
# of make test. THREADS (default 1000 here), DENSITY_AGENTS; COST_FLAGS go
# to agentslice cost, e.g. COST_FLAGS='-agents 10000 -turns-per-agent-per-day 2'.
COST_THREADS ?= 1000
COST_FLAGS   ?=
loadtest-cost:
	THREADS=$(if $(filter command line environment,$(origin THREADS)),$(THREADS),$(COST_THREADS)) bash scripts/loadtest-cost.sh $(COST_FLAGS)

# Every fuzz target (found by scripts/fuzz.sh), FUZZTIME each.
FUZZTIME ?= 10s
fuzz:
	FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

# The crash/redelivery/race proof on the memory stores and on the DSQL
# (PostgreSQL) + DynamoDB Local stores, then the mutants. Ends with one line:
#   crash points: N, scenarios: M, runs: R, divergences: D, mutants killed: K/K
chaos:
	bash scripts/chaos.sh

# The memory matrix against each deliberate bug (runtime.Mutants, built
# with the mutants tag); every one must be caught. Needs no service.
mutants:
	bash scripts/mutants.sh

# Mutation testing as a standing measure (not part of make test; CPU heavy,
# hours on two cores): go-gremlins mutates internal/runtime, internal/local
# and internal/disk and runs each package's tests, then the sampled chaos
# matrix, against every mutant; prints per package
#   mutation score <pkg>: K/(K+L) = P% (...)
# with timeouts counted as lived. PKGS narrows it (e.g. PKGS=internal/local);
# GREMLINS_FLAGS adds gremlins flags; MUTATION_SAMPLE=8 runs one mutant in 8
# (docs/mutation.md).
PKGS ?=
mutation:
	bash scripts/mutation.sh $(PKGS)

# --- Deploying to AWS (see docs/aws.md) ---------------------------------

# The Lambda functions, each built from ./cmd/<name> into bin/<name>/bootstrap.
FUNCTIONS := slicefn rapreceiver delayrelay
# The CDK CLI pinned in package.json; extra flags, e.g.
#   make deploy CDK_FLAGS='-c toolServers=https://tools.example.com --profile dev'
CDK       ?= node_modules/.bin/cdk
CDK_FLAGS ?=
# jsii prints an end-of-life banner on every run under Node 20; the app works.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION ?= 20

# Cross-compiled for provided.al2023 on arm64, no Docker. Reproducible
# (-trimpath, no VCS stamp): an unchanged function keeps its asset hash and
# is not redeployed.
build:
	@for fn in $(FUNCTIONS); do \
	  echo "go build ./cmd/$$fn -> bin/$$fn/bootstrap"; rm -f bin/$$fn/bootstrap; \
	  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -buildvcs=false \
	    -ldflags='-s -w' -o bin/$$fn/bootstrap ./cmd/$$fn || exit 1; \
	done

cdk-deps:
	@bash scripts/npm-deps.sh

# The CloudFormation template, offline (no credentials): cdk.out/<stack>.template.json.
# cdk.json turns on validateAgainstDefaultRules and --strict refuses warnings,
# so any finding of the default rules fails this target; so does any finding of
# cdk-nag's AwsSolutions pack (internal/stack/nag.go, suppressions with reasons).
synth: build cdk-deps
	$(CDK) synth --quiet --strict --no-notices $(CDK_FLAGS)
	@ls cdk.out/*.template.json

# Needs AWS credentials and a bootstrapped account (cdk bootstrap). Stack
# outputs (queue URLs, receiver URL, DSQL endpoint) go to cdk-outputs.json.
deploy: build cdk-deps
	$(CDK) deploy --strict --no-notices --outputs-file cdk-outputs.json $(CDK_FLAGS)

destroy: build cdk-deps
	$(CDK) destroy --no-notices $(CDK_FLAGS)

# Long-running agents (issue 31, docs/longrun.md): one simulated
# orchestrator, LONGRUN_TURNS user turns (a child every 50, a subscription
# every 100, compaction at an 8,000-token window) on the memory store, then
# smaller runs on the durable store and, when AGENTSLICE_TEST_PG_DSN is set,
# on PostgreSQL. Per 1,000 turns: items and bytes loaded per slice, tokens
# per completion, stored bytes, CPU per slice; one JSON line per run last.
LONGRUN_TURNS ?= 10000
LONGRUN_SMALL ?= 2000
loadtest-longrun:
	$(GO) run ./loadtest/longrun -turns $(LONGRUN_TURNS)
	$(GO) run ./loadtest/longrun -store sqlite -turns $(LONGRUN_SMALL) -every 200
	@if [ -n "$$AGENTSLICE_TEST_PG_DSN" ]; then $(GO) run ./loadtest/longrun -store postgres -turns $$(( $(LONGRUN_SMALL) / 2 )) -every 100; \
	 else echo "loadtest-longrun: AGENTSLICE_TEST_PG_DSN not set, PostgreSQL run skipped"; fi

# loadtest-million (issue 35): MILLION_AGENTS agents (4 turns each, the
# infinity profile's shape) on serve's durable store, measured at 10,000,
# 100,000 and the full size with the real `agentslice serve`: RSS and disk
# per idle agent, wake-up latency under a background load, kill -9
# recovery, GET /threads pages, the memory store for comparison. One JSON
# line; the chart is docs/million.svg. Not part of make test.
MILLION_AGENTS ?= 1000000
loadtest-million:
	$(GO) run ./loadtest/million -agents $(MILLION_AGENTS)
