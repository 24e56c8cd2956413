package rap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

func TestReceiverAcceptsEachType(t *testing.T) {
	t.Parallel()
	rig := newCallbackRig(t, nil)
	u := rig.url(t, "thr_1", "call_1")
	cases := []struct {
		file string
		want func(m runtime.Message) bool
	}{
		{"tool_result_text.json", func(m runtime.Message) bool {
			return m.Kind == runtime.KindToolResult && m.Text == "42 files changed" && m.ID == runtime.DeriveID("res_", "thr_1", "call_1")
		}},
		{"tool_result_subscription.json", nil}, // same ID as the result above: deduplicated by the runtime
		{"subscription_event.json", func(m runtime.Message) bool {
			return m.Kind == runtime.KindEvent && m.Associative && !m.Final && m.Text == "build 17 failed"
		}},
		{"subscription_event_final.json", func(m runtime.Message) bool {
			return m.Kind == runtime.KindEvent && m.Final && m.ID == runtime.DeriveID("sev_", "thr_1", "call_1", "id", "call_1.9")
		}},
		{"oauth.json", func(m runtime.Message) bool {
			return m.Kind == runtime.KindNotice && strings.Contains(m.Text, "https://auth.example.com/authorize")
		}},
		{"user_choice.json", func(m runtime.Message) bool {
			return m.Kind == runtime.KindNotice && strings.Contains(m.Text, "Deploy to which stage?") && strings.Contains(m.Text, "1. prod")
		}},
	}
	for _, tc := range cases {
		status, msg := post(t, u, string(readTestdata(t, "callbacks", tc.file)))
		if status != http.StatusOK {
			t.Fatalf("%s: status %d (%s)", tc.file, status, msg)
		}
		m := rig.q.next(t)
		if m.ThreadID != "thr_1" || m.ToolCallID != "call_1" {
			t.Fatalf("%s: message for %s/%s", tc.file, m.ThreadID, m.ToolCallID)
		}
		if tc.want != nil && !tc.want(m) {
			t.Fatalf("%s: unexpected message %+v", tc.file, m)
		}
	}
	// view_update is stored, not enqueued.
	status, msg := post(t, u, string(readTestdata(t, "callbacks", "view_update.json")))
	if status != http.StatusOK {
		t.Fatalf("view_update: status %d (%s)", status, msg)
	}
	v, ok, _ := rig.rcv.Views().View(context.Background(), "thr_1", "todo_list")
	if !ok || !strings.Contains(string(v), "write tests") {
		t.Fatalf("view = %s, %v", v, ok)
	}
	if c, ok := rig.rcv.Choices().(*MemoryChoices).Choice("thr_1", "call_1"); !ok || c.ResponseURL != "https://tool.example.com/choices/abc" {
		t.Fatalf("choice not stored: %+v %v", c, ok)
	}
	if n := rig.q.count(); n != len(cases) {
		t.Fatalf("%d messages enqueued, want %d", n, len(cases))
	}
}

func TestReceiverDeduplicatesRetriedEvents(t *testing.T) {
	t.Parallel()
	rig := newCallbackRig(t, nil)
	u := rig.url(t, "thr_1", "call_1")
	body := string(readTestdata(t, "callbacks", "subscription_event.json"))
	post(t, u, body)
	post(t, u, body)
	a, b := rig.q.next(t), rig.q.next(t)
	if a.ID != b.ID {
		t.Fatalf("a retried event got two IDs: %s, %s", a.ID, b.ID)
	}
}

