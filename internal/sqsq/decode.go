package sqsq

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentslice/agentslice/internal/runtime"
)

// DecodeRecord turns a record of the FIFO input queue into a message. The
// body must be a valid runtime message (runtime.DecodeMessage), and the
// record's MessageGroupId must be GroupID of its thread_id. Failures are
// *runtime.BadMessageError values naming the field at fault; they are
// wrapped with the SQS message ID. A message its sender did not stamp
// (Message.At) gets the record's SentTimestamp as its arrival.
func DecodeRecord(rec events.SQSMessage) (runtime.Message, error) {
	m, err := runtime.DecodeMessage([]byte(rec.Body))
	if err != nil {
		return m, fmt.Errorf("sqsq: decoding SQS message %s: %w", rec.MessageId, err)
	}
	group, ok := rec.Attributes["MessageGroupId"]
	if !ok || group == "" {
		return m, fmt.Errorf("sqsq: decoding SQS message %s: %w", rec.MessageId, &runtime.BadMessageError{ID: m.ID,
			Reason: "the record has no MessageGroupId attribute: input messages come from a FIFO queue"})
	}
	if want := GroupID(m.ThreadID); group != want {
		return m, fmt.Errorf("sqsq: decoding SQS message %s: %w", rec.MessageId, &runtime.BadMessageError{ID: m.ID, Field: "thread_id",
			Reason: fmt.Sprintf("thread %q must arrive in message group %q, but the record's MessageGroupId is %q", m.ThreadID, want, group)})
	}
	if m.At == 0 {
		// Not stamped by its sender: its arrival is when SQS accepted it,
		// so that its queue delay (runtime.Item.Took) is measured on AWS.
		if ms, err := strconv.ParseInt(rec.Attributes["SentTimestamp"], 10, 64); err == nil && ms > 0 {
			m.At = runtime.Stamp(ms)
		}
	}
	if m.Trace == "" {
		// A producer outside the runtime may put the trace context in a
		// message attribute instead of the body (the runtime's own
		// messages carry it in the body, which every queue keeps).
		if a, ok := rec.MessageAttributes[TraceAttribute]; ok && a.StringValue != nil && *a.StringValue != "" {
			m.Trace = *a.StringValue
			if err := m.Validate(); err != nil {
				return m, fmt.Errorf("sqsq: decoding SQS message %s: message attribute %s: %w", rec.MessageId, TraceAttribute, err)
			}
		}
	}
	return m, nil
}

// TraceAttribute is the SQS message attribute a producer may carry a W3C
// traceparent in, when the body has none.
const TraceAttribute = "traceparent"

// ReceiveCount returns the record's ApproximateReceiveCount, or 0 when it is
// missing or unreadable.
func ReceiveCount(rec events.SQSMessage) int {
	n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// FirstDelivery reports whether SQS delivers the record for the first time
// (runtime.SliceInput.FirstDelivery). An unknown count is not a first
// delivery.
func FirstDelivery(rec events.SQSMessage) bool { return ReceiveCount(rec) == 1 }

// AttributesAPI is the part of *sqs.Client QueueMaxMessageBytes uses.
type AttributesAPI interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// QueueMaxMessageBytes reads a queue's MaximumMessageSize attribute, for
// QueueConfig.MaxMessageBytes and OutputConfig.MaxMessageBytes when the
// deployment does not pass it in.
func QueueMaxMessageBytes(ctx context.Context, api AttributesAPI, url string) (int, error) {
	out, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMaximumMessageSize},
	})
	if err != nil {
		return 0, fmt.Errorf("sqsq: reading MaximumMessageSize of %s: %w", url, err)
	}
	v, ok := out.Attributes[string(types.QueueAttributeNameMaximumMessageSize)]
	if !ok {
		return 0, errors.New("sqsq: queue " + url + " reported no MaximumMessageSize")
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("sqsq: MaximumMessageSize of %s is %q, not a number", url, v)
	}
	return n, nil
}
