package sqsq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentslice/agentslice/internal/retry"
	"github.com/agentslice/agentslice/internal/runtime"
)

// MaxBatchEntries is the most entries one SendMessageBatch request may hold.
const MaxBatchEntries = 10

// Defaults for QueueConfig.
const (
	DefaultAttempts  = 3
	DefaultRetryBase = 100 * time.Millisecond
)

// API is the part of *sqs.Client the senders use.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// QueueConfig configures a Queue.
type QueueConfig struct {
	// URL is the FIFO input queue's URL (it ends in ".fifo"). Required.
	URL string
	// MaxMessageBytes is the queue's MaximumMessageSize attribute. Default
	// and upper bound: SQSMaxMessageBytes. See QueueMaxMessageBytes.
	MaxMessageBytes int
	// Attempts caps how often one batch entry is sent while SQS fails it
	// through no fault of the sender. Default DefaultAttempts.
	Attempts int
	// RetryBase is the first backoff before sending failed entries again;
	// it doubles per attempt, with full jitter. Default DefaultRetryBase.
	RetryBase time.Duration
}

// Queue sends messages to the FIFO input queue. It implements
// runtime.Queue and is safe for concurrent use.
type Queue struct {
	api API
	cfg QueueConfig
}

var _ runtime.Queue = (*Queue)(nil)

// NewQueue returns the sender of the FIFO queue cfg.URL, using an already
// built client.
func NewQueue(api API, cfg QueueConfig) (*Queue, error) {
	if api == nil {
		return nil, errors.New("sqsq: nil SQS client")
	}
	if cfg.URL == "" {
		return nil, errors.New("sqsq: QueueConfig.URL is empty")
	}
	if !strings.HasSuffix(cfg.URL, ".fifo") {
		return nil, fmt.Errorf("sqsq: QueueConfig.URL %q is not a FIFO queue (its name must end in .fifo)", cfg.URL)
	}
	var err error
	if cfg.MaxMessageBytes, err = checkLimit("QueueConfig.MaxMessageBytes", cfg.MaxMessageBytes); err != nil {
		return nil, err
	}
	if cfg.Attempts < 0 || cfg.RetryBase < 0 {
		return nil, errors.New("sqsq: QueueConfig.Attempts and RetryBase must not be negative")
	}
	if cfg.Attempts == 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	return &Queue{api: api, cfg: cfg}, nil
}

// entry is one message ready to send.
type entry struct {
	msgID, thread, group, dedup, body string
}

func (e *entry) batchEntry(id string) types.SendMessageBatchRequestEntry {
	return types.SendMessageBatchRequestEntry{
		Id:                     aws.String(id),
		MessageBody:            aws.String(e.body),
		MessageGroupId:         aws.String(e.group),
		MessageDeduplicationId: aws.String(e.dedup),
	}
}

// Send sends msgs to their threads, in order within each thread. Every
// message is validated and encoded before anything is sent: one bad message
// fails the call and none goes out.
func (q *Queue) Send(ctx context.Context, msgs ...runtime.Message) error {
	entries := make([]entry, 0, len(msgs))
	for _, m := range msgs {
		e, err := q.prepare(m)
		if err != nil {
			return err
		}
		entries = append(entries, e)
	}
	switch len(entries) {
	case 0:
		return nil
	case 1:
		return q.sendOne(ctx, &entries[0])
	}
	for pending := entries; len(pending) > 0; {
		var batch []entry
		batch, pending = nextBatch(pending)
		if err := q.sendBatch(ctx, batch); err != nil {
			return err
		}
	}
	return nil
}

func (q *Queue) prepare(m runtime.Message) (entry, error) {
	body, err := EncodeBody(m)
	if err != nil {
		return entry{}, fmt.Errorf("sqsq: not sending message %s: %w", m.ID, err)
	}
	if len(body) > q.cfg.MaxMessageBytes {
		return entry{}, runtime.Permanent(&TooLargeError{ID: m.ID, Size: len(body), Limit: q.cfg.MaxMessageBytes, Queue: q.cfg.URL})
	}
	return entry{msgID: m.ID, thread: m.ThreadID, group: GroupID(m.ThreadID), dedup: DedupID(m.ThreadID, m.ID), body: body}, nil
}

