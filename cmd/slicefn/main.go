// Command slicefn is the slice Lambda: it is triggered by the SQS FIFO
// input queue (one MessageGroupId per thread, ReportBatchItemFailures on)
// and runs one agentslice slice per message group of each batch.
//
// Build for provided.al2023 on arm64:
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o bootstrap ./cmd/slicefn
//
// It reads its configuration from the environment once (see
// internal/lambdafn: the Env* constants), builds the AWS clients, the
// DSQL pool and the engine before lambda.Start, within
// lambdafn.InitTimeout (tool servers' toolsets are fetched per root thread
// inside invocations),
// and reuses them on every warm invocation. A missing or wrong variable
// stops it at start with a message naming the variable.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/otelx"
	"github.com/agentslice/agentslice/internal/serverless"
)

func main() {
	ctx, cancel := lambdafn.InitContext()
	defer cancel()
	cfg, err := serverless.LoadSliceConfig(os.Getenv)
	if err != nil {
		lambdafn.Fatal("slicefn", err)
	}
	// Tracing is off unless the OTEL_* environment turns it on
	// (docs/observability.md); spans are flushed before each invocation
	// returns.
	tracing, err := otelx.Setup(ctx, "agentslice-slicefn", os.Getenv)
	if err != nil {
		lambdafn.Fatal("slicefn", err)
	}
	tracing.SetGlobal()
	fn, err := serverless.BuildSliceFunction(ctx, cfg, lambdafn.Options{Tracing: tracing})
	if err != nil {
		lambdafn.Fatal("slicefn", err)
	}
	cancel()
	lambda.Start(fn.Handle)
}
