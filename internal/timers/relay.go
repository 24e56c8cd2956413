package timers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

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

// DecodeWakeUp decodes the body of a record the delay relay reads: a
// wake-up message as the delay queue holds it, or a dead-lettered
// EventBridge Scheduler invocation. Scheduler delivers a schedule that
// failed after its retries to the schedule's DeadLetterConfig queue as a
// "dead-letter event" (the failure is described in message attributes such
// as ERROR_CODE and SCHEDULE_ARN); for the universal SQS target the
// target's Input is the SendMessage request this package wrote (QueueUrl,
// MessageBody, MessageGroupId, MessageDeduplicationId), so the wake-up is
// its MessageBody. The body's exact shape is not documented and no local
// emulator produces it, so both are accepted: the Input itself as the
// body, or a JSON object holding it (as a JSON string or an object) in one
// of its fields, at most maxWrapDepth levels down. Relaying it to the
// input queue turns the dead-lettered wake-up into a delivered one, with
// the same deduplication ID as every other path.
func DecodeWakeUp(body string) (runtime.Message, error) {
	if in, ok := asTargetInput([]byte(body)); ok {
		return runtime.DecodeMessage([]byte(in.MessageBody))
	}
	m, err := runtime.DecodeMessage([]byte(body))
	if err == nil {
		return m, nil
	}
	var wrapper any
	if json.Unmarshal([]byte(body), &wrapper) == nil {
		if in, ok := findTargetInput(wrapper, maxWrapDepth); ok {
			return runtime.DecodeMessage([]byte(in.MessageBody))
		}
	}
	return m, err
}

// maxWrapDepth bounds how deep DecodeWakeUp looks for the target input in
// a wrapper.
const maxWrapDepth = 3

// asTargetInput decodes b as the universal target's SendMessage request.
func asTargetInput(b []byte) (targetInput, bool) {
	var in targetInput
	if json.Unmarshal(b, &in) != nil || in.MessageBody == "" || in.QueueUrl == "" {
		return targetInput{}, false
	}
	return in, true
}

// findTargetInput looks for the target input in v's fields (sorted by
// name, so the result does not depend on map order), as an embedded
// object or a JSON string, depth levels down at most.
func findTargetInput(v any, depth int) (targetInput, bool) {
	obj, ok := v.(map[string]any)
	if !ok || depth == 0 {
		return targetInput{}, false
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var raw []byte
		switch f := obj[k].(type) {
		case string:
			raw = []byte(f)
		case map[string]any:
			raw, _ = json.Marshal(f)
		default:
			continue
		}
		if in, ok := asTargetInput(raw); ok {
			return in, true
		}
		var inner any
		if json.Unmarshal(raw, &inner) == nil {
			if in, ok := findTargetInput(inner, depth-1); ok {
				return in, true
			}
		}
	}
	return targetInput{}, false
}