func (q *Queue) sendOne(ctx context.Context, e *entry) error {
	_, err := q.api.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:               aws.String(q.cfg.URL),
		MessageBody:            aws.String(e.body),
		MessageGroupId:         aws.String(e.group),
		MessageDeduplicationId: aws.String(e.dedup),
	})
	if err != nil {
		return permanentIfRefused(fmt.Errorf("sqsq: sending message %s of thread %s to %s: %w", e.msgID, e.thread, q.cfg.URL, err))
	}
	return nil
}

// nextBatch takes from pending, in order, the messages of the next batch: at
// most MaxBatchEntries, at most SQSMaxMessageBytes in total, and at most one
// per thread. A thread whose message had to wait keeps all its later
// messages waiting too, so order within a thread is kept.
func nextBatch(pending []entry) (batch, rest []entry) {
	taken := make(map[string]bool, MaxBatchEntries) // group in this batch, or held back
	size := 0
	for _, e := range pending {
		if len(batch) < MaxBatchEntries && !taken[e.group] && size+len(e.body) <= SQSMaxMessageBytes {
			batch = append(batch, e)
			size += len(e.body)
		} else {
			rest = append(rest, e)
		}
		taken[e.group] = true
	}
	return batch, rest
}

// sendBatch sends one batch, sending entries that failed through no fault of
// the sender again, up to the configured attempts.
func (q *Queue) sendBatch(ctx context.Context, batch []entry) error {
	pending := batch
	for attempt := 1; ; attempt++ {
		req := make([]types.SendMessageBatchRequestEntry, len(pending))
		for i := range pending {
			req[i] = pending[i].batchEntry(strconv.Itoa(i))
		}
		out, err := q.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.cfg.URL), Entries: req})
		if err != nil {
			return permanentIfRefused(fmt.Errorf("sqsq: sending a batch of %d messages to %s: %w", len(pending), q.cfg.URL, err))
		}
		if len(out.Failed) == 0 {
			return nil
		}
		var again []entry
		be := &BatchError{Queue: q.cfg.URL, Attempts: attempt}
		for _, f := range out.Failed {
			i, err := strconv.Atoi(aws.ToString(f.Id))
			if err != nil || i < 0 || i >= len(pending) {
				return fmt.Errorf("sqsq: SendMessageBatch to %s reported a failure for unknown entry %q", q.cfg.URL, aws.ToString(f.Id))
			}
			e := pending[i]
			be.Failed = append(be.Failed, EntryFailure{MessageID: e.msgID, ThreadID: e.thread,
				Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), SenderFault: f.SenderFault})
			again = append(again, e)
		}
		if be.senderFault() {
			return runtime.Permanent(be)
		}
		if attempt >= q.cfg.Attempts {
			return be
		}
		if err := (retry.Backoff{Base: q.cfg.RetryBase}).Wait(ctx, attempt); err != nil {
			return fmt.Errorf("sqsq: waiting to send %d failed batch entries again: %w", len(again), err)
		}
		pending = again
	}
}

// BatchError reports entries of a SendMessageBatch that still failed after
// retries. Entries of the same batch not listed were sent.
type BatchError struct {
	Queue    string
	Attempts int
	Failed   []EntryFailure
}

// EntryFailure is one failed batch entry.
type EntryFailure struct {
	MessageID, ThreadID string
	Code, Message       string
	// SenderFault is SQS saying the entry itself is wrong; sending it again
	// cannot help.
	SenderFault bool
}

func (e *BatchError) senderFault() bool {
	for _, f := range e.Failed {
		if f.SenderFault {
			return true
		}
	}
	return false
}

func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sqsq: %d entries of a SendMessageBatch to %s failed (after %d attempts):", len(e.Failed), e.Queue, e.Attempts)
	for i, f := range e.Failed {
		if i > 0 {
			b.WriteByte(';')
		}
		fault := "service fault"
		if f.SenderFault {
			fault = "sender fault"
		}
		fmt.Fprintf(&b, " message %s of thread %s: %s (%s): %s", f.MessageID, f.ThreadID, f.Code, fault, f.Message)
	}
	return b.String()
}
