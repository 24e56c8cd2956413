package serverless

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentslice/agentslice/internal/retry"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// Settler settles one message group's records on their queue while the
// invocation still runs, so that neither a slow group nor a failed one
// holds the others back (see the package doc, "Settling groups early").
// Both calls are best effort: an error is logged and the event source
// mapping settles the records as it would have anyway.
type Settler interface {
	// Delete deletes records that are done (processed or dead-lettered).
	Delete(ctx context.Context, recs []events.SQSMessage) error
	// Retry makes failed records visible again after a short delay that
	// grows with their receive count.
	Retry(ctx context.Context, recs []events.SQSMessage) error
}

// SettleAPI is the part of *sqs.Client QueueSettler uses.
type SettleAPI interface {
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// How long a failed record stays hidden by default: after its n-th
// receive, between half and all of min(DefaultRetryBase × 2^(n−1),
// DefaultRetryMax) (equal jitter), rounded up to whole seconds (SQS's
// unit). With the stack's maxReceiveCount of 5 a record that keeps failing
// reaches the dead-letter queue after at most 62 s of waits instead of
// five visibility timeouts.
const (
	DefaultRetryBase = 2 * time.Second
	DefaultRetryMax  = 5 * time.Minute
)

// maxSQSBatch is the most entries one SQS batch request takes.
const maxSQSBatch = 10

// QueueSettler settles records on the input queues it knows, found by the
// queue name at the end of each record's EventSourceARN.
type QueueSettler struct {
	api  SettleAPI
	urls map[string]string // queue name → URL
	// Backoff gives the delay of Retry; NewQueueSettler sets
	// DefaultRetryBase and DefaultRetryMax with equal jitter.
	Backoff retry.Backoff
}

var _ Settler = (*QueueSettler)(nil)

// NewQueueSettler returns a settler for the queues at urls ("" entries are
// skipped: an unset background queue).
func NewQueueSettler(api SettleAPI, urls ...string) (*QueueSettler, error) {
	if api == nil {
		return nil, errors.New("serverless: nil SQS client for settling records")
	}
	s := &QueueSettler{api: api, urls: map[string]string{}, Backoff: retry.Backoff{Base: DefaultRetryBase, Max: DefaultRetryMax, Equal: true}}
	for _, u := range urls {
		if u == "" {
			continue
		}
		s.urls[u[strings.LastIndex(u, "/")+1:]] = u
	}
	if len(s.urls) == 0 {
		return nil, errors.New("serverless: no queue URL to settle records on")
	}
	return s, nil
}

// RetryDelay is how long a record that failed after its n-th receive
// stays hidden: whole seconds, at least 1.
func (s *QueueSettler) RetryDelay(n int) int32 {
	d := s.Backoff.Delay(n)
	secs := int64((d + time.Second - 1) / time.Second)
	return int32(min(max(secs, 1), 43200)) // SQS's limit: 12 hours
}

// queueURL returns the URL of the queue recs came from (one group's
// records all come from one queue).
func (s *QueueSettler) queueURL(recs []events.SQSMessage) (string, error) {
	arn := recs[0].EventSourceARN
	u, ok := s.urls[arn[strings.LastIndex(arn, ":")+1:]]
	if !ok {
		return "", fmt.Errorf("serverless: record %s comes from %q, not from a configured input queue", recs[0].MessageId, arn)
	}
	return u, nil
}

// Delete deletes recs with DeleteMessageBatch.
func (s *QueueSettler) Delete(ctx context.Context, recs []events.SQSMessage) error {
	if len(recs) == 0 {
		return nil
	}
	url, err := s.queueURL(recs)
	if err != nil {
		return err
	}
	var errs []error
	for c := range chunks(recs) {
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url)}
		for i, r := range c {
			in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r.ReceiptHandle)})
		}
		out, err := s.api.DeleteMessageBatch(ctx, in)
		if err != nil {
			errs = append(errs, fmt.Errorf("serverless: deleting %d records of group %s from %s: %w", len(c), c[0].Attributes["MessageGroupId"], url, err))
			continue
		}
		for _, f := range out.Failed {
			errs = append(errs, fmt.Errorf("serverless: deleting a record of group %s from %s: entry %s: %s %s",
				c[0].Attributes["MessageGroupId"], url, aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	return errors.Join(errs...)
}

// Retry hides recs for RetryDelay of the highest receive count among them
// (a FIFO group is held while any of its records is hidden, so they come
// back together), with ChangeMessageVisibilityBatch.
func (s *QueueSettler) Retry(ctx context.Context, recs []events.SQSMessage) error {
	if len(recs) == 0 {
		return nil
	}
	url, err := s.queueURL(recs)
	if err != nil {
		return err
	}
	n := 1
	for _, r := range recs {
		n = max(n, sqsq.ReceiveCount(r))
	}
	delay := s.RetryDelay(n)
	var errs []error
	for c := range chunks(recs) {
		in := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url)}
		for i, r := range c {
			in.Entries = append(in.Entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)),
				ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: delay})
		}
		out, err := s.api.ChangeMessageVisibilityBatch(ctx, in)
		if err != nil {
			errs = append(errs, fmt.Errorf("serverless: hiding %d failed records of group %s on %s for %d s: %w", len(c), c[0].Attributes["MessageGroupId"], url, delay, err))
			continue
		}
		for _, f := range out.Failed {
			errs = append(errs, fmt.Errorf("serverless: hiding a failed record of group %s on %s for %d s: entry %s: %s %s",
				c[0].Attributes["MessageGroupId"], url, delay, aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	return errors.Join(errs...)
}

// chunks yields recs in runs of at most maxSQSBatch.
func chunks(recs []events.SQSMessage) func(func([]events.SQSMessage) bool) {
	return func(yield func([]events.SQSMessage) bool) {
		for len(recs) > 0 {
			n := min(len(recs), maxSQSBatch)
			if !yield(recs[:n]) {
				return
			}
			recs = recs[n:]
		}
	}
}
