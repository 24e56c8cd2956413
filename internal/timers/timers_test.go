package timers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sivchari/kumo"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
	"github.com/agentslice/agentslice/internal/timers"
)

// exchange is one HTTP request a recorder saw, with the status it got.
type exchange struct {
	Method, Path, Target string
	Body                 []byte
	Status               int
}

// recorder passes requests on to next and keeps them.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := r.next.RoundTrip(req)
	ex := exchange{Method: req.Method, Path: req.URL.Path, Target: req.Header.Get("X-Amz-Target"), Body: body}
	if resp != nil {
		ex.Status = resp.StatusCode
	}
	r.mu.Lock()
	r.seen = append(r.seen, ex)
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) take() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

// schedulerServer is an in-process EventBridge Scheduler API (kumo). It
// stores schedules and answers Create/Get/Delete like the service, but no
// local emulator fires schedules: tests deliver the wake-up themselves.
func schedulerServer(t *testing.T) (*scheduler.Client, *recorder) {
	t.Helper()
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	rec := &recorder{next: http.DefaultTransport}
	c := scheduler.NewFromConfig(awstest.Config(), func(o *scheduler.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.HTTPClient = &http.Client{Transport: rec}
		o.RetryMaxAttempts = 1
	})
	return c, rec
}

func sqsClient(t *testing.T) (*sqs.Client, *recorder) {
	t.Helper()
	rec := &recorder{next: http.DefaultTransport}
	return sqs.NewFromConfig(awstest.Config(), func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(testenv.Need(t, "AGENTSLICE_TEST_SQS_ENDPOINT"))
		o.HTTPClient = &http.Client{Transport: rec}
	}), rec
}

var queues atomic.Int64

func createQueue(t *testing.T, c *sqs.Client, fifo bool) string {
	t.Helper()
	name := awstest.Name(t, "-"+strconv.FormatInt(queues.Add(1), 10))
	attrs := map[string]string{}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	u := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
	return u
}

func receive(t *testing.T, c *sqs.Client, u string) []events.SQSMessage {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(u), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]events.SQSMessage, len(out.Messages))
	for i, m := range out.Messages {
		recs[i] = events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), Attributes: m.Attributes}
	}
	return recs
}

var now = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func clock() time.Time { return now }

func wake(thread, call string) runtime.Message {
	return runtime.Message{V: 1, ID: runtime.DeriveID("wake_", thread, call), ThreadID: thread, Kind: runtime.KindWake, ToolCallID: call}
}

func timer(thread, call string, d time.Duration) runtime.Timer {
	return runtime.Timer{ThreadID: thread, CallID: call, At: now.Add(d), Message: wake(thread, call)}
}

