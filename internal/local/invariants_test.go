package local

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

func simWithTool() *model.Sim {
	return &model.Sim{Chunks: 3, Tool: "run_command", ToolArgs: `{"command":"go test ./..."}`}
}

func TestTurnWithAsyncTool(t *testing.T) {
	h := newHarness(t, simWithTool())
	h.send(user("t1", "u1", "run the tests"))
	h.wait()
	got := kinds(h.history("t1"))
	if want := "user,assistant,tool_call,tool_result,assistant"; got != want {
		t.Fatalf("history kinds %s, want %s", got, want)
	}
	if n := len(h.outputs("reply")); n != 1 {
		t.Fatalf("%d replies, want 1", n)
	}
}

// Invariant 3: a redelivered message is recognised and skipped.
func TestRedeliveryIsExactlyOnce(t *testing.T) {
	counting := &runtimetest.CountingModel{Model: simWithTool()}
	h := newHarness(t, counting)
	h.send(user("t1", "u1", "run the tests"))
	h.wait()
	before := h.history("t1")
	calls := h.run.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d dispatches, want 1", len(calls))
	}
	// Redeliver everything: the user message and the tool's result, twice.
	res := result("t1", runtime.DeriveID("res_", "t1", calls[0].CallID), calls[0].CallID, "ok again")
	for range 2 {
		h.send(user("t1", "u1", "run the tests"), res)
		h.wait()
	}
	mustEqualTranscripts(t, "after redelivery", h.history("t1"), before)
	if n := counting.Count("t1"); n != 2 {
		t.Fatalf("model ran %d completions, want 2", n)
	}
	if n := len(h.outputs("reply")); n != 1 {
		t.Fatalf("%d replies after redelivery, want 1", n)
	}
}

// lossyDedup forgets every mark: as if the slice crashed between the history
// commit and the dedup write.
type lossyDedup struct{ marks atomic.Int32 }

func (d *lossyDedup) Seen(ctx context.Context, thread string, ids []string) ([]bool, error) {
	return make([]bool, len(ids)), nil
}
func (d *lossyDedup) Mark(ctx context.Context, thread string, ids []string) error {
	d.marks.Add(1)
	return errors.New("dedup store unavailable")
}

func TestCrashBeforeDedupMarkDoesNotDuplicate(t *testing.T) {
	d := &lossyDedup{}
	h := newHarness(t, simWithTool(), func(c *Config) { c.Dedup = d })
	h.send(user("t1", "u1", "go"))
	h.wait()
	before := h.history("t1")
	h.send(user("t1", "u1", "go"))
	h.wait()
	mustEqualTranscripts(t, "after redelivery without dedup record", h.history("t1"), before)
	if d.marks.Load() == 0 {
		t.Fatal("the engine never tried to write the dedup record")
	}
}

// Invariant 3: everything the runtime mints is derived, not random.
func TestDeterministicIDs(t *testing.T) {
	var runs [2][]runtime.Item
	for i := range runs {
		h := newHarness(t, simWithTool())
		h.send(user("t1", "u1", "first"))
		h.wait()
		h.send(user("t1", "u2", "second"))
		h.wait()
		runs[i] = h.history("t1")
	}
	mustEqualTranscripts(t, "two identical runs", runs[1], runs[0])
}

// Invariant 4: a stream error mid-turn leaves nothing; the completion is
// retried and only whole turns reach history.
func TestStreamErrorLeavesNoHalfTurn(t *testing.T) {
	var attempts sync.Map
	sim := &model.Sim{Chunks: 4, Tool: "run_command", ToolArgs: `{}`,
		Chunk: func(req *runtime.CompletionRequest, i int) string { return "chunk. " },
		Fail: func(req *runtime.CompletionRequest, chunk int) bool {
			if chunk != 2 {
				return false
			}
			n, _ := attempts.LoadOrStore(req.ID(), new(atomic.Int32))
			return n.(*atomic.Int32).Add(1) == 1 // the first attempt of every completion breaks
		}}
	h := newHarness(t, sim)
	h.send(user("t1", "u1", "go"))
	h.wait()
	items := h.history("t1")
	if got := kinds(items); got != "user,assistant,tool_call,tool_result,assistant" {
		t.Fatalf("kinds %s", got)
	}
	for _, it := range items {
		if it.Kind == runtime.ItemAssistant && it.Text != strings.Repeat("chunk. ", 4) {
			t.Fatalf("assistant text %q is not one whole turn", it.Text)
		}
	}
}

