package serverless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// fakeRunner stands in for the engine. The handler's rules are about what
// RunSlice returns (errors, rejections, panics), which a real engine cannot
// be made to return on demand; the real engine runs in
// TestSliceFunctionInProcess and in the e2e test.
type fakeRunner struct {
	fail     map[string]error            // thread -> error to return
	reject   map[string]map[string]error // thread -> message ID -> rejection
	panics   map[string]bool
	modelErr map[string]bool

	mu        sync.Mutex
	calls     []runtime.SliceInput
	deadlines map[string]time.Time
}

func (f *fakeRunner) RunSlice(ctx context.Context, in runtime.SliceInput) (*runtime.SliceResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, in)
	if dl, ok := ctx.Deadline(); ok {
		if f.deadlines == nil {
			f.deadlines = map[string]time.Time{}
		}
		f.deadlines[in.ThreadID] = dl
	}
	f.mu.Unlock()
	if f.panics[in.ThreadID] {
		panic("boom in " + in.ThreadID)
	}
	res := &runtime.SliceResult{Completions: 1}
	res.SetID("slice-" + in.ThreadID)
	for _, m := range in.Messages {
		if err, ok := f.reject[in.ThreadID][m.ID]; ok {
			res.Rejected = append(res.Rejected, runtime.Rejection{ID: m.ID, Err: err})
			continue
		}
		res.Processed = append(res.Processed, m.ID)
	}
	if f.modelErr[in.ThreadID] {
		res.ModelErr = runtime.Permanent(errors.New("access denied"))
	}
	return res, f.fail[in.ThreadID]
}

func (f *fakeRunner) threads() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for _, c := range f.calls {
		var ids []string
		for _, m := range c.Messages {
			ids = append(ids, m.ID)
		}
		out[c.ThreadID] = append(out[c.ThreadID], strings.Join(ids, ","))
	}
	return out
}

// fakeDLQ records dead letters; sends for the SQS message IDs in failFor
// fail. The real sender is tested against fauxqs in deadletter_test.go.
type fakeDLQ struct {
	failFor map[string]bool
	mu      sync.Mutex
	got     map[string]serverless.DeadLetter
}

