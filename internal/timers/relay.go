package timers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Relay moves one record of the delay queue to the FIFO input queue: it
// decodes the wake-up message and sends it with input (an *sqsq.Queue in the
// delay-relay Lambda), which gives it the thread's MessageGroupId and its
// deduplication ID. A malformed body is a *runtime.BadMessageError.
func Relay(ctx context.Context, input runtime.Queue, rec events.SQSMessage) error {
	m, err := DecodeWakeUp(rec.Body)
	if err != nil {
		return fmt.Errorf("timers: relaying delay-queue message %s: %w", rec.MessageId, err)
	}
	if err := input.Send(ctx, m); err != nil {
		return fmt.Errorf("timers: relaying delay-queue message %s (%s of thread %s): %w", rec.MessageId, m.ID, m.ThreadID, err)
	}
	return nil
}

// RelayEvent relays a batch of delay-queue records with one Send (batched
// requests where there are several), and reports the records that failed as
// batch item failures, for an event source mapping with
// ReportBatchItemFailures. Malformed records fail alone; when the send
// fails, every record of it is reported and comes back later (the input
// queue's deduplication and the runtime's dedup absorb the repeats). log,
// if not nil, gets each failure.
func RelayEvent(ctx context.Context, input runtime.Queue, ev events.SQSEvent, log func(error)) events.SQSEventResponse {
	var (
		resp events.SQSEventResponse
		msgs []runtime.Message
		ids  []string
	)
	fail := func(id string, err error) {
		if log != nil {
			log(err)
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	for _, rec := range ev.Records {
		m, err := DecodeWakeUp(rec.Body)
		if err != nil {
			fail(rec.MessageId, fmt.Errorf("timers: relaying delay-queue message %s: %w", rec.MessageId, err))
			continue
		}
		msgs = append(msgs, m)
		ids = append(ids, rec.MessageId)
	}
	if len(msgs) == 0 {
		return resp
	}
	if err := input.Send(ctx, msgs...); err != nil {
		err = fmt.Errorf("timers: relaying %d delay-queue messages: %w", len(msgs), err)
		for _, id := range ids {
			fail(id, err)
		}
	}
	return resp
}

// DecodeWakeUp decodes the body of a record the delay relay reads: either a
// wake-up message as the delay queue holds it, or a dead-lettered
// EventBridge Scheduler invocation. Scheduler delivers a schedule that
// failed after its retries to the schedule's DeadLetterConfig queue with
// the target's Input as the message body (the failure is described in
// message attributes such as ERROR_CODE and SCHEDULE_ARN); for the
// universal SQS target that Input is the SendMessage request this package
// wrote (QueueUrl, MessageBody, MessageGroupId, MessageDeduplicationId), so
// the wake-up is its MessageBody. Relaying it to the input queue turns the
// dead-lettered wake-up into a delivered one, with the same deduplication
// ID as every other path.
func DecodeWakeUp(body string) (runtime.Message, error) {
	var in targetInput
	if json.Unmarshal([]byte(body), &in) == nil && in.MessageBody != "" && in.QueueUrl != "" {
		body = in.MessageBody
	}
	return runtime.DecodeMessage([]byte(body))
}
