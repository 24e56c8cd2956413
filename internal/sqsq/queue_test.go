package sqsq_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

const endpointVar = "AGENTSLICE_TEST_SQS_ENDPOINT"

// counter counts SQS requests by operation.
type counter struct {
	mu  sync.Mutex
	ops map[string]int
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	c.mu.Lock()
	c.ops[op]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *counter) get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

func newClient(endpoint string, opts ...func(*sqs.Options)) (*sqs.Client, *counter) {
	cnt := &counter{ops: map[string]int{}}
	return sqs.NewFromConfig(awstest.Config(), append([]func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.HTTPClient = &http.Client{Transport: cnt}
	}}, opts...)...), cnt
}

var queues atomic.Int64

// newQueue creates a queue on fauxqs, deleted when the test ends.
func newQueue(t *testing.T, fifo bool, attrs map[string]string) (*sqs.Client, *counter, string) {
	t.Helper()
	c, cnt := newClient(testenv.Need(t, endpointVar))
	name := awstest.Name(t, "-"+strconv.FormatInt(queues.Add(1), 10))
	a := map[string]string{"VisibilityTimeout": "60"}
	if fifo {
		name += ".fifo"
		a["FifoQueue"] = "true"
	}
	for k, v := range attrs {
		a[k] = v
	}
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: a})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	return c, cnt, url
}

// receive returns up to max records now (no long polling), as Lambda would
// see them.
func receive(t *testing.T, c *sqs.Client, url string, max int32) []events.SQSMessage {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: max, WaitTimeSeconds: 0,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]events.SQSMessage, len(out.Messages))
	for i, m := range out.Messages {
		recs[i] = events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
			Body: aws.ToString(m.Body), Attributes: m.Attributes}
	}
	return recs
}

func del(t *testing.T, c *sqs.Client, url string, rec events.SQSMessage) {
	t.Helper()
	if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(rec.ReceiptHandle)}); err != nil {
		t.Fatal(err)
	}
}

func decode(t *testing.T, recs []events.SQSMessage) []runtime.Message {
	t.Helper()
	out := make([]runtime.Message, len(recs))
	for i, r := range recs {
		m, err := sqsq.DecodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = m
	}
	return out
}

func user(thread, id, text string) runtime.Message {
	return runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindUser, Text: text}
}