// TestReceiverRejects: forged, tampered, expired, cross-thread and malformed
// callbacks get a 4xx naming the problem, and nothing is enqueued.
func TestReceiverRejects(t *testing.T) {
	t.Parallel()
	now := time.Now()
	rig := newCallbackRig(t, func(c *ReceiverConfig) { c.Now = func() time.Time { return now } })
	good := rig.url(t, "thr_1", "call_1")
	result := `{"type":"tool_result","group_id":"thr_1","id":"call_1","text":"ok"}`

	tamper := func(param, value string) string {
		u, _ := url.Parse(good)
		q := u.Query()
		q.Set(param, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	drop := func(param string) string {
		u, _ := url.Parse(good)
		q := u.Query()
		q.Del(param)
		u.RawQuery = q.Encode()
		return u.String()
	}
	otherKey, _ := NewKeyring(testKey("k2"))
	forgedSigner := &Signer{Keys: otherKey, BaseURL: rig.signer.BaseURL}
	forged, _ := forgedSigner.CallbackURL("thr_1", "call_1")
	// A forger who knows the format but not the key reuses our key ID.
	forgedSameID := strings.Replace(forged, "k=k2", "k=k1", 1)
	expiredSigner := &Signer{Keys: rig.signer.Keys, BaseURL: rig.signer.BaseURL, TTL: time.Minute, Now: func() time.Time { return now.Add(-2 * time.Minute) }}
	expired, _ := expiredSigner.CallbackURL("thr_1", "call_1")

	cases := []struct {
		name, url, body string
		status          int
		wantInErr       string
	}{
		{"no signature", rig.srv.URL + "/rap/callback?t=thr_1&c=call_1", result, 403, "signed parameters"},
		{"signature dropped", drop("s"), result, 403, "signed parameters"},
		{"forged with another key", forged, result, 403, "unknown signing key"},
		{"forged with our key id", forgedSameID, result, 403, "signature does not match"},
		{"thread tampered", tamper("t", "thr_2"), `{"type":"tool_result","group_id":"thr_2","id":"call_1","text":"ok"}`, 403, "signature does not match"},
		{"call tampered", tamper("c", "call_2"), result, 403, "signature does not match"},
		{"expiry extended", tamper("e", "99999999999"), result, 403, "signature does not match"},
		{"expired", expired, result, 403, "expired"},
		{"cross-thread body", good, `{"type":"tool_result","group_id":"thr_2","id":"call_1","text":"ok"}`, 403, "group_id"},
		{"other call in body", good, `{"type":"tool_result","group_id":"thr_1","id":"call_9","text":"ok"}`, 403, `"id"`},
		{"event for another call", good, `{"type":"subscription_event","group_id":"thr_1","tool_call_id":"call_9","text":"x"}`, 403, "tool_call_id"},
		{"view for another thread", good, `{"type":"view_update","group_id":"thr_2","view_type":"v","content":{}}`, 403, "group_id"},
		{"malformed JSON", good, `{"type":`, 400, "malformed JSON"},
		{"missing text", good, `{"type":"tool_result","group_id":"thr_1","id":"call_1"}`, 400, `field "text"`},
		{"bad image", good, `{"type":"tool_result","group_id":"thr_1","id":"call_1","content":[{"type":"image","data":"%%%","mediaType":"image/png"}]}`, 400, "content[0].data"},
		{"choice default out of range", good, `{"type":"user_choice","group_id":"thr_1","id":"call_1","prompt":"p","choices":["a"],"default":1,"response_url":"https://x.example.com/r"}`, 400, "default"},
		{"unknown type", good, `{"type":"nope","group_id":"thr_1"}`, 400, `field "type"`},
	}
	for _, tc := range cases {
		status, msg := post(t, tc.url, tc.body)
		if status != tc.status || !strings.Contains(msg, tc.wantInErr) {
			t.Errorf("%s: got %d %q, want %d containing %q", tc.name, status, msg, tc.status, tc.wantInErr)
		}
	}
	resp, err := http.Get(good)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", resp.StatusCode)
	}
	status, _ := post(t, good, `{"type":"tool_result","group_id":"thr_1","id":"call_1","text":"`+strings.Repeat("a", MaxCallbackBody)+`"}`)
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversize body: status %d, want 413", status)
	}
	// The authentic but unusable bodies (malformed JSON, missing text, bad
	// image, bad default, unknown type, oversize) each put one error result
	// in the signed thread, so the model goes on; the forged, expired and
	// cross-thread ones put nothing anywhere.
	if n := rig.q.count(); n != 6 {
		t.Fatalf("%d messages enqueued from rejected callbacks, want 6 error results", n)
	}
	for range 6 {
		m := rig.q.next(t)
		if m.ThreadID != "thr_1" || m.ToolCallID != "call_1" || m.Kind != runtime.KindToolResult || !m.IsError ||
			!strings.HasPrefix(m.ID, "bad_") || !strings.Contains(m.Text, "could not use") {
			t.Fatalf("unexpected message for an unusable callback: %+v", m)
		}
	}
	if _, ok, _ := rig.rcv.Views().View(context.Background(), "thr_2", "v"); ok {
		t.Fatal("a rejected view update was stored")
	}
}

