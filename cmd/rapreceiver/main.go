// Command rapreceiver is the RAP callback receiver Lambda behind a Function
// URL: it verifies each callback's signed URL, validates the body and
// enqueues the message on the FIFO input queue; anything rejected gets a
// 4xx (see serverless.FunctionURLHandler).
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
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agentslice/agentslice/internal/serverless"
)

func main() {
	ctx := context.Background()
	cfg, err := serverless.LoadReceiverConfig(os.Getenv)
	if err != nil {
		serverless.Fatal("rapreceiver", err)
	}
	rc, log, err := serverless.BuildReceiver(ctx, cfg, serverless.Options{})
	if err != nil {
		serverless.Fatal("rapreceiver", err)
	}
	lambda.Start(serverless.FunctionURLHandler(rc, log))
}
