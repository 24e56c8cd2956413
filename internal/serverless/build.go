package serverless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/timers"
)

// Options adjust how the functions are built. The zero value is what the
// Lambda mains use.
type Options struct {
	// AWS is the AWS configuration; default LoadAWSConfig. Endpoints of
	// local stand-ins come from the SDK's AWS_ENDPOINT_URL_<SERVICE>
	// variables either way.
	AWS *aws.Config
	// Logger gets the functions' JSON logs; default NewLogger(Stdout).
	Logger *slog.Logger
	// Stdout receives logs and EMF records; default os.Stdout.
	Stdout io.Writer
	// HTTPClient talks to tool servers and HTTP model providers; default a
	// client with a 30 s timeout.
	HTTPClient *http.Client
	Now        func() time.Time
}

func (o *Options) defaults(level slog.Level) {
	if o.Stdout == nil {
		o.Stdout = &SyncWriter{W: os.Stdout}
	}
	if o.Logger == nil {
		o.Logger = NewLogger(o.Stdout, level)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// LoadAWSConfig loads the default AWS configuration: the Lambda role's
// credentials and AWS_REGION, and any AWS_ENDPOINT_URL_<SERVICE> override.
func LoadAWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("serverless: loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, &EnvError{Var: EnvRegion, Reason: "missing (the AWS region of the queues and tables)"}
	}
	return cfg, nil
}

func (o *Options) awsConfig(ctx context.Context) (aws.Config, error) {
	if o.AWS != nil {
		return *o.AWS, nil
	}
	return LoadAWSConfig(ctx)
}

// SecretsAPI is the part of *secretsmanager.Client LoadKeyring uses.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// LoadKeyring returns the callback keyring: parsed from src.Inline, or read
// once from the Secrets Manager secret src.SecretARN (its string value is
// the keyring, "id:base64secret[,id:base64secret...]", current key first).
// A rotated secret takes effect in new execution environments.
func LoadKeyring(ctx context.Context, src KeySource, api SecretsAPI) (*rap.Keyring, error) {
	if src.Inline != "" {
		kr, err := rap.ParseKeyring(src.Inline)
		if err != nil {
			return nil, &EnvError{Var: EnvCallbackKeys, Reason: err.Error()}
		}
		return kr, nil
	}
	if src.SecretARN == "" {
		return nil, &EnvError{Var: EnvCallbackKeysSecret, Reason: "missing"}
	}
	out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(src.SecretARN)})
	if err != nil {
		return nil, fmt.Errorf("serverless: reading the callback keyring from secret %s (%s): %w", src.SecretARN, EnvCallbackKeysSecret, err)
	}
	spec := strings.TrimSpace(aws.ToString(out.SecretString))
	if spec == "" {
		return nil, &EnvError{Var: EnvCallbackKeysSecret, Reason: fmt.Sprintf("secret %s has no string value; store the keyring \"id:base64secret,...\" as its SecretString", src.SecretARN)}
	}
	kr, err := rap.ParseKeyring(spec)
	if err != nil {
		return nil, &EnvError{Var: EnvCallbackKeysSecret, Reason: fmt.Sprintf("secret %s: %v", src.SecretARN, err)}
	}
	return kr, nil
}

// SliceFunction is the slice Lambda: everything built once per execution
// environment and reused by every warm invocation.
type SliceFunction struct {
	Handler *Handler
	Engine  *runtime.Engine
	Loader  *rap.Loader
	Pool    *pgxpool.Pool
	disp    *rap.Dispatcher
}

