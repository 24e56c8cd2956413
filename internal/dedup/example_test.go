package dedup_test

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentslice/agentslice/internal/dedup"
)

// A Lambda builds the client once, before lambda.Start, and hands it to the
// store; the engine then calls Seen and Mark.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	store, err := dedup.New(dynamodb.NewFromConfig(cfg), dedup.Config{Table: "agentslice-dedup"})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Mark(ctx, "thread-1", []string{"msg-1"}); err != nil {
		log.Print(err) // a failed mark costs only a history check on redelivery
	}
}