func (d *fakeDLQ) DeadLetter(_ context.Context, rec events.SQSMessage, dl serverless.DeadLetter) error {
	if d.failFor[rec.MessageId] {
		return errors.New("the dead-letter queue is down")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.got == nil {
		d.got = map[string]serverless.DeadLetter{}
	}
	d.got[rec.MessageId] = dl
	return nil
}

func rec(sqsID, group, body string, receives int) events.SQSMessage {
	attrs := map[string]string{"ApproximateReceiveCount": fmt.Sprint(receives)}
	if group != "" {
		attrs["MessageGroupId"] = group
	}
	return events.SQSMessage{MessageId: sqsID, Body: body, Attributes: attrs}
}

func userRec(sqsID, thread, id string) events.SQSMessage {
	return rec(sqsID, thread, fmt.Sprintf(`{"v":1,"id":%q,"thread_id":%q,"kind":"user","text":"hi"}`, id, thread), 1)
}

func failures(resp events.SQSEventResponse) []string {
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	slices.Sort(out)
	return out
}

func newHandler(r *fakeRunner, d *fakeDLQ, out *bytes.Buffer) *serverless.Handler {
	w := &lambdafn.SyncWriter{W: out}
	return &serverless.Handler{Slices: r, DeadLetters: d, Logger: lambdafn.NewLogger(w, slog.LevelDebug),
		Metrics: &lambdafn.Metrics{W: w}}
}

func TestHandleBatchFromTestdata(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/batch.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	r := &fakeRunner{fail: map[string]error{"thread-b": fmt.Errorf("committing: %w", runtime.ErrConflict)}}
	d := &fakeDLQ{}
	resp, err := newHandler(r, d, &bytes.Buffer{}).Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(resp); !slices.Equal(got, []string{"sqs-b1"}) {
		t.Errorf("failures = %v, want only the conflicting slice's record sqs-b1", got)
	}
	if got := r.threads(); len(got) != 2 || got["thread-a"][0] != "a1,a3" || got["thread-b"][0] != "b1" {
		t.Errorf("slices = %v, want thread-a [a1,a3] (malformed a2 skipped) and thread-b [b1]", got)
	}
	for _, c := range r.calls {
		if want := c.ThreadID == "thread-a"; c.FirstDelivery != want {
			t.Errorf("%s: FirstDelivery = %v, want %v (thread-b's record was received twice)", c.ThreadID, c.FirstDelivery, want)
		}
	}
	if dl := d.got["sqs-a2"]; dl.Source != serverless.SourceDecode || !strings.Contains(dl.Reason, "malformed JSON") {
		t.Errorf("dead letter of sqs-a2 = %+v, want a decode failure naming malformed JSON", dl)
	}
	if dl := d.got["sqs-c1"]; dl.Source != serverless.SourceDecode || dl.MessageID != "c1" || !strings.Contains(dl.Reason, `unknown kind "bogus"`) {
		t.Errorf("dead letter of sqs-c1 = %+v, want a decode failure naming the unknown kind", dl)
	}
}

func TestHandleFIFOFailures(t *testing.T) {
	t.Parallel()
	bad := `{"v":1,"id":"x","thread_id":"A","kind":"user"}` // empty text
	tests := []struct {
		name         string
		recs         []events.SQSMessage
		runner       *fakeRunner
		dlqFails     []string
		wantFailures []string
		wantSlices   map[string]string // thread -> message IDs of its slices, ";"-joined
		wantDLQ      []string
	}{
		{
			name:         "a failed slice reports its group only",
			recs:         []events.SQSMessage{userRec("a1", "A", "m1"), userRec("b1", "B", "m1"), userRec("a2", "A", "m2"), userRec("b2", "B", "m2")},
			runner:       &fakeRunner{fail: map[string]error{"A": errors.New("throttled")}},
			wantFailures: []string{"a1", "a2"},
			wantSlices:   map[string]string{"A": "m1,m2", "B": "m1,m2"},
		},
		{
			name:         "a bad record is dead-lettered and does not block its group",
			recs:         []events.SQSMessage{rec("a1", "A", bad, 1), userRec("a2", "A", "m2")},
			wantSlices:   map[string]string{"A": "m2"},
			wantDLQ:      []string{"a1"},
			wantFailures: nil,
		},
		{
			name:         "a bad record that cannot be dead-lettered holds back what follows",
			recs:         []events.SQSMessage{userRec("a1", "A", "m1"), rec("a2", "A", "{", 1), userRec("a3", "A", "m3"), userRec("b1", "B", "m1")},
			dlqFails:     []string{"a2"},
			wantSlices:   map[string]string{"A": "m1", "B": "m1"},
			wantFailures: []string{"a2", "a3"},
		},
		{
			name:         "rejected messages are dead-lettered and acknowledged",
			recs:         []events.SQSMessage{userRec("a1", "A", "m1"), userRec("a2", "A", "m2")},
			runner:       &fakeRunner{reject: map[string]map[string]error{"A": {"m1": &runtime.BadMessageError{ID: "m1", Reason: "nope"}}}},
			wantSlices:   map[string]string{"A": "m1,m2"},
			wantDLQ:      []string{"a1"},
			wantFailures: nil,
		},
		{
			name: "a failed slice does not report what it dead-lettered",
			recs: []events.SQSMessage{userRec("a1", "A", "m1"), userRec("a2", "A", "m2")},
			runner: &fakeRunner{reject: map[string]map[string]error{"A": {"m1": &runtime.BadMessageError{ID: "m1", Reason: "nope"}}},
				fail: map[string]error{"A": errors.New("timeout")}},
			wantSlices:   map[string]string{"A": "m1,m2"},
			wantDLQ:      []string{"a1"},
			wantFailures: []string{"a2"},
		},
		{
			name:         "a rejected message that cannot be dead-lettered is retried alone",
			recs:         []events.SQSMessage{userRec("a1", "A", "m1"), userRec("a2", "A", "m2")},
			runner:       &fakeRunner{reject: map[string]map[string]error{"A": {"m1": &runtime.BadMessageError{ID: "m1", Reason: "nope"}}}},
			dlqFails:     []string{"a1"},
			wantSlices:   map[string]string{"A": "m1,m2"},
			wantFailures: []string{"a1"},
		},
		{
			name:         "a panic reports the group",
			recs:         []events.SQSMessage{userRec("a1", "A", "m1"), userRec("b1", "B", "m1")},
			runner:       &fakeRunner{panics: map[string]bool{"A": true}},
			wantSlices:   map[string]string{"A": "m1", "B": "m1"},
			wantFailures: []string{"a1"},
		},
		{
			name:         "a permanent model error is acknowledged",
			recs:         []events.SQSMessage{userRec("a1", "A", "m1")},
			runner:       &fakeRunner{modelErr: map[string]bool{"A": true}},
			wantSlices:   map[string]string{"A": "m1"},
			wantFailures: nil,
		},
		{
			name:       "a record without a group is dead-lettered",
			recs:       []events.SQSMessage{rec("x1", "", `{"v":1,"id":"m1","thread_id":"A","kind":"user","text":"hi"}`, 1)},
			wantDLQ:    []string{"x1"},
			wantSlices: map[string]string{},
		},
		{
			name:       "a record in the wrong group is dead-lettered",
			recs:       []events.SQSMessage{rec("x1", "B", `{"v":1,"id":"m1","thread_id":"A","kind":"user","text":"hi"}`, 1)},
			wantDLQ:    []string{"x1"},
			wantSlices: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.runner
			if r == nil {
				r = &fakeRunner{}
			}
			d := &fakeDLQ{failFor: map[string]bool{}}
			for _, id := range tt.dlqFails {
				d.failFor[id] = true
			}
			resp, err := newHandler(r, d, &bytes.Buffer{}).Handle(context.Background(), events.SQSEvent{Records: tt.recs})
			if err != nil {
				t.Fatal(err)
			}
			if got := failures(resp); !slices.Equal(got, tt.wantFailures) {
				t.Errorf("failures = %v, want %v", got, tt.wantFailures)
			}
			got := map[string]string{}
			for th, s := range r.threads() {
				got[th] = strings.Join(s, ";")
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantSlices) {
				t.Errorf("slices = %v, want %v", got, tt.wantSlices)
			}
			var dlq []string
			for id := range d.got {
				dlq = append(dlq, id)
			}
			slices.Sort(dlq)
			if !slices.Equal(dlq, tt.wantDLQ) {
				t.Errorf("dead-lettered = %v, want %v", dlq, tt.wantDLQ)
			}
		})
	}
}

