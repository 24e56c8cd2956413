package serverless_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentslice/agentslice/internal/retry"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless"
	"github.com/agentslice/agentslice/internal/serverless/lambdatest"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

// settleQueue creates a FIFO queue on fauxqs with a 60 s visibility
// timeout, or skips without fauxqs.
func settleQueue(t *testing.T) (*sqs.Client, string, *sqsq.Queue) {
	t.Helper()
	endpoint := testenv.Need(t, lambdatest.SQSEndpointVar)
	c := sqs.NewFromConfig(awstest.Config(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{
		QueueName:  aws.String(awstest.Name(t, "") + ".fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "VisibilityTimeout": "60"}})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	q, err := sqsq.NewQueue(c, sqsq.QueueConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	return c, url, q
}

func sendUser(t *testing.T, q *sqsq.Queue, thread, id string) {
	t.Helper()
	if err := q.Send(context.Background(), runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindUser, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
}

// receiveOne receives from url until a message arrives or wait passes.
func receiveOne(t *testing.T, c *sqs.Client, url string, wait time.Duration) (types.Message, bool) {
	t.Helper()
	end := time.Now().Add(wait)
	for time.Now().Before(end) {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1,
			WaitTimeSeconds: 1, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) > 0 {
			return out.Messages[0], true
		}
	}
	return types.Message{}, false
}

// blockingRunner holds the slices of the threads in block until release
// is closed, and says on started when it holds one.
type blockingRunner struct {
	fakeRunner
	block   map[string]bool
	started chan string
	release chan struct{}
}

func (b *blockingRunner) RunSlice(ctx context.Context, in runtime.SliceInput) (*runtime.SliceResult, error) {
	if b.block[in.ThreadID] {
		b.started <- in.ThreadID
		<-b.release
	}
	return b.fakeRunner.RunSlice(ctx, in)
}

// A group whose slice is done is deleted from the queue at once, while
// another group of the same invocation still runs: the thread's next
// message can be received (by another invocation) before the batch ends,
// instead of waiting for the slowest slice of the batch (issue 26, head
// of line blocking). Against fauxqs, whose FIFO groups stay locked while a
// message of theirs is in flight, as SQS's do.
func TestFinishedGroupIsDeletedWhileAnotherRuns(t *testing.T) {
	t.Parallel()
	c, url, q := settleQueue(t)
	sendUser(t, q, "quick", "q1")
	sendUser(t, q, "slow", "s1")

	var out bytes.Buffer
	runner := &blockingRunner{block: map[string]bool{"slow": true}, started: make(chan string, 1), release: make(chan struct{})}
	h := newHandler(&fakeRunner{}, &fakeDLQ{}, &out)
	h.Slices = runner
	settle, err := serverless.NewQueueSettler(c, url)
	if err != nil {
		t.Fatal(err)
	}
	h.Settle = settle
	resps := make(chan events.SQSEventResponse, 1)
	p := &lambdatest.Poller{SQS: c, QueueURL: url, Invoke: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if len(ev.Records) != 2 {
			t.Errorf("a batch of %d records, want both groups in one", len(ev.Records))
		}
		resp, err := h.Handle(ctx, ev)
		resps <- resp
		return resp, err
	}}
	polled := make(chan error, 1)
	go func() { _, err := p.RunOnce(context.Background()); polled <- err }()
	defer func() {
		select {
		case <-runner.release:
		default:
			close(runner.release)
		}
	}()
	if got := waitCh(t, runner.started); got != "slow" {
		t.Fatalf("started %q", got)
	}

	// The slow slice runs; the quick thread's next message is deliverable.
	sendUser(t, q, "quick", "q2")
	m, ok := receiveOne(t, c, url, 15*time.Second)
	if !ok {
		t.Fatalf("the quick thread's next message was not deliverable while the slow group of the same batch ran: its finished group was not deleted\n%s", out.String())
	}
	if got, err := sqsq.DecodeRecord(events.SQSMessage{Body: aws.ToString(m.Body), Attributes: m.Attributes}); err != nil || got.ID != "q2" {
		t.Fatalf("received %+v (%v), want the quick thread's q2", got, err)
	}
	if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}

	close(runner.release)
	if err := waitCh(t, polled); err != nil {
		t.Fatal(err)
	}
	if resp := waitCh(t, resps); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	// Every record is gone: nothing comes back (the queue's visibility
	// timeout is 60 s, so a record left in flight would stay hidden; check
	// the count instead).
	attrs, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	if a := attrs.Attributes; a["ApproximateNumberOfMessages"] != "0" || a["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Fatalf("queue still holds messages: %v", a)
	}
}

// recordingSQS is the real client, with the visibility changes it sends
// recorded.
type recordingSQS struct {
	*sqs.Client
	mu       sync.Mutex
	timeouts []int32
}

func (r *recordingSQS) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	r.mu.Lock()
	for _, e := range in.Entries {
		r.timeouts = append(r.timeouts, e.VisibilityTimeout)
	}
	r.mu.Unlock()
	return r.Client.ChangeMessageVisibilityBatch(ctx, in, opts...)
}

// A failed slice's record comes back after a short delay that grows with
// its receive count, not after the queue's 60 s visibility timeout, and is
// hidden until then (the poller leaves reported failures alone, as Lambda
// does, so the test sees the delay).
func TestFailedGroupComesBackAfterAGrowingDelay(t *testing.T) {
	t.Parallel()
	c, url, q := settleQueue(t)
	sendUser(t, q, "flaky", "f1")

	var out bytes.Buffer
	runner := &fakeRunner{fail: map[string]error{"flaky": errors.New("version conflict")}}
	h := newHandler(runner, &fakeDLQ{}, &out)
	rec := &recordingSQS{Client: c}
	settle, err := serverless.NewQueueSettler(rec, url)
	if err != nil {
		t.Fatal(err)
	}
	// The ceiling of each wait, exactly: 2 s, then 4 s.
	settle.Backoff = retry.Backoff{Base: 2 * time.Second, Max: time.Minute, Equal: true, Rand: func(n int64) int64 { return n }}
	h.Settle = settle
	var counts []string
	p := &lambdatest.Poller{SQS: c, QueueURL: url, Invoke: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for _, r := range ev.Records {
			counts = append(counts, r.Attributes["ApproximateReceiveCount"])
		}
		return h.Handle(ctx, ev)
	}}

	// First delivery: the slice fails and the record is hidden.
	if n, err := p.RunOnce(context.Background()); n != 1 || err != nil {
		t.Fatalf("first poll: %d messages, %v", n, err)
	}
	if out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)}); err != nil || len(out.Messages) != 0 {
		t.Fatalf("the failed record was visible again at once (%d messages, %v): a failure must cost a short wait, not none", len(out.Messages), err)
	}
	// It comes back long before the 60 s visibility timeout, twice.
	end := time.Now().Add(30 * time.Second)
	for len(counts) < 2 && time.Now().Before(end) {
		if _, err := p.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(counts) != 2 || counts[0] != "1" || counts[1] != "2" {
		t.Fatalf("receive counts %v: want the record back for its second receive within 30 s (visibility timeout 60 s)\n%s", counts, out.String())
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.timeouts) != 2 || rec.timeouts[0] != 2 || rec.timeouts[1] != 4 {
		t.Fatalf("visibility timeouts set %v, want [2 4] (growing with the receive count)", rec.timeouts)
	}
}

func TestRetryDelayGrowsAndIsCapped(t *testing.T) {
	t.Parallel()
	s, err := serverless.NewQueueSettler(&recordingSQS{}, "https://sqs.example/1/in.fifo")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n        int
		min, max int32
	}{{1, 1, 2}, {2, 2, 4}, {5, 16, 32}, {9, 150, 300}, {1000, 150, 300}} {
		for range 20 {
			if d := s.RetryDelay(tc.n); d < tc.min || d > tc.max {
				t.Fatalf("RetryDelay(%d) = %d s, want %d..%d", tc.n, d, tc.min, tc.max)
			}
		}
	}
}
