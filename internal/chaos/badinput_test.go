package chaos_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// badRig is one running embedded system fed the way a deployment is: SQS
// records through sqsq.DecodeRecord, tool callbacks through the signed RAP
// receiver, tools from RAP toolset servers through the loader, a scripted
// model. Bad input enters through every door while a healthy conversation
// runs beside it.
type badRig struct {
	t       *testing.T
	sys     *local.System
	store   *local.HistoryStore
	loader  *rap.Loader
	signer  *rap.Signer
	cbURL   string
	broken  string // URL of the toolset server with an invalid manifest
	lookups atomic.Int64
	storm   *stormStore
	mu      sync.Mutex
	outs    []runtime.OutputEvent
	forged  atomic.Int64 // messages the receiver enqueued for call_x, which only forged callbacks name
}

// stormStore fails the next n commits of a thread with runtime.ErrConflict,
// as a DSQL conflict storm does once the store's own OCC retries are spent.
type stormStore struct {
	runtime.HistoryStore
	mu     sync.Mutex
	thread string
	n      int
	failed int
}

func (s *stormStore) Commit(ctx context.Context, c *runtime.Commit) error {
	s.mu.Lock()
	if c.ThreadID == s.thread && s.n > 0 {
		s.n--
		s.failed++
		s.mu.Unlock()
		return &conflictStorm{thread: c.ThreadID}
	}
	s.mu.Unlock()
	return s.HistoryStore.Commit(ctx, c)
}

func (s *stormStore) set(thread string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.thread, s.n, s.failed = thread, n, 0
}

type conflictStorm struct{ thread string }

func (c *conflictStorm) Error() string {
	return "commit of " + c.thread + ": OCC conflicts outlasted the retries (SQLSTATE 40001)"
}
func (c *conflictStorm) Is(target error) bool { return target == runtime.ErrConflict }

type countingQueue struct {
	runtime.Queue
	callX *atomic.Int64
}

func (q countingQueue) Send(ctx context.Context, msgs ...runtime.Message) error {
	err := q.Queue.Send(ctx, msgs...)
	if err == nil {
		for _, m := range msgs {
			if m.ToolCallID == "call_x" {
				q.callX.Add(1)
			}
		}
	}
	return err
}