func TestHandleSliceDeadline(t *testing.T) {
	t.Parallel()
	r := &fakeRunner{}
	h := newHandler(r, &fakeDLQ{}, &bytes.Buffer{})
	h.Margin = 4 * time.Second
	dl := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	if _, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{userRec("a1", "A", "m1")}}); err != nil {
		t.Fatal(err)
	}
	if got, want := r.deadlines["A"], dl.Add(-4*time.Second); !got.Equal(want) {
		t.Fatalf("slice deadline = %v, want the invocation deadline minus the margin, %v", got, want)
	}
}

func TestHandleLogsAndMetrics(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := &fakeRunner{fail: map[string]error{"B": errors.New("throttled")}}
	h := newHandler(r, &fakeDLQ{}, &out)
	_, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		userRec("a1", "A", "m1"), userRec("b1", "B", "m1"), rec("c1", "C", "{", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	slicesByThread := map[string]map[string]any{}
	emf := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		switch {
		case m["msg"] == "slice":
			slicesByThread[m["thread"].(string)] = m
		case m["_aws"] != nil:
			key, _ := m["Outcome"].(string)
			if s, ok := m["Source"].(string); ok {
				key = "dead-letter/" + s
			}
			emf[key] = m
		}
	}
	a, b := slicesByThread["A"], slicesByThread["B"]
	if a == nil || b == nil {
		t.Fatalf("slice lines = %v", slicesByThread)
	}
	for _, k := range []string{"slice", "sqs_message_ids", "message_ids", "duration_ms", "round_trips", "outcome"} {
		if _, ok := a[k]; !ok {
			t.Errorf("the slice line lacks %q: %v", k, a)
		}
	}
	if a["outcome"] != serverless.OutcomeOK || b["outcome"] != serverless.OutcomeRetry || b["error"] != "throttled" || b["level"] != "WARN" {
		t.Errorf("outcomes: A %v, B %v (%v, %v)", a["outcome"], b["outcome"], b["error"], b["level"])
	}
	for _, key := range []string{serverless.OutcomeOK, serverless.OutcomeRetry, "dead-letter/" + serverless.SourceDecode} {
		m := emf[key]
		if m == nil {
			t.Fatalf("no EMF record for %s; have %v", key, emf)
		}
		d := m["_aws"].(map[string]any)
		cw := d["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if cw["Namespace"] != lambdafn.DefaultNamespace || d["Timestamp"].(float64) <= 0 {
			t.Errorf("EMF directive %v", d)
		}
		for _, mt := range cw["Metrics"].([]any) {
			name := mt.(map[string]any)["Name"].(string)
			if _, ok := m[name].(float64); !ok {
				t.Errorf("EMF record %s declares metric %s without a numeric value: %v", key, name, m)
			}
		}
		for _, dim := range cw["Dimensions"].([]any)[0].([]any) {
			if _, ok := m[dim.(string)].(string); !ok {
				t.Errorf("EMF record %s declares dimension %v without a value", key, dim)
			}
		}
	}
}

func TestGroupIDOfThreadsMatchesDecode(t *testing.T) {
	t.Parallel()
	// The handler groups by MessageGroupId and DecodeRecord insists that it
	// is sqsq.GroupID(thread): a thread ID SQS does not accept as a group
	// travels under its hash and still decodes.
	thread := "fil-déjà-vu"
	r := rec("x1", sqsq.GroupID(thread), fmt.Sprintf(`{"v":1,"id":"m1","thread_id":%q,"kind":"user","text":"hi"}`, thread), 1)
	f := &fakeRunner{}
	resp, err := newHandler(f, &fakeDLQ{}, &bytes.Buffer{}).Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}})
	if err != nil || len(resp.BatchItemFailures) != 0 || f.threads()[thread] == nil {
		t.Fatalf("resp %+v, err %v, slices %v", resp, err, f.threads())
	}
}