func TestStreamThatNeverRecoversCommitsNothing(t *testing.T) {
	sim := &model.Sim{Chunks: 4, Fail: func(*runtime.CompletionRequest, int) bool { return true }}
	h := newHarness(t, sim, func(c *Config) { c.SliceAttempts = 2 })
	h.send(user("t1", "u1", "go"))
	h.wait()
	if items := h.history("t1"); len(items) != 0 {
		t.Fatalf("history after failed completions: %s", kinds(items))
	}
	dead, _ := h.sys.DeadLetters()
	if len(dead) != 1 || dead[0].Message.ID != "u1" || !strings.Contains(dead[0].Reason, "injected stream error") {
		t.Fatalf("dead letters %+v, want u1 with the stream error", dead)
	}
}

// Invariant 5: the call is in history, pending dispatch, before it is sent.
func TestRecordBeforeDispatch(t *testing.T) {
	h := newHarness(t, &model.Sim{Chunks: 1, Tool: "work", ToolArgs: `{"n":1}`})
	checked := make(chan error, 1)
	h.work.OnDispatch(func(inv runtime.Invocation) {
		th, err := h.store.Load(context.Background(), inv.ThreadID)
		switch {
		case err != nil:
		case th.State.Pending == nil || th.State.Pending.ID != inv.CallID:
			err = errors.New("call is not the committed pending call")
		case th.State.Pending.Dispatched:
			err = errors.New("call marked dispatched before it was sent")
		case th.Items[len(th.Items)-1].CallID != inv.CallID:
			err = errors.New("call item not in history")
		}
		checked <- err
	})
	h.send(user("t1", "u1", "go"))
	h.wait()
	if err := <-checked; err != nil {
		t.Fatal(err)
	}
	th, _ := h.store.Load(context.Background(), "t1")
	if th.State.Pending == nil || !th.State.Pending.Dispatched {
		t.Fatalf("after dispatch the call is not marked dispatched: %+v", th.State.Pending)
	}
}

// Invariant 5: a crash after the commit and before the send is repaired by
// the next slice, with the same call ID.
func TestPendingDispatchIsRecovered(t *testing.T) {
	h := newHarness(t, simWithTool())
	h.run.FailNext = 1
	h.send(user("t1", "u1", "go"))
	h.wait()
	calls := h.run.Calls()
	if len(calls) != 2 || calls[0].CallID != calls[1].CallID {
		t.Fatalf("dispatches %+v, want the same call twice", calls)
	}
	if got := kinds(h.history("t1")); got != "user,assistant,tool_call,tool_result,assistant" {
		t.Fatalf("kinds %s", got)
	}
}

// Invariant 6: an interrupting user message closes the pending call; the
// late result comes in as a synthetic event tied to the original call.
func TestInterruptionAndLateResult(t *testing.T) {
	script := &model.Script{Default: []model.Step{
		{Text: "Starting the build.", ToolCall: &model.StepCall{Name: "work", Args: []byte(`{"job":"build"}`)}},
		{Text: "Understood, stopping."},
		{Text: "The build finished after all."},
	}}
	h := newHarness(t, model.NewScripted(script))
	h.send(user("t1", "u1", "build it"))
	h.wait()
	call := h.work.Calls()[0].CallID
	h.send(user("t1", "u2", "never mind"))
	h.wait()
	h.send(result("t1", "r1", call, "build ok"))
	h.wait()
	items := h.history("t1")
	if got, want := kinds(items), "user,assistant,tool_call,tool_result,user,assistant,tool_call,tool_result,assistant"; got != want {
		t.Fatalf("kinds %s, want %s\n%s", got, want, runtimetest.Transcript(items))
	}
	if !items[3].IsError || !strings.HasPrefix(items[3].Text, "interrupted") || items[3].CallID != call {
		t.Fatalf("interruption result %+v", items[3])
	}
	inj := items[6]
	if inj.Name != runtime.InjectedToolName || !strings.Contains(inj.Args, `"original_tool_call_id":"`+call+`"`) ||
		!strings.Contains(inj.Args, `"original_tool_name":"work"`) || !strings.Contains(inj.Args, `"original_args":{"job":"build"}`) {
		t.Fatalf("synthetic event call %+v", inj)
	}
	if items[7].Text != "build ok" || items[7].Input != "r1" {
		t.Fatalf("synthetic event result %+v", items[7])
	}
}

