package timers_test

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/timers"
)

// The slice Lambda builds its clients once and hands them to Timers.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	tm, err := timers.New(sqs.NewFromConfig(cfg), scheduler.NewFromConfig(cfg), timers.Config{
		DelayQueueURL:    "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-delay",
		InputQueueURL:    "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-input.fifo",
		SchedulerRoleARN: "arn:aws:iam::123456789012:role/agentslice-scheduler",
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = tm // the engine calls tm.Schedule and tm.Cancel
}

// The delay-relay Lambda: every record of the delay queue goes to the FIFO
// input queue.
func ExampleRelayEvent() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	input, err := sqsq.NewQueue(sqs.NewFromConfig(cfg), sqsq.QueueConfig{URL: "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-input.fifo"})
	if err != nil {
		log.Fatal(err)
	}
	handler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return timers.RelayEvent(ctx, input, ev, func(err error) { log.Print(err) }), nil
	}
	_ = handler // lambda.Start(handler)
}
