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
)

func main() {
	ctx, cancel := lambdafn.InitContext()
	defer cancel()
	cfg, err := lambdafn.LoadReceiverConfig(os.Getenv)
	if err != nil {
		lambdafn.Fatal("rapreceiver", err)
	}
	rc, log, err := lambdafn.BuildReceiver(ctx, cfg, lambdafn.Options{})
	if err != nil {
		lambdafn.Fatal("rapreceiver", err)
	}
	cancel()
	lambda.Start(lambdafn.FunctionURLHandler(rc, log))
}