func newTimers(t *testing.T, s timers.SQSAPI, sch timers.SchedulerAPI, cfg timers.Config) *timers.Timers {
	t.Helper()
	if cfg.DelayQueueURL == "" {
		cfg.DelayQueueURL = "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-delay"
	}
	if cfg.InputQueueURL == "" {
		cfg.InputQueueURL = "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-input.fifo"
	}
	cfg.SchedulerRoleARN = "arn:aws:iam::123456789012:role/agentslice-scheduler"
	cfg.Now = clock
	tm, err := timers.New(s, sch, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// A 900-second sleep goes to the delay queue, a 901-second one to
// EventBridge Scheduler.
func TestRouting(t *testing.T) {
	sc, sqsRec := sqsClient(t)
	sched, schedRec := schedulerServer(t)
	delayURL := createQueue(t, sc, false)
	tm := newTimers(t, sc, sched, timers.Config{DelayQueueURL: delayURL})
	ctx := context.Background()
	sqsRec.take() // queue set-up

	if err := tm.Schedule(ctx, timer("route", "call-900", 900*time.Second)); err != nil {
		t.Fatal(err)
	}
	sent := sqsRec.take()
	if len(sent) != 1 || sent[0].Target != "AmazonSQS.SendMessage" {
		t.Fatalf("900 s: SQS requests %+v, want one SendMessage", sent)
	}
	var in struct {
		QueueUrl     string
		DelaySeconds int
		MessageBody  string
	}
	if err := json.Unmarshal(sent[0].Body, &in); err != nil {
		t.Fatal(err)
	}
	if in.QueueUrl != delayURL || in.DelaySeconds != 900 {
		t.Fatalf("900 s: sent to %s with DelaySeconds %d, want the delay queue with 900", in.QueueUrl, in.DelaySeconds)
	}
	if m, err := runtime.DecodeMessage([]byte(in.MessageBody)); err != nil || m.ToolCallID != "call-900" {
		t.Fatalf("delayed body %s: %v", in.MessageBody, err)
	}
	if got := schedRec.take(); len(got) != 0 {
		t.Fatalf("900 s: Scheduler requests %+v, want none", got)
	}
	if recs := receive(t, sc, delayURL); len(recs) != 0 {
		t.Fatalf("a 900 s wake-up is visible at once: %v", recs)
	}
	sqsRec.take()

	if err := tm.Schedule(ctx, timer("route", "call-901", 901*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := sqsRec.take(); len(got) != 0 {
		t.Fatalf("901 s: SQS requests %+v, want none", got)
	}
	got := schedRec.take()
	if len(got) != 1 || got[0].Method != http.MethodPost || got[0].Path != "/schedules/"+timers.ScheduleName("as-", "route", "call-901") {
		t.Fatalf("901 s: Scheduler requests %+v, want one CreateSchedule", got)
	}
	if !bytes.Contains(got[0].Body, []byte(`"ScheduleExpression":"at(2030-01-02T03:19:06)"`)) {
		t.Fatalf("901 s: CreateSchedule body %s", got[0].Body)
	}
}

// The CreateSchedule request, exactly; then the schedule's life: created
// once, a second create is no error, cancel deletes it, a second cancel is
// no error.
func TestScheduleRequest(t *testing.T) {
	sched, rec := schedulerServer(t)
	tm := newTimers(t, noSQS{t}, sched, timers.Config{DeadLetterARN: "arn:aws:sqs:us-east-1:123456789012:agentslice-timers-dlq"})
	ctx := context.Background()
	tr := timer("thread-42", "call_sleep", 3*time.Hour+500*time.Millisecond)
	if err := tm.Schedule(ctx, tr); err != nil {
		t.Fatal(err)
	}
	name := timers.ScheduleName("as-", "thread-42", "call_sleep")
	got := rec.take()
	if len(got) != 1 || got[0].Path != "/schedules/"+name || got[0].Status != http.StatusOK {
		t.Fatalf("requests %+v", got)
	}
	var body map[string]any
	if err := json.Unmarshal(got[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if tok, _ := body["ClientToken"].(string); tok == "" {
		t.Fatal("CreateSchedule without a ClientToken")
	}
	delete(body, "ClientToken") // random per request
	want := golden(t, "testdata/create_schedule.json")
	if !jsonEqual(body, want) {
		g, _ := json.MarshalIndent(body, "", "  ")
		t.Fatalf("CreateSchedule body\n%s\nwant testdata/create_schedule.json", g)
	}
	var input map[string]string
	if err := json.Unmarshal([]byte(body["Target"].(map[string]any)["Input"].(string)), &input); err != nil {
		t.Fatal(err)
	}
	if input["MessageGroupId"] != "thread-42" || input["MessageDeduplicationId"] != sqsq.DedupID("thread-42", tr.Message.ID) {
		t.Fatalf("Input %v", input)
	}

	// What the emulator stored.
	out, err := sched.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: aws.String("default")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.ScheduleExpression) != "at(2030-01-02T06:04:06)" || out.ActionAfterCompletion != schedtypes.ActionAfterCompletionDelete ||
		aws.ToString(out.Target.Arn) != timers.UniversalSQSTarget {
		t.Fatalf("stored schedule %+v", out)
	}
	rec.take()

	if err := tm.Schedule(ctx, tr); err != nil {
		t.Fatalf("scheduling the same call again: %v", err)
	}
	if got := rec.take(); len(got) != 1 || got[0].Status != http.StatusConflict {
		t.Fatalf("second create: %+v, want one request answered 409 Conflict", got)
	}
	if err := tm.Cancel(ctx, "thread-42", "call_sleep"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 1 || got[0].Method != http.MethodDelete || got[0].Path != "/schedules/"+name || got[0].Status != http.StatusOK {
		t.Fatalf("cancel: %+v, want one DeleteSchedule", got)
	}
	_, err = sched.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name)})
	var nf *schedtypes.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("schedule still there after Cancel: %v", err)
	}
	rec.take()
	if err := tm.Cancel(ctx, "thread-42", "call_sleep"); err != nil {
		t.Fatalf("cancelling twice: %v", err)
	}
	if got := rec.take(); len(got) != 1 || got[0].Status != http.StatusNotFound {
		t.Fatalf("second cancel: %+v, want one request answered 404", got)
	}
}

// The schedule's Input is a valid SendMessage request for the FIFO input
// queue: delivered by hand (no emulator fires schedules), it arrives in the
// thread's group with the message's dedup ID, whatever the queue's
// content-based deduplication setting.
func TestScheduledWakeUpDelivers(t *testing.T) {
	sc, _ := sqsClient(t)
	input := createQueue(t, sc, true) // no content-based deduplication
	sched, rec := schedulerServer(t)
	tm := newTimers(t, sc, sched, timers.Config{InputQueueURL: input})
	ctx := context.Background()
	long := "thread/" + strings.Repeat("é", 80) // needs a hashed group ID
	for _, thread := range []string{"deliver-1", long} {
		tr := timer(thread, "c1", 2*time.Hour)
		if err := tm.Schedule(ctx, tr); err != nil {
			t.Fatal(err)
		}
		got := rec.take()
		var req struct{ Target struct{ Input string } }
		if len(got) != 1 || json.Unmarshal(got[0].Body, &req) != nil {
			t.Fatalf("requests %+v", got)
		}
		var send sqs.SendMessageInput
		dec := json.NewDecoder(strings.NewReader(req.Target.Input))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&send); err != nil {
			t.Fatalf("Input is not a SendMessage request: %v", err)
		}
		// Deliver it twice, as Scheduler may: the queue keeps one.
		for range 2 {
			if _, err := sc.SendMessage(ctx, &send); err != nil {
				t.Fatalf("delivering %s: %v", req.Target.Input, err)
			}
		}
		recs := receive(t, sc, input)
		if len(recs) != 1 {
			t.Fatalf("%d messages after two deliveries, want 1", len(recs))
		}
		m, err := sqsq.DecodeRecord(recs[0])
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != tr.Message.ID || m.ThreadID != thread || m.Kind != runtime.KindWake {
			t.Fatalf("delivered %+v", m)
		}
		_, _ = sc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(input), ReceiptHandle: aws.String(recs[0].ReceiptHandle)})
	}
}

