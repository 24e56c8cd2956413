// Command rapreceiver is the RAP callback receiver Lambda behind a Function
// URL: it verifies each callback's signed URL, validates the body and
// enqueues the message on the FIFO input queue; anything rejected gets a
// 4xx (see lambdafn.FunctionURLHandler).
//
// Build for provided.al2023 on arm64:
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o bootstrap ./cmd/rapreceiver
//
// Environment: AGENTSLICE_INPUT_QUEUE_URL and exactly one of
// AGENTSLICE_CALLBACK_KEYS_SECRET (production) or AGENTSLICE_CALLBACK_KEYS
// (local runs).
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
	cfg, err := lambdafn.LoadReceiverConfig(os.Getenv)
	if err != nil {
		lambdafn.Fatal("rapreceiver", err)
	}
	// Tracing is off unless the OTEL_* environment turns it on
	// (docs/observability.md): a callback's span joins the trace its URL
	// was signed with, and is exported before the invocation returns.
	tracing, err := otelx.Setup(ctx, "agentslice-rapreceiver", os.Getenv)
	if err != nil {
		lambdafn.Fatal("rapreceiver", err)
	}
	rc, log, err := lambdafn.BuildReceiver(ctx, cfg, lambdafn.Options{Tracing: tracing})
	if err != nil {
		lambdafn.Fatal("rapreceiver", err)
	}
	cancel()
	lambda.Start(lambdafn.WithFlush(lambdafn.FunctionURLHandler(rc, log), tracing))
}