type checkerFunc func(ctx context.Context, thread, call string, t CallbackType) error

func (f checkerFunc) CheckCall(ctx context.Context, thread, call string, t CallbackType) error {
	return f(ctx, thread, call, t)
}

func TestReceiverCallCheckerAndQueueErrors(t *testing.T) {
	t.Parallel()
	var checkErr error
	rig := newCallbackRig(t, func(c *ReceiverConfig) {
		c.Calls = checkerFunc(func(context.Context, string, string, CallbackType) error { return checkErr })
	})
	u := rig.url(t, "thr_1", "call_1")
	body := `{"type":"tool_result","group_id":"thr_1","id":"call_1","text":"ok"}`
	cases := []struct {
		name     string
		check    error
		queueErr error
		status   int
	}{
		{"unknown call", ErrUnknownCall, nil, 404},
		{"checker down", errors.New("store unreachable"), nil, 503},
		{"thread closed", nil, runtime.ErrClosed, 410},
		{"queue down", nil, errors.New("queue unreachable"), 503},
	}
	for _, tc := range cases {
		checkErr = tc.check
		rig.q.mu.Lock()
		rig.q.err = tc.queueErr
		rig.q.mu.Unlock()
		if status, msg := post(t, u, body); status != tc.status {
			t.Errorf("%s: status %d (%s), want %d", tc.name, status, msg, tc.status)
		}
	}
	if n := rig.q.count(); n != 0 {
		t.Fatalf("%d messages enqueued", n)
	}
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	old, _ := NewKeyring(testKey("k1"))
	oldSigner := &Signer{Keys: old, BaseURL: "https://rt.example.com/cb"}
	issued, _ := oldSigner.CallbackURL("thr_1", "call_1")
	u, _ := url.Parse(issued)

	rotated, err := NewKeyring(testKey("k2"), testKey("k1"))
	if err != nil {
		t.Fatal(err)
	}
	if capa, err := rotated.Verify(u.Query(), time.Now()); err != nil || capa.KeyID != "k1" || capa.ThreadID != "thr_1" {
		t.Fatalf("URL signed with the older key: %+v, %v", capa, err)
	}
	fresh, _ := (&Signer{Keys: rotated, BaseURL: "https://rt.example.com/cb"}).CallbackURL("thr_1", "call_1")
	if !strings.Contains(fresh, "k=k2") {
		t.Fatalf("new URLs must be signed with the current key: %s", fresh)
	}
	retired, _ := NewKeyring(testKey("k2"))
	if _, err := retired.Verify(u.Query(), time.Now()); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("URL signed with a retired key: %v, want ErrBadSignature", err)
	}
}

func TestKeyringConfig(t *testing.T) {
	t.Parallel()
	secret := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	kr, err := ParseKeyring("new:" + secret + ",old:" + secret)
	if err != nil || kr.CurrentID() != "new" {
		t.Fatalf("ParseKeyring: %v, %v", kr, err)
	}
	for _, bad := range []string{"", "nokey", "k:short", "k:" + secret + ",k:" + secret, "bad id:" + secret} {
		if _, err := ParseKeyring(bad); err == nil {
			t.Errorf("ParseKeyring(%q) accepted", bad)
		}
	}
}

