// Package lambdatest plays the parts of AWS Lambda that have no local
// stand-in, for tests of the functions against local services: a Poller
// that does what Lambda's SQS event source mapping does (receive a batch,
// invoke, delete what succeeded, leave the reported failures to come back
// when their visibility timeout ends, move a message to the dead-letter
// queue after maxReceiveCount), and RIE,
// which runs a function's real bootstrap under the AWS Lambda Runtime
// Interface Emulator and invokes it.
//
// It must not be imported by non-test code.
package lambdatest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// InvokeFunc is a function invocation with an SQS event: a handler called
// in-process, or RIE.InvokeSQS.
type InvokeFunc func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// SQSAPI is the part of *sqs.Client a Poller uses.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Poller is an SQS event source mapping with ReportBatchItemFailures:
//
//   - it receives up to BatchSize messages and invokes the function with
//     them as one event, one batch at a time, so a FIFO message group never
//     has two batches in flight (the queue also hides a group while one of
//     its messages is in flight);
//   - it deletes every record the response does not list, and leaves the
//     listed ones alone: they come back when their visibility timeout ends
//     (Visibility, or what the function set with ChangeMessageVisibility),
//     as with Lambda, so a test sees the wait a failure costs;
//   - when the invocation fails as a whole (a function error, an unknown
//     item identifier in the response), every record is left alone the
//     same way, unless FailedInvocationRetry is set;
//   - a message received more than MaxReceiveCount times is moved to DLQURL
//     instead of being delivered, as the queue's redrive policy would.
type Poller struct {
	SQS             SQSAPI
	QueueURL        string
	DLQURL          string // required when MaxReceiveCount > 0
	MaxReceiveCount int    // 0: never moved
	BatchSize       int32  // default 10
	Visibility      int32  // seconds a received batch stays hidden; default 60
	// FailedInvocationRetry, when > 0, makes a batch whose invocation
	// failed as a whole visible again after this long (whole seconds,
	// ChangeMessageVisibility) instead of at the end of Visibility. Lambda
	// has no such setting; tests that kill the function on purpose use it
	// so that each kill does not cost a whole visibility timeout.
	FailedInvocationRetry time.Duration
	Invoke                InvokeFunc
	// Logf, when set, is told about each batch and every redrive.
	Logf func(format string, args ...any)

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	batches int
}

// RunOnce receives one batch (waiting up to a second for it) and settles
// it. It returns how many messages it received.
func (p *Poller) RunOnce(ctx context.Context) (int, error) {
	size := p.BatchSize
	if size <= 0 {
		size = 10
	}
	vis := p.Visibility
	if vis <= 0 {
		vis = 60
	}
	out, err := p.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(p.QueueURL), MaxNumberOfMessages: size, WaitTimeSeconds: 1, VisibilityTimeout: vis,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return 0, fmt.Errorf("lambdatest: receiving from %s: %w", p.QueueURL, err)
	}
	var ev events.SQSEvent
	for _, m := range out.Messages {
		n, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
		if p.MaxReceiveCount > 0 && n > p.MaxReceiveCount {
			if err := p.redrive(ctx, m); err != nil {
				return len(out.Messages), err
			}
			continue
		}
		ev.Records = append(ev.Records, record(p.QueueURL, m))
	}
	if len(ev.Records) == 0 {
		return len(out.Messages), nil
	}
	p.mu.Lock()
	p.batches++
	p.mu.Unlock()
	resp, err := p.Invoke(ctx, ev)
	failed := map[string]bool{}
	if err == nil {
		known := map[string]bool{}
		for _, r := range ev.Records {
			known[r.MessageId] = true
		}
		for _, f := range resp.BatchItemFailures {
			if !known[f.ItemIdentifier] {
				err = fmt.Errorf("the response names an unknown item %q", f.ItemIdentifier)
				break
			}
			failed[f.ItemIdentifier] = true
		}
	}
	invokeErr := err
	if err != nil {
		p.logf("invocation failed, whole batch of %d retried: %v", len(ev.Records), err)
		for _, r := range ev.Records {
			failed[r.MessageId] = true
		}
	} else {
		p.logf("batch of %d: %d failed", len(ev.Records), len(failed))
	}
	retryAfter := int32((p.FailedInvocationRetry + time.Second - 1) / time.Second)
	for _, r := range ev.Records {
		switch {
		case invokeErr != nil && retryAfter > 0:
			_, err = p.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(p.QueueURL),
				ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: retryAfter})
		case failed[r.MessageId]:
			// Left alone: it comes back when its visibility timeout ends.
			continue
		default:
			_, err = p.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(p.QueueURL), ReceiptHandle: aws.String(r.ReceiptHandle)})
		}
		if err != nil {
			return len(out.Messages), fmt.Errorf("lambdatest: settling %s: %w", r.MessageId, err)
		}
	}
	return len(out.Messages), nil
}

// Batches returns how many batches were delivered.
func (p *Poller) Batches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.batches
}

func (p *Poller) redrive(ctx context.Context, m types.Message) error {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(p.DLQURL), MessageBody: m.Body, MessageAttributes: m.MessageAttributes}
	if strings.HasSuffix(p.DLQURL, ".fifo") {
		in.MessageGroupId = aws.String(m.Attributes["MessageGroupId"])
		in.MessageDeduplicationId = aws.String("redrive-" + aws.ToString(m.MessageId))
	}
	if _, err := p.SQS.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("lambdatest: moving %s to %s: %w", aws.ToString(m.MessageId), p.DLQURL, err)
	}
	if _, err := p.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(p.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		return fmt.Errorf("lambdatest: deleting redriven %s: %w", aws.ToString(m.MessageId), err)
	}
	p.logf("moved %s to the dead-letter queue after %s receives", aws.ToString(m.MessageId), m.Attributes["ApproximateReceiveCount"])
	return nil
}

func (p *Poller) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}

// record converts a received message into the record Lambda would deliver.
func record(queueURL string, m types.Message) events.SQSMessage {
	r := events.SQSMessage{
		MessageId:      aws.ToString(m.MessageId),
		ReceiptHandle:  aws.ToString(m.ReceiptHandle),
		Body:           aws.ToString(m.Body),
		Md5OfBody:      aws.ToString(m.MD5OfBody),
		Attributes:     m.Attributes,
		EventSource:    "aws:sqs",
		EventSourceARN: QueueARN(queueURL),
		AWSRegion:      "us-east-1",
	}
	if len(m.MessageAttributes) > 0 {
		r.MessageAttributes = map[string]events.SQSMessageAttribute{}
		for k, v := range m.MessageAttributes {
			r.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
	}
	return r
}

// QueueARN derives a plausible ARN from a queue URL (its last path element
// is the name).
func QueueARN(url string) string {
	return "arn:aws:sqs:us-east-1:000000000000:" + url[strings.LastIndex(url, "/")+1:]
}

// Start runs RunOnce in a loop until Stop. Errors other than the end of the
// loop's context are passed to Logf and the loop goes on after a short
// pause.
func (p *Poller) Start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		return
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			if _, err := p.RunOnce(ctx); err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
				p.logf("poller: %v", err)
				t := time.NewTimer(200 * time.Millisecond)
				select {
				case <-ctx.Done():
				case <-t.C:
				}
				t.Stop()
			}
		}
	}()
}

// Stop ends the loop and waits for it. It is safe to call twice.
func (p *Poller) Stop() {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}