func newBadRig(t *testing.T) *badRig {
	t.Helper()
	rig := &badRig{t: t, store: local.NewHistoryStore()}
	rig.storm = &stormStore{HistoryStore: rig.store}
	quiet := slog.New(slog.DiscardHandler)

	// The callback receiver, on a real HTTP server; its handler is set once
	// the system exists.
	cb := httptest.NewServer(nil)
	t.Cleanup(cb.Close)
	keys, err := rap.NewKeyring(rap.Key{ID: "k1", Secret: []byte(strings.Repeat("s", rap.MinKeyLen))})
	if err != nil {
		t.Fatal(err)
	}
	rig.cbURL = cb.URL + "/cb"
	rig.signer = &rap.Signer{Keys: keys, BaseURL: rig.cbURL}

	// A good toolset server (the kit) and one whose manifest is invalid.
	kit, err := rap.NewServer(rap.ServerConfig{Name: "lookup tools", Logger: quiet, Tools: []rap.Tool{{
		Name: "lookup", Description: "Finds where something is defined.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`),
		Run: func(ctx context.Context, c *rap.Call) error {
			rig.lookups.Add(1)
			var a struct{ Q string }
			if err := c.Args(&a); err != nil {
				return err
			}
			return c.Result(ctx, "found "+a.Q+" in src/"+a.Q+".go")
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	kitSrv := httptest.NewServer(kit)
	t.Cleanup(func() { kitSrv.Close(); kit.Stop() })
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"name":"broken","endpoint":"/invoke","tools":[{"name":"summarise","description":"d","inputSchema":{"type":17}}]}`))
	}))
	t.Cleanup(broken.Close)
	rig.broken = broken.URL

	disp, err := rap.NewDispatcher(rap.DispatcherConfig{Signer: rig.signer, Logger: quiet,
		Retry: rap.RetryPolicy{Attempts: 2, Base: time.Millisecond, Max: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(disp.Close)
	rig.loader, err = rap.NewLoader(rap.LoaderConfig{Servers: []string{kitSrv.URL, broken.URL}, Dispatcher: disp, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}

	script := &model.Script{Threads: map[string][]model.Step{
		"healthy": {{ToolCall: &model.StepCall{Name: "lookup", Args: json.RawMessage(`{"q":"parser"}`)}}, {Text: "The parser is in src/parser.go."}},
		"schema":  {{ToolCall: &model.StepCall{Name: "lookup", Args: json.RawMessage(`{"q":5}`)}}, {Text: "My arguments were wrong."}},
		"garbage": {{ToolCall: &model.StepCall{Name: "lookup", RawArgs: `{"q": parser`}}, {Text: "My arguments were not JSON."}},
		"lonely":  {{Text: "Hello."}},
		"stormy":  {{Text: "Weathered it."}, {Text: "Weathered that too."}},
	}}
	rig.sys, err = local.New(local.Config{Model: model.NewScripted(script), Tools: rig.loader, History: rig.storm,
		Output: outputFunc(func(ev runtime.OutputEvent) {
			rig.mu.Lock()
			rig.outs = append(rig.outs, ev)
			rig.mu.Unlock()
		}),
		Logger: quiet, SliceAttempts: 5, RetryBase: time.Millisecond, Limits: runtime.Limits{RetryBase: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rig.sys.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rig.sys.Stop)
	rcv, err := rap.NewReceiver(rap.ReceiverConfig{Keys: keys, Queue: countingQueue{rig.sys, &rig.forged}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/cb", rcv)
	cb.Config.Handler = mux
	return rig
}

type outputFunc func(ev runtime.OutputEvent)

func (f outputFunc) Publish(ctx context.Context, ev runtime.OutputEvent) error {
	f(ev)
	return nil
}

// ingest is the slice Lambda's front door: an SQS record decoded into a
// message and handed to the system. A decoding error is what sends the
// record to the dead-letter queue.
func (rig *badRig) ingest(id, thread, body string) error {
	m, err := sqsq.DecodeRecord(events.SQSMessage{MessageId: id, Body: body,
		Attributes: map[string]string{"MessageGroupId": sqsq.GroupID(thread), "ApproximateReceiveCount": "1"}})
	if err != nil {
		return err
	}
	return rig.sys.Send(context.Background(), m)
}

func (rig *badRig) wait() {
	rig.t.Helper()
	select {
	case <-rig.sys.Idle():
	case <-time.After(20 * time.Second):
		rig.t.Fatalf("the system did not go idle; %d threads active", rig.sys.Active())
	}
}

func (rig *badRig) history(thread string) []runtime.Item {
	rig.t.Helper()
	th, err := rig.store.Load(context.Background(), thread)
	if err != nil {
		rig.t.Fatal(err)
	}
	return th.Own()
}

func (rig *badRig) user(thread, id, text string) {
	rig.t.Helper()
	if err := rig.sys.Send(context.Background(), runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindUser, Text: text}); err != nil {
		rig.t.Fatal(err)
	}
	rig.wait()
}

func kindsOf(items []runtime.Item) string {
	var ks []string
	for _, it := range items {
		ks = append(ks, it.Kind.String())
	}
	return strings.Join(ks, ",")
}

func post(t *testing.T, u, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error
}

// TestBadInputEndToEnd sends every kind of bad input the outside world can
// produce into one running system, each through the door it would really
// come through, while a healthy conversation runs beside them. Each gets a
// clear error naming the problem (or, for a model's bad tool call, an error
// result the model reads and gets past); nothing bad reaches a history; and
// the healthy thread ends exactly as it does when nothing goes wrong.
//
// The package tests cover each door in depth: runtime TestDecodeMessageRejects,
// sqsq TestDecodeRecord, rap TestReceiverRejects and TestLoaderRejectsInvalidToolsetWhole,
// local TestBadInputNeverStopsTheSystem, TestUnknownToolAndReservedName and
// TestResultForUnknownCallIsRejected, dsql TestOCCRetry and TestConflictKinds,
// dedup TestThrottlingIsRetryableError. TestConflictStormOnPostgres and
// TestDynamoDBThrottlingEndToEnd (below) repeat the last two against the
// real stores.
func TestBadInputEndToEnd(t *testing.T) {
	rig := newBadRig(t)
	ctx := context.Background()

	// The healthy conversation comes in through the SQS door.
	body, err := sqsq.EncodeBody(runtime.Message{V: 1, ID: "h1", ThreadID: "healthy", Kind: runtime.KindUser, Text: "where is the parser?"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rig.ingest("sqs-h1", "healthy", body); err != nil {
		t.Fatalf("a valid SQS record was refused: %v", err)
	}

	t.Run("malformed SQS bodies", func(t *testing.T) {
		tests := []struct {
			name, body, field, reason string
		}{
			{"not JSON", `{"v":1,"id":"m1",`, "", "malformed JSON"},
			{"unknown message kind", `{"v":1,"id":"m2","thread_id":"healthy","kind":"shout","text":"HI"}`, "kind", `unknown kind "shout"`},
			{"unknown field", `{"v":1,"id":"m3","thread_id":"healthy","kind":"user","text":"x","txet":"y"}`, "", "unknown field"},
			{"oversize", `{"v":1,"id":"m4","thread_id":"healthy","kind":"user","text":"` + strings.Repeat("x", runtime.MaxMessageBytes+1) + `"}`, "text", "more than the limit"},
			{"invalid UTF-8", "{\"v\":1,\"id\":\"m5\",\"thread_id\":\"healthy\",\"kind\":\"user\",\"text\":\"caf\xe9\"}", "", "not valid UTF-8"},
			{"result without a call", `{"v":1,"id":"m6","thread_id":"healthy","kind":"tool_result","text":"x"}`, "tool_call_id", "missing"},
			{"future version", `{"v":9,"id":"m7","thread_id":"healthy","kind":"user","text":"x"}`, "v", "unsupported version 9"},
		}
		for _, tc := range tests {
			err := rig.ingest("sqs-"+tc.name, "healthy", tc.body)
			var bad *runtime.BadMessageError
			if !errors.As(err, &bad) || !runtime.IsPermanent(err) {
				t.Errorf("%s: err %v, want a permanent *runtime.BadMessageError (to the DLQ, never retried)", tc.name, err)
				continue
			}
			if bad.Field != tc.field || !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), "sqs-"+tc.name) {
				t.Errorf("%s: error %q (field %q) does not name field %q, the problem %q and the SQS message ID", tc.name, err, bad.Field, tc.field, tc.reason)
			}
		}
	})

	t.Run("forged and expired callbacks", func(t *testing.T) {
		// Count only messages for call_x: the healthy thread's own tool may
		// still post its (genuine) callback while this runs.
		before := rig.forged.Load()
		other, _ := rap.NewKeyring(rap.Key{ID: "k1", Secret: []byte(strings.Repeat("f", rap.MinKeyLen))})
		forged, _ := (&rap.Signer{Keys: other, BaseURL: rig.cbURL}).CallbackURL("healthy", "call_x")
		expired, _ := (&rap.Signer{Keys: rig.signer.Keys, BaseURL: rig.cbURL, TTL: time.Minute,
			Now: func() time.Time { return time.Now().Add(-time.Hour) }}).CallbackURL("healthy", "call_x")
		good, _ := rig.signer.CallbackURL("healthy", "call_x")
		u, _ := url.Parse(good)
		q := u.Query()
		q.Set("t", "schema") // the capability was for thread healthy
		u.RawQuery = q.Encode()
		tests := []struct{ name, url, want string }{
			{"forged", forged, "signature does not match"},
			{"expired", expired, "expired"},
			{"moved to another thread", u.String(), "signature does not match"},
		}
		for _, tc := range tests {
			status, msg := post(t, tc.url, `{"type":"tool_result","group_id":"healthy","id":"call_x","text":"pwned"}`)
			if status != http.StatusForbidden || !strings.Contains(msg, tc.want) {
				t.Errorf("%s callback: %d %q, want 403 mentioning %q", tc.name, status, msg, tc.want)
			}
		}
		if n := rig.forged.Load() - before; n != 0 {
			t.Fatalf("%d messages enqueued from forged or expired callbacks", n)
		}
	})

	t.Run("result for an unknown tool call", func(t *testing.T) {
		rig.user("lonely", "l1", "hello")
		before := kindsOf(rig.history("lonely"))
		// Validly signed, but for a call the thread never made: the
		// receiver cannot know, the engine refuses it.
		u, _ := rig.signer.CallbackURL("lonely", "call_never_made")
		if status, msg := post(t, u, `{"type":"tool_result","group_id":"lonely","id":"call_never_made","text":"surprise"}`); status != http.StatusOK {
			t.Fatalf("signed callback refused: %d %s", status, msg)
		}
		rig.wait()
		if after := kindsOf(rig.history("lonely")); after != before {
			t.Fatalf("a result for an unknown call changed the history: %s, was %s", after, before)
		}
		dead, _ := rig.sys.DeadLetters()
		if len(dead) != 1 || !strings.Contains(dead[0].Reason, `field "tool_call_id": no tool call "call_never_made" on thread lonely`) {
			t.Fatalf("dead letters %+v, want the result, naming tool_call_id", dead)
		}
	})

	t.Run("tool arguments failing the schema", func(t *testing.T) {
		before := rig.lookups.Load()
		rig.user("schema", "s1", "look up 5")
		items := rig.history("schema")
		if got := kindsOf(items); got != "user,tool_call,tool_result,assistant" {
			t.Fatalf("history %s", got)
		}
		if r := items[2]; !r.IsError || !strings.Contains(r.Text, "invalid arguments for lookup") || !strings.Contains(r.Text, "/q") {
			t.Fatalf("result %+v, want an error result naming the schema violation at /q", r)
		}
		if rig.lookups.Load() != before {
			t.Fatal("the tool ran with arguments its schema refuses")
		}
	})

	t.Run("model returns garbage tool arguments", func(t *testing.T) {
		before := rig.lookups.Load()
		rig.user("garbage", "g1", "look it up")
		items := rig.history("garbage")
		if got := kindsOf(items); got != "user,tool_call,tool_result,assistant" {
			t.Fatalf("history %s", got)
		}
		if r := items[2]; !r.IsError || !strings.Contains(r.Text, "not a JSON object") {
			t.Fatalf("result %+v, want an error result saying the arguments are not a JSON object", r)
		}
		if rig.lookups.Load() != before {
			t.Fatal("the tool ran with unparseable arguments")
		}
	})

	t.Run("toolset endpoint returning an invalid manifest", func(t *testing.T) {
		set, err := rig.loader.SetFor(ctx, "healthy")
		if err != nil {
			t.Fatal(err)
		}
		probs := set.Problems()
		if len(probs) != 1 || !strings.Contains(probs[0].Error(), rig.broken) || !strings.Contains(probs[0].Error(), "inputSchema") {
			t.Fatalf("problems %v, want one naming the broken server and its inputSchema", probs)
		}
		if _, ok := set.Lookup("summarise"); ok {
			t.Fatal("a tool from the invalid toolset is offered")
		}
		if _, ok := set.Lookup("lookup"); !ok {
			t.Fatal("the valid toolset's tool is missing")
		}
	})

	t.Run("conflict storm", func(t *testing.T) {
		// Shorter than the retries: the slice goes through, exactly once.
		rig.storm.set("stormy", 3)
		rig.user("stormy", "st1", "hold on")
		if got := kindsOf(rig.history("stormy")); got != "user,assistant" {
			t.Fatalf("after a storm of 3 conflicts: history %s, want user,assistant", got)
		}
		// Longer than the retries: the message is dead-lettered with the
		// reason, nothing half-done is left, and the thread takes the next
		// message.
		rig.storm.set("stormy", 5)
		rig.user("stormy", "st2", "and again")
		dead, _ := rig.sys.DeadLetters()
		last := dead[len(dead)-1]
		if last.Message.ID != "st2" || !strings.Contains(last.Reason, "gave up after 5 attempts") || !strings.Contains(last.Reason, "OCC conflicts") {
			t.Fatalf("dead letter %+v, want st2 with the conflict", last)
		}
		rig.user("stormy", "st3", "third time")
		if got := kindsOf(rig.history("stormy")); got != "user,assistant,user,assistant" {
			t.Fatalf("after the storm: history %s, want the first and the third exchange only", got)
		}
	})

	// Nothing else was lost: the healthy conversation is exactly what it
	// is without any of the above.
	rig.wait()
	items := rig.history("healthy")
	if got := kindsOf(items); got != "user,tool_call,tool_result,assistant" {
		t.Fatalf("healthy thread: %s", got)
	}
	if items[2].Text != "found parser in src/parser.go" || items[3].Text != "The parser is in src/parser.go." {
		t.Fatalf("healthy thread: %+v", items)
	}
	dead, _ := rig.sys.DeadLetters()
	var ids []string
	for _, d := range dead {
		ids = append(ids, d.Message.ID)
	}
	if len(ids) != 2 || ids[1] != "st2" {
		t.Fatalf("dead letters %v, want exactly the unknown-call result and st2", ids)
	}
}
