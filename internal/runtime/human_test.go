package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

// askModel calls the asynchronous "ask" tool for a user message and
// answers once the result is in.
type askModel struct{}

func (askModel) Complete(_ context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	for i := len(req.History) - 1; i >= 0; i-- {
		switch req.History[i].Kind {
		case runtime.ItemMarker:
			continue
		case runtime.ItemUser:
			w.ToolCall("", "ask", `{}`)
			return nil
		}
		break
	}
	w.Text("done")
	return nil
}

// TestHumanStateIsHistory: a user_choice notice, a view, an answer and a
// result's display segment become marker items in the commits of their
// messages (nothing for the model), the pending choice and the latest
// views are read back from history alone, and items carry the engine's
// clock (a result its arrival). The output hears of each view and notice
// (a deployment's output queue is all its readers see).
func TestHumanStateIsHistory(t *testing.T) {
	store := local.NewHistoryStore()
	tb := runtime.NewToolbox()
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "ask"}, Async: &runtimetest.RecordingTool{}})
	clock := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	e := &runtime.Engine{History: store, Queue: &sink{}, Model: askModel{}, Tools: tb,
		Limits: runtime.Limits{RetryBase: time.Millisecond}, Now: func() time.Time { return clock }}
	var outputs []runtime.OutputEvent
	e.Output = local.OutputFunc(func(_ context.Context, ev runtime.OutputEvent) error {
		outputs = append(outputs, ev)
		return nil
	})
	ctx := context.Background()
	run := func(msgs ...runtime.Message) *runtime.Thread {
		t.Helper()
		for i := range msgs {
			msgs[i].V, msgs[i].ThreadID = 1, "h"
		}
		if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "h", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
		th, err := store.Load(ctx, "h")
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	th := run(runtime.Message{ID: "u1", Kind: runtime.KindUser, Text: "go"})
	call := th.State.Pending.ID
	if th.Items[0].At != runtime.StampOf(clock) {
		t.Fatalf("user item at %v, want the engine's clock", th.Items[0].At)
	}

	clock = clock.Add(time.Minute)
	th = run(runtime.Message{ID: "v1", Kind: runtime.KindView, ToolCallID: call, Text: `{"view_type":"progress","content":{"n":1}}`},
		runtime.Message{ID: "v2", Kind: runtime.KindView, ToolCallID: call, Text: `{"view_type":"progress","content":{"n":2}}`},
		runtime.Message{ID: "c1", Kind: runtime.KindNotice, ToolCallID: call, Text: "choose", Choice: `{"prompt":"Which?","choices":["a","b"]}`})
	if args, ok := runtime.PendingChoice(th.Items, call); !ok || args != `{"prompt":"Which?","choices":["a","b"]}` {
		t.Fatalf("pending choice %q %v", args, ok)
	}
	if v := runtime.LatestViews(th.Items); len(v) != 1 || v["progress"].Args != `{"view_type":"progress","content":{"n":2}}` {
		t.Fatalf("latest views %+v", v)
	}
	if th.State.Pending == nil {
		t.Fatal("a view or a notice closed the pending call")
	}
	var told []string
	for _, ev := range outputs {
		told = append(told, ev.Kind+" "+ev.Text)
	}
	if want := []string{`view {"view_type":"progress","content":{"n":1}}`, `view {"view_type":"progress","content":{"n":2}}`,
		"notice choose"}; strings.Join(told, "|") != strings.Join(want, "|") {
		t.Fatalf("output events %q, want %q", told, want)
	}

	th = run(runtime.Message{ID: "a1", Kind: runtime.KindAnswer, ToolCallID: call, Text: "chose b", Choice: `{"id":"x","selected":1}`})
	if _, ok := runtime.PendingChoice(th.Items, call); ok {
		t.Fatal("the choice is still pending after its answer")
	}

	arrived := runtime.StampOf(clock.Add(10 * time.Second))
	clock = clock.Add(time.Minute)
	th = run(runtime.Message{ID: "r1", Kind: runtime.KindToolResult, ToolCallID: call, Text: "b", At: arrived,
		Display: `{"type":"text","text":"b it is"}`})
	n := len(th.Items)
	disp, res, reply := th.Items[n-3], th.Items[n-2], th.Items[n-1]
	if disp.Kind != runtime.ItemMarker || disp.Name != runtime.DisplayMarkerName || disp.CallID != call || disp.Args != `{"type":"text","text":"b it is"}` {
		t.Fatalf("before the result: %+v", disp)
	}
	if res.Kind != runtime.ItemToolResult || res.At != arrived || disp.At != arrived {
		t.Fatalf("result %+v (display at %v), want it at its arrival %v", res, disp.At, arrived)
	}
	if reply.Text != "done" || reply.At != runtime.StampOf(clock) {
		t.Fatalf("reply %+v, want the commit's time", reply)
	}
}

// TestHumanFieldsAreChecked: the fields people's state travels in are
// validated, each error naming its field.
func TestHumanFieldsAreChecked(t *testing.T) {
	for _, c := range []struct {
		name  string
		m     runtime.Message
		field string
	}{
		{"choice not an object", runtime.Message{Kind: runtime.KindNotice, ToolCallID: "c", Choice: `[1]`}, "choice"},
		{"choice on a user message", runtime.Message{Kind: runtime.KindUser, Text: "x", Choice: `{}`}, "choice"},
		{"answer without selected", runtime.Message{Kind: runtime.KindAnswer, ToolCallID: "c", Choice: `{"id":"x"}`}, "choice"},
		{"answer without a call", runtime.Message{Kind: runtime.KindAnswer, Choice: `{"selected":1}`}, "tool_call_id"},
		{"display on an event", runtime.Message{Kind: runtime.KindEvent, ToolCallID: "c", Display: `{}`}, "display"},
		{"display not an object", runtime.Message{Kind: runtime.KindToolResult, ToolCallID: "c", Display: `"x"`}, "display"},
		{"view without a type", runtime.Message{Kind: runtime.KindView, Text: `{"content":{}}`}, "text"},
		{"view not an object", runtime.Message{Kind: runtime.KindView, Text: `hello`}, "text"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.m.V, c.m.ID, c.m.ThreadID = 1, "m", "t"
			var bm *runtime.BadMessageError
			if err := c.m.Validate(); !errors.As(err, &bm) || bm.Field != c.field {
				t.Fatalf("Validate = %v, want an error naming %s", err, c.field)
			}
		})
	}
}

// LatestViews takes the latest view marker of each view type, the first
// item included (a thread's items as a caller passes them may start with
// one: a slice of a longer history).
func TestLatestViewsReadsEveryItem(t *testing.T) {
	t.Parallel()
	items := []runtime.Item{
		{Kind: runtime.ItemMarker, Name: runtime.ViewMarkerName, Args: `{"view_type":"plan","v":1}`},
		{Kind: runtime.ItemMarker, Name: runtime.ViewMarkerName, Args: `{"view_type":"diff","v":1}`},
		{Kind: runtime.ItemAssistant, Text: "ok"},
		{Kind: runtime.ItemMarker, Name: runtime.ViewMarkerName, Args: `{"view_type":"diff","v":2}`},
	}
	got := runtime.LatestViews(items)
	if len(got) != 2 || got["plan"] != &items[0] || got["diff"] != &items[3] {
		t.Fatalf("LatestViews = %v, want plan from item 0 and diff from item 3", got)
	}
}