// The delay path end to end: a due wake-up is visible on the delay queue at
// once, and the relay moves it into the thread's group of the FIFO queue.
func TestDelayRelay(t *testing.T) {
	sc, sqsRec := sqsClient(t)
	delay, input := createQueue(t, sc, false), createQueue(t, sc, true)
	tm := newTimers(t, sc, noScheduler{t}, timers.Config{DelayQueueURL: delay, InputQueueURL: input})
	ctx := context.Background()
	sqsRec.take() // queue set-up
	tests := []struct {
		name string
		d    time.Duration
		secs int
	}{
		{"past", -time.Minute, 0},
		{"now", 0, 0},
		{"rounded-up", 1200 * time.Millisecond, 2},
	}
	for _, tc := range tests {
		if err := tm.Schedule(ctx, timer("relay", tc.name, tc.d)); err != nil {
			t.Fatal(err)
		}
		var in struct{ DelaySeconds int }
		got := sqsRec.take()
		if len(got) != 1 || json.Unmarshal(got[0].Body, &in) != nil || in.DelaySeconds != tc.secs {
			t.Fatalf("%s: sent %+v, want DelaySeconds %d", tc.name, got, tc.secs)
		}
	}
	recs := receive(t, sc, delay)
	if len(recs) != 2 {
		t.Fatalf("%d due wake-ups visible, want 2 (the 2 s one is still delayed)", len(recs))
	}
	q, err := sqsq.NewQueue(sc, sqsq.QueueConfig{URL: input})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := timers.Relay(ctx, q, r); err != nil {
			t.Fatal(err)
		}
	}
	out := receive(t, sc, input)
	if len(out) != 1 { // one group, FIFO: the second is behind the first
		t.Fatalf("%d messages visible in the thread's group, want 1", len(out))
	}
	m, err := sqsq.DecodeRecord(out[0])
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != runtime.KindWake || out[0].Attributes["MessageDeduplicationId"] != sqsq.DedupID("relay", m.ID) {
		t.Fatalf("relayed %+v with attributes %v", m, out[0].Attributes)
	}
}

