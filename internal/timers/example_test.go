package timers_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/timers"
)

// The slice Lambda builds its clients once (from config.LoadDefaultConfig)
// and hands them to Timers; a missing setting is named before any call.
func Example() {
	cfg := aws.Config{Region: "us-east-1"}
	tc := timers.Config{
		DelayQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-delay",
		InputQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-input.fifo",
	}
	_, err := timers.New(sqs.NewFromConfig(cfg), scheduler.NewFromConfig(cfg), tc)
	fmt.Println(err)
	tc.SchedulerRoleARN = "arn:aws:iam::123456789012:role/agentslice-scheduler"
	tm, err := timers.New(sqs.NewFromConfig(cfg), scheduler.NewFromConfig(cfg), tc)
	fmt.Println(err)
	_ = tm // the engine calls tm.Schedule and tm.Cancel
	// Output:
	// timers: Config.SchedulerRoleARN is empty
	// <nil>
}

// printQueue prints what it is asked to send.
type printQueue struct{}

func (printQueue) Send(_ context.Context, msgs ...runtime.Message) error {
	for _, m := range msgs {
		fmt.Println("to the input queue:", m.ThreadID, m.Kind, m.ToolCallID)
	}
	return nil
}

// The delay-relay Lambda: every record of the delay queue goes to the FIFO
// input queue (an sqsq.Queue in production); a record that is not a
// message is a batch item failure, logged.
func ExampleRelayEvent() {
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "d-1", Body: `{"v":1,"id":"wake-1","thread_id":"thread-1","kind":"wake","tool_call_id":"call-1"}`},
		{MessageId: "d-2", Body: `not json`},
	}}
	resp := timers.RelayEvent(context.Background(), printQueue{}, ev, func(err error) { fmt.Println("log:", err) })
	fmt.Println("failed:", resp.BatchItemFailures)
	// Output:
	// log: timers: relaying delay-queue message d-2: bad message (no id): malformed JSON: invalid character 'o' in literal null (expecting 'u')
	// to the input queue: thread-1 wake call-1
	// failed: [{d-2}]
}
