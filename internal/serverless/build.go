package serverless

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/timers"
)

// SliceFunction is the slice Lambda: everything built once per execution
// environment and reused by every warm invocation.
type SliceFunction struct {
	Handler *Handler
	Engine  *runtime.Engine
	Loader  *rap.Loader
	Pool    *pgxpool.Pool
	disp    *rap.Dispatcher
	keys    *lambdafn.KeyringCache
}

// Handle is the Lambda handler of the slice function. It first re-reads
// the callback keyring when its TTL has passed (lambdafn.KeyringCache), so
// callback URLs are signed with a rotated key without a cold start.
func (f *SliceFunction) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	f.keys.Refresh(ctx)
	return f.Handler.Handle(ctx, ev)
}

// Close waits for background notifications and closes the pool.
func (f *SliceFunction) Close() {
	f.disp.Close()
	f.Pool.Close()
}

// BuildSliceFunction builds the slice function from cfg: AWS clients whose
// requests are counted per slice, the DSQL (or PostgreSQL) pool, the
// stores, the queues, the timers, the RAP loader with the built-in thread
// and sleep tools as its base toolbox (the configured tool servers'
// toolsets are fetched lazily, per root thread), the model and the engine.
// Nothing connects to the database until the first slice. ctx bounds the
// network calls of init (the AWS configuration, the keyring secret): the
// main passes lambdafn.InitContext.
func BuildSliceFunction(ctx context.Context, cfg SliceConfig, opts lambdafn.Options) (*SliceFunction, error) {
	opts.Defaults(cfg.LogLevel)
	awsCfg, err := opts.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	sqsClient := sqs.NewFromConfig(withCountingHTTP(awsCfg, "sqs"))
	ddbClient := dynamodb.NewFromConfig(withCountingHTTP(awsCfg, "dynamodb"))
	schedClient := scheduler.NewFromConfig(withCountingHTTP(awsCfg, "scheduler"))

	keyCache, err := lambdafn.NewKeyringCache(ctx, cfg.Keys, secretsmanager.NewFromConfig(awsCfg), opts.KeyringTTL, opts.Now, opts.Logger)
	if err != nil {
		return nil, err
	}
	keys := keyCache.Keys
	dbCfg := dsql.Config{Dialect: dsql.Postgres, DSN: cfg.PGDSN}
	if cfg.DSQLEndpoint != "" {
		dbCfg = dsql.Config{Dialect: dsql.DSQL, Endpoint: cfg.DSQLEndpoint, Region: cfg.Region, User: cfg.DSQLUser,
			Credentials: awsCfg.Credentials}
	}
	pc, err := dbCfg.PoolConfig()
	if err != nil {
		return nil, fmt.Errorf("serverless: history database (%s or %s): %w", lambdafn.EnvDSQLEndpoint, lambdafn.EnvPGDSN, err)
	}
	instrumentPool(pc)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("serverless: creating the history pool: %w", err)
	}
	f := &SliceFunction{Pool: pool, keys: keyCache}
	fail := func(err error) (*SliceFunction, error) {
		pool.Close()
		if f.disp != nil {
			f.disp.Close()
		}
		return nil, err
	}

	dd, err := dedup.New(ddbClient, dedup.Config{Table: cfg.DedupTable})
	if err != nil {
		return fail(err)
	}
	queue, err := sqsq.NewClassQueues(sqsClient, sqsq.QueueConfig{URL: cfg.InputQueueURL}, cfg.BackgroundQueueURL)
	if err != nil {
		return fail(err)
	}
	output, err := sqsq.NewOutput(sqsClient, sqsq.OutputConfig{URL: cfg.OutputQueueURL})
	if err != nil {
		return fail(err)
	}
	tm, err := timers.New(sqsClient, schedClient, timers.Config{DelayQueueURL: cfg.DelayQueueURL, InputQueueURL: cfg.InputQueueURL,
		BackgroundQueueURL: cfg.BackgroundQueueURL,
		SchedulerRoleARN:   cfg.SchedulerRoleARN, ScheduleGroup: cfg.ScheduleGroup, DeadLetterARN: cfg.ScheduleDLQARN, Now: opts.Now})
	if err != nil {
		return fail(err)
	}
	dlq, err := NewDeadLetters(sqsClient, cfg.DLQURL)
	if err != nil {
		return fail(err)
	}

	base := runtime.NewToolbox()
	for _, e := range append(runtime.ThreadTools(), runtime.SleepTools(tm, opts.Now)...) {
		if err := base.Add(e); err != nil {
			return fail(err)
		}
	}
	f.disp, err = rap.NewDispatcher(rap.DispatcherConfig{Signer: &rap.Signer{Keys: keys, BaseURL: cfg.CallbackURL, Now: opts.Now},
		Client: opts.HTTPClient, Logger: opts.Logger})
	if err != nil {
		return fail(fmt.Errorf("serverless: %s: %w", lambdafn.EnvCallbackURL, err))
	}
	f.Loader, err = rap.NewLoader(rap.LoaderConfig{Servers: cfg.ToolServers, Base: base, Dispatcher: f.disp,
		Client: opts.HTTPClient, Now: opts.Now, Logger: opts.Logger})
	if err != nil {
		return fail(fmt.Errorf("serverless: %s: %w", lambdafn.EnvToolServers, err))
	}
	// Toolsets are not fetched here: the loader fetches them per root
	// thread on first use, inside an invocation, under the slice's
	// deadline (as `serve` does). A slow tool server then delays one slice
	// instead of pushing init past Lambda's 10 s limit.

	// Model requests get a client of their own, without the tool client's
	// timeout: a stream is bounded by the slice's context alone.
	mdl, err := model.FromConfig(ctx, cfg.Model, model.WithAWSConfig(awsCfg), model.WithHTTPClient(opts.ModelHTTPClient))
	if err != nil {
		return fail(fmt.Errorf("serverless: %s: %w", lambdafn.EnvModelCatalog, err))
	}
	metrics := &lambdafn.Metrics{W: opts.Stdout, Now: opts.Now}
	mdl = &throttleCounter{Model: mdl, name: cfg.Model.Name, metrics: metrics, log: opts.Logger}
	if cfg.SharedTPM && cfg.Model.TokensPerMinute > 0 {
		bucket, err := dedup.NewTokenBucket(ddbClient, cfg.DedupTable, int64(cfg.Model.TokensPerMinute), opts.Now)
		if err != nil {
			return fail(err)
		}
		mdl = &sharedTPM{Model: mdl, name: cfg.Model.Name, maxOutput: cfg.Model.MaxOutputTokens, bucket: bucket, log: opts.Logger}
	}
	prices := slicePricer{cfg: &cfg}
	mdl = &spendMetrics{Model: mdl, name: cfg.Model.Name, prices: prices, metrics: metrics, log: opts.Logger}
	// The catalog entry's context window (validated positive) sets when a
	// thread is summarised.
	compaction := &runtime.CompactionPolicy{ContextWindow: cfg.Model.ContextWindow}
	agents, err := buildAgents(ctx, cfg, mdl, model.WithAWSConfig(awsCfg), model.WithHTTPClient(opts.ModelHTTPClient))
	if err != nil {
		return fail(fmt.Errorf("serverless: %s: %w", lambdafn.EnvAgents, err))
	}
	history := dsql.New(pool, dsql.Options{})
	if set, ok := agents.(*runtime.AgentSet); ok {
		// Pinned threads run versions the deploy stored beside history
		// (`agentslice migrate -agents`), read when a thread first asks
		// for one the configuration does not hold.
		set.LoadMissingFrom(history)
	}
	f.Engine = &runtime.Engine{
		History:    history,
		Dedup:      dd,
		Queue:      queue,
		Output:     output,
		Model:      mdl,
		Tools:      f.Loader,
		Observer:   runtime.SlogObserver{Logger: opts.Logger},
		Now:        opts.Now,
		Compaction: compaction,
		Limits: runtime.Limits{MaxSubscriptions: cfg.MaxSubscriptions, MaxChildren: cfg.MaxChildren,
			MaxInheritedDepth: cfg.MaxInheritedDepth},
		Faults: killFaults(os.Getenv), // nil unless built with the agentslice_faults tag
		Agents: agents,
		// Per-call deadlines and status checks, through the same timers
		// as the sleeps (runtime/liveness.go).
		Liveness: &runtime.Liveness{Timers: tm},
	}
	// A provider outage is a wait through the same timers (an SQS delay,
	// a schedule beyond 15 minutes), not a held function or a dead letter
	// (runtime/provider_wait.go).
	// Completions are priced (cost per thread, dollar limits) and admitted
	// against threads' and agents' limits; with TreeBudgets, against their
	// trees' in the dedup table too (runtime/budget.go).
	f.Engine.Budgets = &runtime.Budgets{Prices: prices}
	if cfg.TreeBudgets {
		l, err := dedup.NewLedger(ddbClient, cfg.DedupTable)
		if err != nil {
			return fail(err)
		}
		f.Engine.Budgets.Ledger = l
	}
	if cfg.ProviderWait != nil {
		pw := *cfg.ProviderWait
		pw.Timers = tm
		f.Engine.ProviderWait = &pw
	}
	settle, err := NewQueueSettler(sqsClient, cfg.InputQueueURL, cfg.BackgroundQueueURL)
	if err != nil {
		return fail(err)
	}
	f.Handler = &Handler{Slices: f.Engine, DeadLetters: dlq, Logger: opts.Logger,
		Metrics: metrics, Margin: cfg.Margin, Now: opts.Now, Notices: f.disp, Settle: settle}
	if opts.Tracing != nil {
		f.Engine.Tracer, f.Handler.Flusher = opts.Tracing.Tracer(), opts.Tracing
	}
	return f, nil
}

// buildAgents builds the agent set, each model an agent names once (def is
// the configured model, for agents that name none). Nil without agents.
func buildAgents(ctx context.Context, cfg SliceConfig, def runtime.Model, mopts ...model.Option) (runtime.Agents, error) {
	if len(cfg.Agents) == 0 {
		return nil, nil
	}
	models := map[string]runtime.Model{cfg.Model.Name: def}
	set, err := runtime.NewAgentSet(cfg.Agents, cfg.DefaultAgent, func(name string) (runtime.Model, int, error) {
		if name == "" {
			return def, cfg.Model.ContextWindow, nil
		}
		mc, err := cfg.Catalog.Lookup(name)
		if err != nil {
			return nil, 0, err
		}
		if m, ok := models[name]; ok {
			return m, mc.ContextWindow, nil
		}
		m, err := model.FromConfig(ctx, mc, mopts...)
		if err != nil {
			return nil, 0, err
		}
		models[name] = m
		return m, mc.ContextWindow, nil
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}