// Invariant 6: unknown tools and the reserved name get error results and the
// model goes on in the same slice.
func TestUnknownToolAndReservedName(t *testing.T) {
	script := &model.Script{Default: []model.Step{
		{ToolCall: &model.StepCall{Name: "no_such_tool", Args: []byte(`{}`)}},
		{ToolCall: &model.StepCall{Name: runtime.InjectedToolName, Args: []byte(`{}`)}},
		{ToolCall: &model.StepCall{Name: "echo", RawArgs: `not json`}},
		{Text: "done"},
	}}
	h := newHarness(t, model.NewScripted(script))
	h.send(user("t1", "u1", "go"))
	h.wait()
	items := h.history("t1")
	if got, want := kinds(items), "user,tool_call,tool_result,tool_call,tool_result,tool_call,tool_result,assistant"; got != want {
		t.Fatalf("kinds %s, want %s", got, want)
	}
	for i, want := range map[int]string{2: "unknown tool", 4: "reserved", 6: "not a JSON object"} {
		if !items[i].IsError || !strings.Contains(items[i].Text, want) {
			t.Fatalf("item %d = %+v, want an error result mentioning %q", i, items[i], want)
		}
	}
	if h.echo != 0 {
		t.Fatal("echo ran with malformed arguments")
	}
}

func TestResultForUnknownCallIsRejected(t *testing.T) {
	h := newHarness(t, simWithTool())
	h.send(user("t1", "u1", "go"))
	h.wait()
	before := h.history("t1")
	h.send(result("t1", "r-bogus", "call_nope", "hi"))
	h.wait()
	mustEqualTranscripts(t, "after bogus result", h.history("t1"), before)
	dead, _ := h.sys.DeadLetters()
	if len(dead) != 1 || dead[0].Message.ID != "r-bogus" || !strings.Contains(dead[0].Reason, "tool_call_id") {
		t.Fatalf("dead letters %+v", dead)
	}
}

// Invariant 7: a slice that reaches its completion cap commits and continues
// in a new slice; no turn is lost.
func TestCapEnqueuesContinuation(t *testing.T) {
	var steps []model.Step
	for range 5 {
		steps = append(steps, model.Step{ToolCall: &model.StepCall{Name: "echo", Args: []byte(`{"x":1}`)}})
	}
	steps = append(steps, model.Step{Text: "all done"})
	h := newHarness(t, model.NewScripted(&model.Script{Default: steps}), func(c *Config) { c.Limits.MaxCompletions = 2 })
	h.send(user("t1", "u1", "loop"))
	h.wait()
	items := h.history("t1")
	markers := 0
	for _, it := range items {
		if it.Kind == runtime.ItemMarker {
			markers++
		}
	}
	if markers != 2 || items[len(items)-1].Text != "all done" || h.echo != 5 {
		t.Fatalf("markers %d, echo %d, history %s", markers, h.echo, kinds(items))
	}
}

// Invariant 6 and the turn buffer: only the first tool call of a completion
// runs; nothing streamed after it is committed.
func TestOnlyFirstToolCallRuns(t *testing.T) {
	script := &model.Script{Default: []model.Step{
		{Text: "two calls", ToolCall: &model.StepCall{Name: "work", Args: []byte(`{}`)},
			ExtraCalls: []model.StepCall{{Name: "run_command", Args: []byte(`{}`)}}},
	}}
	h := newHarness(t, model.NewScripted(script))
	h.send(user("t1", "u1", "go"))
	h.wait()
	if len(h.work.Calls()) != 1 || len(h.run.Calls()) != 0 {
		t.Fatalf("work %d calls, run_command %d calls", len(h.work.Calls()), len(h.run.Calls()))
	}
	if got := kinds(h.history("t1")); got != "user,assistant,tool_call" {
		t.Fatalf("kinds %s", got)
	}
}

func TestPermanentModelErrorIsNotRetried(t *testing.T) {
	counting := &runtimetest.CountingModel{Model: model.NewScripted(&model.Script{Default: []model.Step{{Permanent: "access denied"}}})}
	h := newHarness(t, counting)
	h.send(user("t1", "u1", "go"))
	h.wait()
	if n := counting.Count("t1"); n != 1 {
		t.Fatalf("model asked %d times, want 1", n)
	}
	errs := h.outputs("error")
	if len(errs) != 1 || !strings.Contains(errs[0].Text, "access denied") {
		t.Fatalf("error outputs %+v", errs)
	}
	hist := h.history("t1")
	if got := kinds(hist); got != "user,marker" || !runtime.IsFailure(&hist[1]) || !strings.Contains(hist[1].Text, "access denied") {
		t.Fatalf("history %s %+v, want the user's message and the failure", kinds(hist), hist)
	}
	if dead, _ := h.sys.DeadLetters(); len(dead) != 0 {
		t.Fatalf("dead letters %+v", dead)
	}
}