func TestRelayEvent(t *testing.T) {
	good := func(thread string) events.SQSMessage {
		b, _ := sqsq.EncodeBody(wake(thread, "c"))
		return events.SQSMessage{MessageId: "rec-" + thread, Body: b}
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{good("a"), {MessageId: "rec-bad", Body: `{"v":1,"id":"x"`}, good("b")}}
	var sent []string
	ok := queueFunc(func(_ context.Context, ms ...runtime.Message) error {
		for _, m := range ms {
			sent = append(sent, m.ThreadID)
		}
		return nil
	})
	var logged []error
	resp := timers.RelayEvent(context.Background(), ok, ev, func(err error) { logged = append(logged, err) })
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "rec-bad" || strings.Join(sent, ",") != "a,b" {
		t.Fatalf("failures %+v, sent %v", resp.BatchItemFailures, sent)
	}
	var bad *runtime.BadMessageError
	if len(logged) != 1 || !errors.As(logged[0], &bad) || !strings.Contains(logged[0].Error(), "rec-bad") {
		t.Fatalf("logged %v", logged)
	}

	down := queueFunc(func(context.Context, ...runtime.Message) error { return errors.New("queue unavailable") })
	resp = timers.RelayEvent(context.Background(), down, ev, nil)
	if len(resp.BatchItemFailures) != 3 {
		t.Fatalf("failures %+v, want all three records", resp.BatchItemFailures)
	}
	if err := timers.Relay(context.Background(), ok, ev.Records[1]); !errors.As(err, &bad) {
		t.Fatalf("Relay of a malformed record: %v", err)
	}
}

func TestScheduleRejectsBadTimers(t *testing.T) {
	tm := newTimers(t, noSQS{t}, noScheduler{t}, timers.Config{})
	ctx := context.Background()
	other := timer("t1", "c", time.Hour)
	other.Message.ThreadID = "t2"
	empty := timer("t1", "c", time.Hour)
	empty.Message.Kind = "nap"
	for name, tr := range map[string]runtime.Timer{"other thread": other, "invalid message": empty} {
		err := tm.Schedule(ctx, tr)
		var bad *runtime.BadMessageError
		if !errors.As(err, &bad) || !runtime.IsPermanent(err) {
			t.Errorf("%s: %v, want a BadMessageError", name, err)
		}
	}
	if err := tm.Schedule(ctx, runtime.Timer{ThreadID: "t"}); !runtime.IsPermanent(err) {
		t.Errorf("timer without a call ID: %v", err)
	}
}

func TestOversizeDelayedWakeUp(t *testing.T) {
	tm := newTimers(t, noSQS{t}, noScheduler{t}, timers.Config{MaxMessageBytes: 1024})
	tr := timer("t", "c", time.Minute)
	tr.Message.Text = strings.Repeat("z", 1024)
	err := tm.Schedule(context.Background(), tr)
	var tl *sqsq.TooLargeError
	if !errors.As(err, &tl) || !runtime.IsPermanent(err) {
		t.Fatalf("err %v, want a permanent TooLargeError", err)
	}
}

func TestScheduleName(t *testing.T) {
	names := map[string]bool{}
	for _, p := range [][2]string{{"t", "c"}, {"t", "c2"}, {"t2", "c"}, {strings.Repeat("x", 256), "call"}, {"thréad", "c"}} {
		n := timers.ScheduleName(timers.DefaultNamePrefix, p[0], p[1])
		if len(n) > 64 || strings.ContainsFunc(n, func(r rune) bool {
			return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_' || r == '.')
		}) {
			t.Fatalf("name %q is not a valid schedule name", n)
		}
		if n != timers.ScheduleName(timers.DefaultNamePrefix, p[0], p[1]) {
			t.Fatal("names are not deterministic")
		}
		names[n] = true
	}
	if len(names) != 5 {
		t.Fatalf("names collide: %v", names)
	}
	if n := timers.ScheduleName(strings.Repeat("p", 30), "t", "c"); len(n) > 64 {
		t.Fatalf("longest prefix gives %d characters", len(n))
	}
}

func TestAtExpression(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC), "at(2030-05-06T07:08:09)"},
		{time.Date(2030, 5, 6, 7, 8, 9, 1, time.UTC), "at(2030-05-06T07:08:10)"},
		{time.Date(2030, 12, 31, 23, 59, 59, 500, time.UTC), "at(2031-01-01T00:00:00)"},
		{time.Date(2030, 5, 6, 8, 8, 9, 0, berlin), "at(2030-05-06T07:08:09)"},
	} {
		if got := timers.AtExpression(tc.at); got != tc.want {
			t.Errorf("AtExpression(%v) = %s, want %s", tc.at, got, tc.want)
		}
	}
}

