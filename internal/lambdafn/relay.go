package lambdafn

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/timers"
)

// RelayConfig is the delay relay's configuration.
type RelayConfig struct {
	InputQueueURL string
	// BackgroundQueueURL is the background threads' input queue ("": one
	// queue for both classes); wake-ups go to their class's queue.
	BackgroundQueueURL string
	LogLevel           slog.Level
}

// LoadRelayConfig reads the delay relay's configuration.
func LoadRelayConfig(getenv func(string) string) (RelayConfig, error) {
	r := &Reader{Get: getenv}
	c := RelayConfig{
		InputQueueURL:      r.QueueURL(EnvInputQueueURL, "the FIFO input queue URL", true),
		BackgroundQueueURL: r.BackgroundQueueURL(),
		LogLevel:           r.LogLevel(),
	}
	if err := r.Err(); err != nil {
		return RelayConfig{}, err
	}
	return c, nil
}

// BuildRelay builds the delay relay's handler. With opts.Tracing, each
// wake-up with a trace context is relayed under a span of its own
// (SpanRelay, trace.go) and the spans are exported before the handler
// returns.
func BuildRelay(ctx context.Context, cfg RelayConfig, opts Options) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	opts.Defaults(cfg.LogLevel)
	awsCfg, err := opts.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	queue, err := sqsq.NewClassQueues(sqs.NewFromConfig(awsCfg), sqsq.QueueConfig{URL: cfg.InputQueueURL}, cfg.BackgroundQueueURL)
	if err != nil {
		return nil, err
	}
	return WithFlush(RelayHandler(traceQueue(queue, opts.Tracing, SpanRelay), opts.Logger), opts.Tracing), nil
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