// recordingOutput is a runtime.Output that records events.
type recordingOutput struct {
	mu  sync.Mutex
	evs []runtime.OutputEvent
}

func (o *recordingOutput) Publish(_ context.Context, ev runtime.OutputEvent) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evs = append(o.evs, ev)
	return nil
}

func (o *recordingOutput) events() []runtime.OutputEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]runtime.OutputEvent(nil), o.evs...)
}

// TestReceiverSpecDisplaySegments posts the spec's display_as examples: a
// diff or image segment is accepted (it used to get a 400 and strand the
// call), the model's message carries the full text, and the segment a UI
// should render is published as a "display" output event.
func TestReceiverSpecDisplaySegments(t *testing.T) {
	t.Parallel()
	out := &recordingOutput{}
	rig := newCallbackRig(t, func(c *ReceiverConfig) { c.Output = out })
	for i, tc := range []struct{ file, wantType string }{
		{"tool_result_display_text.json", "text"},
		{"tool_result_display_diff.json", "diff"},
		{"tool_result_display_image.json", "image"},
		{"tool_result_display_unknown.json", "text"},
		{"tool_result_display_object.json", "text"}, // an object for a list: one segment
	} {
		call := "call_abc123"
		thread := fmt.Sprintf("thread_%d", i)
		body := strings.ReplaceAll(string(readTestdata(t, "callbacks", tc.file)), "thread_xyz", thread)
		if status, msg := post(t, rig.url(t, thread, call), body); status != http.StatusOK {
			t.Fatalf("%s: status %d (%s)", tc.file, status, msg)
		}
		if m := rig.q.next(t); m.Kind != runtime.KindToolResult || m.Text == "" {
			t.Fatalf("%s: message %+v", tc.file, m)
		}
		evs := out.events()
		if len(evs) != i+1 {
			t.Fatalf("%s: %d display events, want %d", tc.file, len(evs), i+1)
		}
		var got struct {
			CallID  string  `json:"call_id"`
			Display Display `json:"display"`
		}
		ev := evs[i]
		if err := json.Unmarshal([]byte(ev.Text), &got); err != nil || ev.Kind != "display" || ev.ThreadID != thread ||
			got.CallID != call || got.Display.Type != tc.wantType {
			t.Fatalf("%s: display event %+v (%v)", tc.file, ev, err)
		}
	}
}