// panicky panics for one thread only.
type panicky struct{ runtime.Model }

func (p panicky) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	if req.ThreadID == "bad" {
		panic("model bug")
	}
	return p.Model.Complete(ctx, req, w)
}

func TestBadInputNeverStopsTheSystem(t *testing.T) {
	h := newHarness(t, panicky{simWithTool()}, func(c *Config) { c.SliceAttempts = 2 })
	cases := []struct {
		name  string
		msg   runtime.Message
		field string
	}{
		{"missing id", runtime.Message{ThreadID: "t1", Kind: runtime.KindUser, Text: "x"}, `"id"`},
		{"missing thread", runtime.Message{ID: "m", Kind: runtime.KindUser, Text: "x"}, `"thread_id"`},
		{"unknown kind", runtime.Message{ID: "m", ThreadID: "t1", Kind: "shout", Text: "x"}, `"kind"`},
		{"result without call", runtime.Message{ID: "m", ThreadID: "t1", Kind: runtime.KindToolResult}, `"tool_call_id"`},
		{"invalid utf-8", runtime.Message{ID: "m", ThreadID: "t1", Kind: runtime.KindUser, Text: "bad \xff"}, `"text"`},
		{"oversize", runtime.Message{ID: "m", ThreadID: "t1", Kind: runtime.KindUser, Text: strings.Repeat("x", runtime.MaxMessageBytes+1)}, `"text"`},
		{"bad version", runtime.Message{V: 9, ID: "m", ThreadID: "t1", Kind: runtime.KindUser, Text: "x"}, `"v"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := h.sys.Send(context.Background(), tc.msg)
			var bad *runtime.BadMessageError
			if !errors.As(err, &bad) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Send(%s) = %v, want a BadMessageError naming %s", tc.name, err, tc.field)
			}
		})
	}
	// A panicking slice is recovered, retried, dead-lettered; others go on.
	h.send(user("bad", "b1", "boom"), user("t2", "g1", "fine"))
	h.wait()
	dead, _ := h.sys.DeadLetters()
	if len(dead) != 1 || dead[0].Message.ID != "b1" || !strings.Contains(dead[0].Reason, "panicked") {
		t.Fatalf("dead letters %+v", dead)
	}
	if got := kinds(h.history("t2")); got != "user,assistant,tool_call,tool_result,assistant" {
		t.Fatalf("healthy thread: %s", got)
	}
}

func TestFrozenThreadWakesWithExactHistory(t *testing.T) {
	h := newHarness(t, simWithTool())
	h.send(user("t1", "u1", "one"))
	h.wait()
	before := h.history("t1")
	if n := h.store.FreezeIdle(-1); n != 1 {
		t.Fatalf("froze %d threads, want 1", n)
	}
	if st := h.store.Stats(); st.Hot != 0 || st.ColdBytes == 0 {
		t.Fatalf("after freeze: %+v", st)
	}
	mustEqualTranscripts(t, "frozen", h.history("t1"), before)
	h.send(user("t1", "u2", "two"))
	h.wait()
	if got := kinds(h.history("t1")); got != "user,assistant,tool_call,tool_result,assistant,user,assistant,tool_call,tool_result,assistant" {
		t.Fatalf("after waking: %s", got)
	}
}

func fmtID(p string, i int) string { return p + "-" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i) }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

var _ = time.Second

// Dead letters are kept once per message ID, however often the message is
// refused, and each is published as an "error" output event of its thread.
func TestDeadLettersDeduplicatedAndPublished(t *testing.T) {
	h := newHarness(t, &model.Sim{Chunks: 1})
	// A result for a call the thread never made is refused for good; the
	// tool retries it twice more.
	bad := runtime.Message{V: 1, ID: "res_x", ThreadID: "t1", Kind: runtime.KindToolResult, ToolCallID: "call_none", Text: "?"}
	for range 3 {
		h.send(bad)
		h.wait()
	}
	dead, n := h.sys.DeadLetters()
	if len(dead) != 1 || n != 1 || dead[0].Message.ID != "res_x" {
		t.Fatalf("dead letters %+v (%d in all), want res_x once", dead, n)
	}
	errs := h.outputs("error")
	if len(errs) != 1 || errs[0].ThreadID != "t1" || !strings.Contains(errs[0].Text, "res_x") || !strings.Contains(errs[0].Text, "call_none") {
		t.Fatalf("error events %+v, want one for res_x naming the reason", errs)
	}
}