func TestNewValidatesConfig(t *testing.T) {
	ok := timers.Config{DelayQueueURL: "d", InputQueueURL: "i.fifo", SchedulerRoleARN: "arn:aws:iam::123456789012:role/r"}
	for name, mod := range map[string]func(*timers.Config){
		"no delay queue":  func(c *timers.Config) { c.DelayQueueURL = "" },
		"no input queue":  func(c *timers.Config) { c.InputQueueURL = "" },
		"no role":         func(c *timers.Config) { c.SchedulerRoleARN = "" },
		"role not an ARN": func(c *timers.Config) { c.SchedulerRoleARN = "scheduler-role" },
		"bad prefix":      func(c *timers.Config) { c.NamePrefix = "a b" },
		"long prefix":     func(c *timers.Config) { c.NamePrefix = strings.Repeat("p", 31) },
		"tiny max":        func(c *timers.Config) { c.MaxMessageBytes = 10 },
	} {
		cfg := ok
		mod(&cfg)
		if _, err := timers.New(noSQS{t}, noScheduler{t}, cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := timers.New(noSQS{t}, noScheduler{t}, ok); err != nil {
		t.Fatal(err)
	}
}

func golden(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

type queueFunc func(ctx context.Context, msgs ...runtime.Message) error

func (f queueFunc) Send(ctx context.Context, msgs ...runtime.Message) error { return f(ctx, msgs...) }

// noSQS and noScheduler fail the test when called: the path under test must
// not touch them.
type noSQS struct{ t *testing.T }

func (n noSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	n.t.Error("unexpected SQS SendMessage")
	return nil, errors.New("unexpected")
}

type noScheduler struct{ t *testing.T }

func (n noScheduler) CreateSchedule(context.Context, *scheduler.CreateScheduleInput, ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	n.t.Error("unexpected CreateSchedule")
	return nil, errors.New("unexpected")
}

func (n noScheduler) DeleteSchedule(context.Context, *scheduler.DeleteScheduleInput, ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error) {
	n.t.Error("unexpected DeleteSchedule")
	return nil, errors.New("unexpected")
}

// A background thread's long sleep is scheduled into the background input
// queue, an interactive one's into the interactive queue; the delay relay
// forwards each wake-up to its class's queue through the sqsq.Router. (No
// emulator fires schedules: the test checks the exact request sent.)
func TestWakeUpsRouteByClass(t *testing.T) {
	sc, _ := sqsClient(t)
	delay, input, bg := createQueue(t, sc, false), createQueue(t, sc, true), createQueue(t, sc, true)
	sched, rec := schedulerServer(t)
	tm := newTimers(t, sc, sched, timers.Config{DelayQueueURL: delay, InputQueueURL: input, BackgroundQueueURL: bg})
	ctx := context.Background()
	for _, c := range []runtime.Class{runtime.ClassBackground, runtime.ClassInteractive, ""} {
		tr := timer("t-"+string(c), "c1", 2*time.Hour)
		tr.Message.Class = c
		if err := tm.Schedule(ctx, tr); err != nil {
			t.Fatal(err)
		}
		got := rec.take()
		var req struct{ Target struct{ Input string } }
		var send struct{ QueueUrl string }
		if len(got) != 1 || json.Unmarshal(got[0].Body, &req) != nil || json.Unmarshal([]byte(req.Target.Input), &send) != nil {
			t.Fatalf("requests %+v", got)
		}
		want := input
		if c == runtime.ClassBackground {
			want = bg
		}
		if send.QueueUrl != want {
			t.Fatalf("class %q: schedule sends to %s, want %s", c, send.QueueUrl, want)
		}
	}
	for _, c := range []runtime.Class{runtime.ClassBackground, runtime.ClassInteractive} {
		tr := timer("r-"+string(c), "c1", 0)
		tr.Message.Class = c
		if err := tm.Schedule(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	router, err := sqsq.NewClassQueues(sc, sqsq.QueueConfig{URL: input}, bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range receive(t, sc, delay) {
		if err := timers.Relay(ctx, router, r); err != nil {
			t.Fatal(err)
		}
	}
	for url, want := range map[string]runtime.Class{input: runtime.ClassInteractive, bg: runtime.ClassBackground} {
		recs := receive(t, sc, url)
		if len(recs) != 1 {
			t.Fatalf("%d wake-ups in the %s queue, want 1", len(recs), want)
		}
		m, err := sqsq.DecodeRecord(recs[0])
		if err != nil || m.Class != want || m.ThreadID != "r-"+string(want) {
			t.Fatalf("the %s queue got %+v (%v)", want, m, err)
		}
	}
}
