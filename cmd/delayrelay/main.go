// Command delayrelay is the delay-relay Lambda: it is triggered by the
// standard delay queue (ReportBatchItemFailures on) and moves each delayed
// wake-up to the FIFO input queue with its thread's MessageGroupId and
// deduplication ID (timers.RelayEvent).
//
// Build for provided.al2023 on arm64:
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o bootstrap ./cmd/delayrelay
//
// Environment: AGENTSLICE_INPUT_QUEUE_URL. Init (the AWS configuration)
// is bounded by lambdafn.InitTimeout, as in the other two functions.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/otelx"
)

func main() {
	ctx, cancel := lambdafn.InitContext()
	defer cancel()
	cfg, err := lambdafn.LoadRelayConfig(os.Getenv)
	if err != nil {
		lambdafn.Fatal("delayrelay", err)
	}
	// Tracing is off unless the OTEL_* environment turns it on
	// (docs/observability.md): a wake-up's span joins the trace of the
	// sleep that set it; BuildRelay exports the spans before each
	// invocation returns.
	tracing, err := otelx.Setup(ctx, "agentslice-delayrelay", os.Getenv)
	if err != nil {
		lambdafn.Fatal("delayrelay", err)
	}
	handle, err := lambdafn.BuildRelay(ctx, cfg, lambdafn.Options{Tracing: tracing})
	if err != nil {
		lambdafn.Fatal("delayrelay", err)
	}
	cancel()
	lambda.Start(handle)
}
