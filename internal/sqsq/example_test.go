package sqsq_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// A Lambda builds one SQS client before lambda.Start (from
// config.LoadDefaultConfig) and shares it between the input sender and the
// output sender. The input queue must be the FIFO one: a wrong URL is
// refused before anything is sent.
func Example() {
	client := sqs.NewFromConfig(aws.Config{Region: "us-east-1"})
	_, err := sqsq.NewQueue(client, sqsq.QueueConfig{URL: "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-input"})
	fmt.Println(err)
	input, err := sqsq.NewQueue(client, sqsq.QueueConfig{URL: "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-input.fifo"})
	fmt.Println(err)
	// Then, in a handler: one SendMessageBatch per thread's messages.
	send := func(ctx context.Context) error {
		return input.Send(ctx, runtime.Message{ID: "msg-1", ThreadID: "thread-1", Kind: runtime.KindUser, Text: "hello"})
	}
	_ = send
	// Output:
	// sqsq: QueueConfig.URL "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-input" is not a FIFO queue (its name must end in .fifo)
	// <nil>
}

// The slice Lambda turns each record into a message; a bad record is a
// batch item failure that ends in the dead-letter queue.
func ExampleDecodeRecord() {
	records := []events.SQSMessage{
		{MessageId: "sqs-1", Body: `{"v":1,"id":"msg-1","thread_id":"thread-1","kind":"user","text":"hello"}`,
			Attributes: map[string]string{"MessageGroupId": sqsq.GroupID("thread-1")}},
		{MessageId: "sqs-2", Body: `{"v":1,"id":"msg-2","thread_id":"thread-1","kind":"shout","text":"HELLO"}`,
			Attributes: map[string]string{"MessageGroupId": sqsq.GroupID("thread-1")}},
	}
	var resp events.SQSEventResponse
	for _, rec := range records {
		m, err := sqsq.DecodeRecord(rec)
		if err != nil {
			fmt.Println(err) // names the SQS message, the field and the problem
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			continue
		}
		fmt.Println(m.ThreadID, m.Kind, m.Text) // group by m.ThreadID and run slices
	}
	fmt.Println("failed:", resp.BatchItemFailures)
	// Output:
	// thread-1 user hello
	// sqsq: decoding SQS message sqs-2: bad message msg-2: field "kind": unknown kind "shout"
	// failed: [{sqs-2}]
}
