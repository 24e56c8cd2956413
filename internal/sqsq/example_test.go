package sqsq_test

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// A Lambda builds one SQS client before lambda.Start and shares it between
// the input sender and the output sender.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	input, err := sqsq.NewQueue(client, sqsq.QueueConfig{URL: "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-input.fifo"})
	if err != nil {
		log.Fatal(err)
	}
	err = input.Send(ctx, runtime.Message{ID: "msg-1", ThreadID: "thread-1", Kind: runtime.KindUser, Text: "hello"})
	if err != nil {
		log.Print(err)
	}
}

// The slice Lambda turns each record into a message; a bad record is a
// batch item failure that ends in the dead-letter queue.
func ExampleDecodeRecord() {
	handle := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, rec := range ev.Records {
			m, err := sqsq.DecodeRecord(rec)
			if err != nil {
				log.Print(err) // names the SQS message, the field and the problem
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
				continue
			}
			_ = m // group by m.ThreadID and run slices
		}
		return resp, nil
	}
	_ = handle
}