func mustQueue(t *testing.T, c sqsq.API, cfg sqsq.QueueConfig) *sqsq.Queue {
	t.Helper()
	q, err := sqsq.NewQueue(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestSendDecodeRoundTrip(t *testing.T) {
	c, cnt, url := newQueue(t, true, nil)
	q := mustQueue(t, c, sqsq.QueueConfig{URL: url})
	long := "thread-" + strings.Repeat("é", 100) // not a valid group ID: hashed
	sent := []runtime.Message{
		user("t-1", "m-1", "héllo ✓ \uFFFF\uFFFE <b> 😀"),
		{V: 1, ID: "r-1", ThreadID: long, Kind: runtime.KindToolResult, ToolCallID: "call_1",
			Content: []runtime.Content{{Type: "text", Text: "out"}, {Type: "image", Data: "aGk=", MediaType: "image/png"}}},
	}
	for _, m := range sent {
		if err := q.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	if cnt.get("SendMessage") != 2 || cnt.get("SendMessageBatch") != 0 {
		t.Fatalf("single messages should go out with SendMessage: %v", cnt.ops)
	}
	recs := receive(t, c, url, 10)
	got := decode(t, recs)
	if len(got) != 2 {
		t.Fatalf("received %d messages, want 2", len(got))
	}
	for i, r := range recs {
		want := sent[i]
		if got[i].ID != want.ID || got[i].Text != want.Text || len(got[i].Content) != len(want.Content) {
			t.Fatalf("message %d: got %+v, want %+v", i, got[i], want)
		}
		if g, d := r.Attributes["MessageGroupId"], r.Attributes["MessageDeduplicationId"]; g != sqsq.GroupID(want.ThreadID) || d != sqsq.DedupID(want.ThreadID, want.ID) {
			t.Fatalf("message %d in group %q with dedup ID %q", i, g, d)
		}
	}
}

// One Send of messages for several threads: FIFO within a thread, and while
// one thread's message is in flight the other threads' messages are still
// delivered.
func TestFIFOOrderAndParallelGroups(t *testing.T) {
	c, cnt, url := newQueue(t, true, nil)
	q := mustQueue(t, c, sqsq.QueueConfig{URL: url})
	var msgs []runtime.Message
	for i := range 4 {
		for _, th := range []string{"a", "b", "c"} {
			msgs = append(msgs, user(th, fmt.Sprintf("%s-%d", th, i), "x"))
		}
	}
	if err := q.Send(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	if n := cnt.get("SendMessageBatch"); n != 4 {
		t.Fatalf("%d SendMessageBatch requests for 12 messages in 3 threads, want 4 (one message per thread per batch)", n)
	}

	// Take thread a's first message and keep it in flight.
	first := decode(t, receive(t, c, url, 1))
	if len(first) != 1 {
		t.Fatalf("received %d, want 1", len(first))
	}
	busy := first[0].ThreadID
	others := decode(t, receive(t, c, url, 10))
	seen := map[string]bool{}
	for _, m := range others {
		if m.ThreadID == busy {
			t.Fatalf("received %s of thread %s while its earlier message is in flight", m.ID, busy)
		}
		seen[m.ThreadID] = true
	}
	if len(seen) != 2 {
		t.Fatalf("while thread %s is in flight, received messages of threads %v, want the two others", busy, seen)
	}
}

func TestOrderWithinThread(t *testing.T) {
	c, _, url := newQueue(t, true, nil)
	q := mustQueue(t, c, sqsq.QueueConfig{URL: url})
	var msgs []runtime.Message
	for i := range 12 {
		msgs = append(msgs, user("one", fmt.Sprintf("m-%02d", i), "x"))
		if i%3 == 0 {
			msgs = append(msgs, user(fmt.Sprintf("other-%d", i), "o", "x"))
		}
	}
	if err := q.Send(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	var order []string
	for len(order) < 16 {
		recs := receive(t, c, url, 10)
		if len(recs) == 0 {
			t.Fatalf("queue ran dry after %d messages", len(order))
		}
		for i, m := range decode(t, recs) {
			if m.ThreadID == "one" {
				order = append(order, m.ID)
			} else {
				order = append(order, "other")
			}
			del(t, c, url, recs[i])
		}
	}
	var mine []string
	for _, id := range order {
		if id != "other" {
			mine = append(mine, id)
		}
	}
	for i, id := range mine {
		if want := fmt.Sprintf("m-%02d", i); id != want {
			t.Fatalf("thread order %v: position %d is %s, want %s", mine, i, id, want)
		}
	}
}

func TestDedupByID(t *testing.T) {
	c, _, url := newQueue(t, true, nil)
	q := mustQueue(t, c, sqsq.QueueConfig{URL: url})
	ctx := context.Background()
	m := user("t", "same-id", "first")
	if err := q.Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	m.Text = "a redelivery with a different body is still the same message"
	if err := q.Send(ctx, m, user("t2", "other", "x")); err != nil {
		t.Fatal(err)
	}
	// The same message ID in another thread is another message.
	if err := q.Send(ctx, user("t-other", "same-id", "x")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		recs := receive(t, c, url, 10)
		if len(recs) == 0 {
			break
		}
		for i, m := range decode(t, recs) {
			got = append(got, m.ThreadID+"/"+m.ID+"/"+m.Text)
			del(t, c, url, recs[i])
		}
	}
	want := map[string]bool{"t/same-id/first": true, "t2/other/x": true, "t-other/same-id/x": true}
	if len(got) != len(want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("received %v, want %v", got, want)
		}
	}
}

func TestBatchLimits(t *testing.T) {
	// A short visibility timeout: under load a ReceiveMessage whose ~1 MB
	// answer is lost and retried by the SDK leaves its messages in flight;
	// they must come back soon for the count below.
	c, cnt, url := newQueue(t, true, map[string]string{"VisibilityTimeout": "2"})
	q := mustQueue(t, c, sqsq.QueueConfig{URL: url})
	var msgs []runtime.Message
	for i := range 25 {
		msgs = append(msgs, user(fmt.Sprintf("t-%d", i), "m", "x"))
	}
	// Four messages of ~300 KB: at most three fit in one 1 MiB batch.
	big := strings.Repeat("b", 300_000)
	for i := range 4 {
		msgs = append(msgs, user(fmt.Sprintf("big-%d", i), "m", big))
	}
	if err := q.Send(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	// Greedily in order: [10 small] [10 small] [5 small + 3 big, under
	// 1 MiB] [the last big one].
	if n := cnt.get("SendMessageBatch"); n != 4 {
		t.Fatalf("%d SendMessageBatch requests, want 4", n)
	}
	// A short-polling receive may come back empty while messages remain:
	// long-poll, and stop after several empty answers in a row (bounded,
	// longer than the visibility timeout).
	total := 0
	for empty := 0; total < 29 && empty < 6; {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		total += len(out.Messages)
		for _, m := range out.Messages {
			del(t, c, url, events.SQSMessage{ReceiptHandle: aws.ToString(m.ReceiptHandle)})
		}
	}
	if total != 29 {
		t.Fatalf("received %d messages, want 29", total)
	}
}

func TestSizeLimit(t *testing.T) {
	c, cnt, url := newQueue(t, true, map[string]string{"MaximumMessageSize": "2048"})
	limit, err := sqsq.QueueMaxMessageBytes(context.Background(), c, url)
	if err != nil || limit != 2048 {
		t.Fatalf("QueueMaxMessageBytes = %d, %v", limit, err)
	}
	q := mustQueue(t, c, sqsq.QueueConfig{URL: url, MaxMessageBytes: limit})
	envelope, _ := sqsq.EncodeBody(user("t", "fits", "x"))
	fits := user("t", "fits", strings.Repeat("x", 2048-len(envelope)+1))
	if b, _ := sqsq.EncodeBody(fits); len(b) != 2048 {
		t.Fatalf("test message is %d bytes, want exactly 2048", len(b))
	}
	if err := q.Send(context.Background(), fits); err != nil {
		t.Fatalf("a message of exactly the maximum size: %v", err)
	}
	over := fits
	over.ID, over.Text = "over", fits.Text+"y"
	err = q.Send(context.Background(), user("t", "ok", "x"), over)
	var tl *sqsq.TooLargeError
	if !errors.As(err, &tl) || !runtime.IsPermanent(err) || tl.Size != 2049 || tl.Limit != 2048 || tl.ID != "over" {
		t.Fatalf("err %v, want a permanent TooLargeError of 2049 > 2048 bytes", err)
	}
	if !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("message %q should say nothing was sent", err)
	}
	if n := cnt.get("SendMessageBatch"); n != 0 {
		t.Fatalf("a Send with an oversize message sent %d batches; it must send nothing", n)
	}
	if recs := receive(t, c, url, 10); len(recs) != 1 {
		t.Fatalf("%d messages on the queue, want only the one that fits", len(recs))
	}
}

// A queue whose maximum is below what the sender was told: SQS (fauxqs)
// refuses the entries as the sender's fault, and the error is permanent.
func TestSenderFaultIsPermanent(t *testing.T) {
	c, cnt, url := newQueue(t, true, map[string]string{"MaximumMessageSize": "1024"})
	q := mustQueue(t, c, sqsq.QueueConfig{URL: url}) // misconfigured: assumes 1 MiB
	msgs := []runtime.Message{user("a", "small", "x"), user("b", "big", strings.Repeat("x", 1500)), user("a", "later", "x")}
	err := q.Send(context.Background(), msgs...)
	var be *sqsq.BatchError
	if !errors.As(err, &be) || !runtime.IsPermanent(err) {
		t.Fatalf("err %v, want a permanent BatchError", err)
	}
	if len(be.Failed) != 1 || be.Failed[0].MessageID != "big" || !be.Failed[0].SenderFault || be.Failed[0].Code == "" {
		t.Fatalf("failures %+v, want message big as a sender fault", be.Failed)
	}
	if n := cnt.get("SendMessageBatch"); n != 1 {
		t.Fatalf("%d batch requests: a sender fault must not be retried, and the next batch not sent", n)
	}
	// The same refusal of a single message.
	err = q.Send(context.Background(), user("b", "big", strings.Repeat("x", 1500)))
	if !sqsq.Refused(err) || !runtime.IsPermanent(err) {
		t.Fatalf("single oversize message: %v, want a permanent refusal", err)
	}
}

func TestMissingQueueIsRetryable(t *testing.T) {
	c, _, url := newQueue(t, true, nil)
	q := mustQueue(t, c, sqsq.QueueConfig{URL: strings.TrimSuffix(url, ".fifo") + "-gone.fifo"})
	for _, msgs := range [][]runtime.Message{{user("a", "1", "x")}, {user("a", "1", "x"), user("b", "2", "x")}} {
		err := q.Send(context.Background(), msgs...)
		if err == nil || runtime.IsPermanent(err) || sqsq.Refused(err) || !strings.Contains(err.Error(), "-gone.fifo") {
			t.Fatalf("sending %d messages to a missing queue: %v, want a retryable error naming the queue", len(msgs), err)
		}
	}
}

func TestNewQueueConfig(t *testing.T) {
	c, _ := newClient("http://127.0.0.1:1")
	for _, cfg := range []sqsq.QueueConfig{
		{},
		{URL: "http://q/standard"},
		{URL: "http://q/x.fifo", MaxMessageBytes: 100},
		{URL: "http://q/x.fifo", MaxMessageBytes: 2 << 20},
		{URL: "http://q/x.fifo", Attempts: -1},
	} {
		if _, err := sqsq.NewQueue(c, cfg); err == nil {
			t.Errorf("NewQueue accepted %+v", cfg)
		}
	}
	if _, err := sqsq.NewOutput(c, sqsq.OutputConfig{URL: "http://q/x.fifo"}); err == nil {
		t.Error("NewOutput accepted a FIFO queue")
	}
}

func TestOutputPublish(t *testing.T) {
	c, _, url := newQueue(t, false, nil)
	o, err := sqsq.NewOutput(c, sqsq.OutputConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	ev := runtime.OutputEvent{ID: "o-1", ThreadID: "t-1", Kind: "reply", Text: "the answer is 42 ✓ 🎉"}
	if err := o.Publish(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	recs := receive(t, c, url, 10)
	if len(recs) != 1 {
		t.Fatalf("%d messages, want 1", len(recs))
	}
	got, err := sqsq.DecodeOutput(recs[0].Body)
	if err != nil || got != ev {
		t.Fatalf("got %+v %v, want %+v", got, err, ev)
	}
	small, _ := sqsq.NewOutput(c, sqsq.OutputConfig{URL: url, MaxMessageBytes: 1024})
	err = small.Publish(context.Background(), runtime.OutputEvent{ID: "o-2", ThreadID: "t", Kind: "reply", Text: strings.Repeat("x", 1024)})
	var tl *sqsq.TooLargeError
	if !errors.As(err, &tl) || !runtime.IsPermanent(err) {
		t.Fatalf("oversize output: %v", err)
	}
}

// fakeSQS answers SendMessageBatch with failures chosen by fail, which gets
// the request number and the entry. fauxqs never fails an entry through
// its own fault, so that path is tested against this fake.
func fakeSQS(t *testing.T, fail func(n int, e types.SendMessageBatchRequestEntry) bool) (*sqs.Client, *[][]string) {
	t.Helper()
	var (
		mu       sync.Mutex
		n        int
		requests [][]string // message IDs... of each request, by body
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Entries []types.SendMessageBatchRequestEntry
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &in); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		n++
		num := n
		var ids []string
		for _, e := range in.Entries {
			m, _ := runtime.DecodeMessage([]byte(aws.ToString(e.MessageBody)))
			ids = append(ids, m.ID)
		}
		requests = append(requests, ids)
		mu.Unlock()
		type ok struct{ Id, MessageId, MD5OfMessageBody string }
		type failed struct {
			Id, Code, Message string
			SenderFault       bool
		}
		out := struct {
			Successful []ok     `json:"Successful"`
			Failed     []failed `json:"Failed"`
		}{Successful: []ok{}, Failed: []failed{}}
		for _, e := range in.Entries {
			if fail(num, e) {
				out.Failed = append(out.Failed, failed{Id: aws.ToString(e.Id), Code: "InternalError", Message: "try again"})
				continue
			}
			sum := md5.Sum([]byte(aws.ToString(e.MessageBody)))
			out.Successful = append(out.Successful, ok{Id: aws.ToString(e.Id), MessageId: "mid-" + aws.ToString(e.Id), MD5OfMessageBody: hex.EncodeToString(sum[:])})
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	c, _ := newClient(srv.URL)
	return c, &requests
}

func TestPartialFailureRetried(t *testing.T) {
	c, requests := fakeSQS(t, func(n int, e types.SendMessageBatchRequestEntry) bool {
		return n == 1 && aws.ToString(e.MessageGroupId) == "b"
	})
	q := mustQueue(t, c, sqsq.QueueConfig{URL: "http://fake/q.fifo", RetryBase: 1})
	msgs := []runtime.Message{user("a", "a1", "x"), user("b", "b1", "x"), user("c", "c1", "x"), user("b", "b2", "x")}
	if err := q.Send(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	// b2 must wait until b1 is in: batch [a1 b1 c1], retry [b1], then [b2].
	want := "[[a1 b1 c1] [b1] [b2]]"
	if got := fmt.Sprint(*requests); got != want {
		t.Fatalf("requests %s, want %s", got, want)
	}
}

func TestPartialFailureGivesUp(t *testing.T) {
	c, requests := fakeSQS(t, func(n int, e types.SendMessageBatchRequestEntry) bool {
		return aws.ToString(e.MessageGroupId) == "b"
	})
	q := mustQueue(t, c, sqsq.QueueConfig{URL: "http://fake/q.fifo", Attempts: 2, RetryBase: 1})
	msgs := []runtime.Message{user("a", "a1", "x"), user("b", "b1", "x"), user("b", "b2", "x")}
	err := q.Send(context.Background(), msgs...)
	var be *sqsq.BatchError
	if !errors.As(err, &be) || runtime.IsPermanent(err) {
		t.Fatalf("err %v, want a retryable BatchError", err)
	}
	if len(be.Failed) != 1 || be.Failed[0].MessageID != "b1" || be.Attempts != 2 || !strings.Contains(err.Error(), "InternalError") {
		t.Fatalf("BatchError %+v", be)
	}
	if got, want := fmt.Sprint(*requests), "[[a1 b1] [b1]]"; got != want {
		t.Fatalf("requests %s, want %s (b2 must not overtake b1)", got, want)
	}
}
