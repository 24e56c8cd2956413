package lambdatest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Received is one message a Collector took off its queue.
type Received struct {
	Body       string
	Attributes map[string]string // message attributes (string values)
	GroupID    string
}

// Collector drains a queue in the background (receive, remember, delete),
// so that several tests can wait for the messages meant for them.
type Collector struct {
	SQS interface {
		ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
		DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	}
	URL string

	mu      sync.Mutex
	got     []Received
	changed chan struct{} // closed and replaced whenever got grows
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
}

// Start begins draining. Stop ends it.
func (c *Collector) Start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return
	}
	c.changed = make(chan struct{})
	ctx, c.cancel = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			out, err := c.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(c.URL), MaxNumberOfMessages: 10,
				WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
			if err != nil {
				if ctx.Err() == nil {
					c.mu.Lock()
					c.err = err
					c.mu.Unlock()
					pause := time.NewTimer(200 * time.Millisecond)
					select {
					case <-ctx.Done():
					case <-pause.C:
					}
					pause.Stop()
				}
				continue
			}
			for _, m := range out.Messages {
				r := Received{Body: aws.ToString(m.Body), Attributes: map[string]string{}, GroupID: m.Attributes["MessageGroupId"]}
				for k, v := range m.MessageAttributes {
					r.Attributes[k] = aws.ToString(v.StringValue)
				}
				_, _ = c.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(c.URL), ReceiptHandle: m.ReceiptHandle})
				c.mu.Lock()
				c.got = append(c.got, r)
				close(c.changed)
				c.changed = make(chan struct{})
				c.mu.Unlock()
			}
		}
	}()
}

// Stop ends draining and waits for it. It is safe to call twice.
func (c *Collector) Stop() {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// All returns what was collected so far.
func (c *Collector) All() []Received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Received(nil), c.got...)
}

// WaitFor waits until match holds for the messages collected so far, or
// timeout passes (then the error says what was collected).
func (c *Collector) WaitFor(timeout time.Duration, match func([]Received) bool) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		c.mu.Lock()
		got, changed, err := append([]Received(nil), c.got...), c.changed, c.err
		c.mu.Unlock()
		if match(got) {
			return nil
		}
		select {
		case <-changed:
		case <-t.C:
			bodies := make([]string, len(got))
			for i, r := range got {
				bodies[i] = r.Body
			}
			return fmt.Errorf("lambdatest: not there after %v on %s (last receive error: %v); collected %d: %s",
				timeout, c.URL, err, len(got), strings.Join(bodies, " | "))
		}
	}
}

// SliceLog is the per-slice log line of the slice function.
type SliceLog struct {
	Msg           string         `json:"msg"`
	Thread        string         `json:"thread"`
	Slice         string         `json:"slice"`
	Outcome       string         `json:"outcome"`
	SQSMessageIDs []string       `json:"sqs_message_ids"`
	MessageIDs    []string       `json:"message_ids"`
	FirstDelivery bool           `json:"first_delivery"`
	DurationMS    float64        `json:"duration_ms"`
	RoundTrips    int            `json:"round_trips"`
	RoundTripsBy  map[string]int `json:"round_trips_by"`
	Processed     int            `json:"processed"`
	Duplicates    int            `json:"duplicates"`
	Rejected      int            `json:"rejected"`
	Completions   int            `json:"completions"`
	Dispatched    string         `json:"dispatched"`
	Error         string         `json:"error"`
}

// Logs collects the JSON log lines of functions and finds the slice lines
// among them. Its Line method fits RIE.Lines; Write fits a writer.
type Logs struct {
	mu      sync.Mutex
	lines   []string
	slices  []SliceLog
	changed chan struct{} // closed and replaced when a slice line arrives
}

// Line records one line.
func (l *Logs) Line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	var sl SliceLog
	if strings.HasPrefix(s, "{") && json.Unmarshal([]byte(s), &sl) == nil && sl.Msg == "slice" {
		l.slices = append(l.slices, sl)
		if l.changed != nil {
			close(l.changed)
			l.changed = nil
		}
	}
}

// WaitSlices waits until thread has at least n slice lines and returns
// them. A slice logs after its reply is on the output queue, so a test that
// saw the reply waits here for the line.
func (l *Logs) WaitSlices(thread string, n int, timeout time.Duration) ([]SliceLog, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		got := l.Slices(thread)
		if len(got) >= n {
			return got, nil
		}
		l.mu.Lock()
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		if len(l.Slices(thread)) >= n {
			continue
		}
		select {
		case <-changed:
		case <-t.C:
			return got, fmt.Errorf("lambdatest: %d slice lines of thread %s after %v, want %d", len(got), thread, timeout, n)
		}
	}
}

// Write records each complete line of p (one call per line, as the
// functions' loggers write).
func (l *Logs) Write(p []byte) (int, error) {
	for _, s := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.Line(s)
	}
	return len(p), nil
}

// Slices returns the slice lines of thread, in order.
func (l *Logs) Slices(thread string) []SliceLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []SliceLog
	for _, s := range l.slices {
		if s.Thread == thread {
			out = append(out, s)
		}
	}
	return out
}

// Lines returns every line recorded.
func (l *Logs) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}