// Handle is the Lambda handler of the slice function.
func (f *SliceFunction) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
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
// toolsets are fetched and validated once here), the model and the engine.
// Nothing connects to the database until the first slice.
func BuildSliceFunction(ctx context.Context, cfg SliceConfig, opts Options) (*SliceFunction, error) {
	opts.defaults(cfg.LogLevel)
	awsCfg, err := opts.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	sqsClient := sqs.NewFromConfig(withCountingHTTP(awsCfg, "sqs"))
	ddbClient := dynamodb.NewFromConfig(withCountingHTTP(awsCfg, "dynamodb"))
	schedClient := scheduler.NewFromConfig(withCountingHTTP(awsCfg, "scheduler"))

	keys, err := LoadKeyring(ctx, cfg.Keys, secretsmanager.NewFromConfig(awsCfg))
	if err != nil {
		return nil, err
	}
	dbCfg := dsql.Config{Dialect: dsql.Postgres, DSN: cfg.PGDSN}
	if cfg.DSQLEndpoint != "" {
		dbCfg = dsql.Config{Dialect: dsql.DSQL, Endpoint: cfg.DSQLEndpoint, Region: cfg.Region, User: cfg.DSQLUser,
			Credentials: awsCfg.Credentials}
	}
	pc, err := dbCfg.PoolConfig()
	if err != nil {
		return nil, fmt.Errorf("serverless: history database (%s or %s): %w", EnvDSQLEndpoint, EnvPGDSN, err)
	}
	instrumentPool(pc)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("serverless: creating the history pool: %w", err)
	}
	f := &SliceFunction{Pool: pool}
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
	queue, err := sqsq.NewQueue(sqsClient, sqsq.QueueConfig{URL: cfg.InputQueueURL})
	if err != nil {
		return fail(err)
	}
	output, err := sqsq.NewOutput(sqsClient, sqsq.OutputConfig{URL: cfg.OutputQueueURL})
	if err != nil {
		return fail(err)
	}
	tm, err := timers.New(sqsClient, schedClient, timers.Config{DelayQueueURL: cfg.DelayQueueURL, InputQueueURL: cfg.InputQueueURL,
		SchedulerRoleARN: cfg.SchedulerRoleARN, ScheduleGroup: cfg.ScheduleGroup, Now: opts.Now})
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
		return fail(fmt.Errorf("serverless: %s: %w", EnvCallbackURL, err))
	}
	f.Loader, err = rap.NewLoader(rap.LoaderConfig{Servers: cfg.ToolServers, Base: base, Dispatcher: f.disp,
		Client: opts.HTTPClient, Now: opts.Now, Logger: opts.Logger})
	if err != nil {
		return fail(fmt.Errorf("serverless: %s: %w", EnvToolServers, err))
	}
	if len(cfg.ToolServers) > 0 {
		// Fetch and compile every toolset now, so the first slice of each
		// root thread only re-reads documents whose schemas are compiled.
		set := f.Loader.Load(ctx)
		opts.Logger.InfoContext(ctx, "tool servers loaded", "servers", len(cfg.ToolServers),
			"tools", len(set.Specs()), "problems", len(set.Problems()))
	}

	mdl, err := model.FromConfig(ctx, cfg.Model, model.WithAWSConfig(awsCfg), model.WithHTTPClient(opts.HTTPClient))
	if err != nil {
		return fail(fmt.Errorf("serverless: %s: %w", EnvModelCatalog, err))
	}
	var compaction *runtime.CompactionPolicy
	if d, ok := mdl.(model.Described); ok && d.Info().ContextWindow > 0 {
		compaction = &runtime.CompactionPolicy{ContextWindow: d.Info().ContextWindow}
	}
	f.Engine = &runtime.Engine{
		History:    dsql.New(pool, dsql.Options{}),
		Dedup:      dd,
		Queue:      queue,
		Output:     output,
		Model:      mdl,
		Tools:      f.Loader,
		Observer:   runtime.SlogObserver{Logger: opts.Logger},
		Now:        opts.Now,
		Compaction: compaction,
	}
	f.Handler = &Handler{Slices: f.Engine, DeadLetters: dlq, Logger: opts.Logger,
		Metrics: &Metrics{W: opts.Stdout, Now: opts.Now}, Margin: cfg.Margin, Now: opts.Now}
	return f, nil
}

// BuildReceiver builds the callback receiver: a rap.Receiver that enqueues
// accepted callbacks on the FIFO input queue.
func BuildReceiver(ctx context.Context, cfg ReceiverConfig, opts Options) (*rap.Receiver, *slog.Logger, error) {
	opts.defaults(cfg.LogLevel)
	awsCfg, err := opts.awsConfig(ctx)
	if err != nil {
		return nil, nil, err
	}
	keys, err := LoadKeyring(ctx, cfg.Keys, secretsmanager.NewFromConfig(awsCfg))
	if err != nil {
		return nil, nil, err
	}
	queue, err := sqsq.NewQueue(sqs.NewFromConfig(awsCfg), sqsq.QueueConfig{URL: cfg.InputQueueURL})
	if err != nil {
		return nil, nil, err
	}
	rc, err := rap.NewReceiver(rap.ReceiverConfig{Keys: keys, Queue: queue, Now: opts.Now, Logger: opts.Logger})
	if err != nil {
		return nil, nil, err
	}
	return rc, opts.Logger, nil
}

// BuildRelay builds the delay relay's handler.
func BuildRelay(ctx context.Context, cfg RelayConfig, opts Options) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	opts.defaults(cfg.LogLevel)
	awsCfg, err := opts.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	queue, err := sqsq.NewQueue(sqs.NewFromConfig(awsCfg), sqsq.QueueConfig{URL: cfg.InputQueueURL})
	if err != nil {
		return nil, err
	}
	return RelayHandler(queue, opts.Logger), nil
}

// RelayHandler moves delay-queue records to the input queue with
// timers.RelayEvent and logs each failure. Malformed records are reported
// as failures and reach the delay queue's dead-letter queue through its
// redrive policy.
func RelayHandler(input runtime.Queue, log *slog.Logger) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		resp := timers.RelayEvent(ctx, input, ev, func(err error) {
			level := slog.LevelWarn
			if runtime.IsPermanent(err) {
				level = slog.LevelError
			}
			log.Log(ctx, level, "relay failed", "error", err.Error())
		})
		if resp.BatchItemFailures == nil {
			resp.BatchItemFailures = []events.SQSBatchItemFailure{}
		}
		log.InfoContext(ctx, "relayed", "records", len(ev.Records), "failed", len(resp.BatchItemFailures))
		return resp, nil
	}
}

// Fatal reports that a function could not start, as one JSON log line on
// stderr naming the problem (an *EnvError names the variable), and exits
// with status 1. Lambda reports the init failure with this line in the
// function's log.
func Fatal(function string, err error) {
	attrs := []any{slog.String("function", function), slog.String("error", err.Error())}
	var ee *EnvError
	if errors.As(err, &ee) {
		attrs = append(attrs, slog.String("variable", ee.Var))
	}
	NewLogger(os.Stderr, slog.LevelInfo).Error("cannot start", attrs...)
	os.Exit(1)
}
