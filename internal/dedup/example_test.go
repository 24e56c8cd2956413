package dedup_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentslice/agentslice/internal/dedup"
)

// A Lambda builds the client once (from config.LoadDefaultConfig), before
// lambda.Start, and hands it to the store; the engine then calls Seen and
// Mark (a failed Mark costs only a history check on redelivery). A missing
// setting is named before any call.
func Example() {
	client := dynamodb.NewFromConfig(aws.Config{Region: "us-east-1"})
	_, err := dedup.New(client, dedup.Config{})
	fmt.Println(err)
	store, err := dedup.New(client, dedup.Config{Table: "agentslice-dedup"})
	fmt.Println(err)
	_ = store // runtime.Engine{Dedup: store}
	// Output:
	// dedup: Config.Table is empty
	// <nil>
}