// TestReceiverIgnoresDisplayAsThatIsNoList: a display_as that is neither a
// list nor a segment is a bad presentation hint, not a bad result: the
// result is accepted with its text, nothing is published for UIs, and the
// hint is logged.
func TestReceiverIgnoresDisplayAsThatIsNoList(t *testing.T) {
	t.Parallel()
	out := &recordingOutput{}
	var logs strings.Builder
	var mu sync.Mutex
	rig := newCallbackRig(t, func(c *ReceiverConfig) {
		c.Output = out
		c.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
	})
	body := string(readTestdata(t, "callbacks", "tool_result_display_string.json"))
	if status, msg := post(t, rig.url(t, "thread_xyz", "call_abc123"), body); status != http.StatusOK {
		t.Fatalf("status %d (%s), want the result accepted", status, msg)
	}
	if m := rig.q.next(t); m.Kind != runtime.KindToolResult || m.Text != "done" || m.IsError {
		t.Fatalf("message %+v, want the result's text", m)
	}
	if evs := out.events(); len(evs) != 0 {
		t.Fatalf("display events %+v, want none", evs)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "display_as is not a list; ignored") {
		t.Fatalf("log:\n%s", logs.String())
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestReceiverCarriesPeoplesState: what people see travels in the
// messages into the thread's history: a user_choice's choice (as the tool
// sent it), a result's first renderable display segment, and, with
// HistoryViews, a view_update as a KindView message (not stored in the
// receiver); every message is stamped with its arrival on the receiver's
// clock.
func TestReceiverCarriesPeoplesState(t *testing.T) {
	t.Parallel()
	arrival := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	rig := newCallbackRig(t, func(c *ReceiverConfig) {
		c.HistoryViews = true
		c.Now = func() time.Time { return arrival }
	})
	cases := []struct {
		file, thread, call string
		want               func(m runtime.Message) bool
	}{
		{"user_choice.json", "thr_1", "call_1", func(m runtime.Message) bool {
			return m.Kind == runtime.KindNotice && strings.Contains(m.Choice, `"response_url":"https://tool.example.com/choices/abc"`) &&
				strings.Contains(m.Choice, `"prompt":"Deploy to which stage?"`)
		}},
		{"tool_result_display_diff.json", "thread_xyz", "call_abc123", func(m runtime.Message) bool {
			return m.Kind == runtime.KindToolResult && strings.HasPrefix(m.Display, `{"type":"diff"`)
		}},
		{"view_update.json", "thr_1", "call_9", func(m runtime.Message) bool {
			return m.Kind == runtime.KindView && m.Text == `{"view_type":"todo_list","content":{"items":[{"text":"write tests","done":false}]}}`
		}},
	}
	for _, tc := range cases {
		if status, msg := post(t, rig.url(t, tc.thread, tc.call), string(readTestdata(t, "callbacks", tc.file))); status != http.StatusOK {
			t.Fatalf("%s: status %d (%s)", tc.file, status, msg)
		}
		m := rig.q.next(t)
		if !tc.want(m) || m.At != runtime.StampOf(arrival) {
			t.Fatalf("%s: message %+v", tc.file, m)
		}
	}
	if _, ok, _ := rig.rcv.Views().View(context.Background(), "thr_1", "todo_list"); ok {
		t.Fatal("with HistoryViews the view was stored in the receiver too")
	}
}

// TestViewTooLargeForTheQueue: a view_update the queue refuses for its
// size answers 413 naming the content, and the thread gets nothing: a view
// is not the call's result, so no error result ends the call.
func TestViewTooLargeForTheQueue(t *testing.T) {
	t.Parallel()
	rig := newCallbackRig(t, func(c *ReceiverConfig) { c.HistoryViews = true })
	body := `{"type":"view_update","group_id":"thr_1","view_type":"log","content":{"text":"` +
		strings.Repeat("x", runtime.MaxMessageBytes+1000) + `"}}`
	status, msg := post(t, rig.url(t, "thr_1", "call_1"), body)
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "view_update") {
		t.Fatalf("status %d (%s), want 413 for the view", status, msg)
	}
	if n := rig.q.count(); n != 0 {
		t.Fatalf("%d messages enqueued for a refused view, want none (no error result for the call)", n)
	}
}

// TestDisplayLeftOutWhenTooLarge: a display segment that would not fit in
// the result's queue message beside the result is left out (the UI shows
// the text); the result itself is untouched.
func TestDisplayLeftOutWhenTooLarge(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("x", fitBudget-1000)
	small := &Callback{Type: TypeToolResult, ToolResult: &ToolResult{Type: TypeToolResult, GroupID: "t", ID: "c", Text: &text,
		DisplayAs: []DisplaySegment{TextSegment("short")}}}
	if m := MessageFor("t", "c", small); m.Display != `{"type":"text","text":"short"}` || m.Text != text {
		t.Fatalf("a segment that fits: display %q", m.Display)
	}
	big := &Callback{Type: TypeToolResult, ToolResult: &ToolResult{Type: TypeToolResult, GroupID: "t", ID: "c", Text: &text,
		DisplayAs: []DisplaySegment{TextSegment(strings.Repeat("y", 2000))}}}
	if m := MessageFor("t", "c", big); m.Display != "" || m.Text != text {
		t.Fatalf("a segment that does not fit: display of %d bytes, text changed %v", len(m.Display), m.Text != text)
	}
}
