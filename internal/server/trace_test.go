package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentslice/agentslice/internal/otelx/otelxtest"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// tracedInvocation is an invocation a tool server received, with the
// traceparent header of its POST.
type tracedInvocation struct {
	rap.Invocation
	Traceparent string
}

// tracedHoldingTool is holdingTool that also records each invocation's
// traceparent header.
func tracedHoldingTool(t *testing.T) (string, <-chan tracedInvocation) {
	t.Helper()
	got := make(chan tracedInvocation, 16)
	return holdingServer(t, func(inv rap.Invocation, r *http.Request) {
		got <- tracedInvocation{inv, r.Header.Get(rap.TraceparentHeader)}
	}), got
}

// sliceSpans returns the slice spans of thread, in start order.
func sliceSpans(spans tracetest.SpanStubs, thread string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range otelxtest.Find(spans, runtime.SpanSlice) {
		if otelxtest.Attr(s, runtime.AttrThread) == thread {
			out = append(out, s)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].StartTime.Before(out[j-1].StartTime); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// replied reports whether a slice span of thread ended with a reply.
func replied(spans tracetest.SpanStubs, thread string) bool {
	for _, s := range sliceSpans(spans, thread) {
		if otelxtest.Attr(s, runtime.AttrOutcome) == "replied" {
			return true
		}
	}
	return false
}

// childNames lists the names of the direct children of span p.
func childNames(spans tracetest.SpanStubs, p tracetest.SpanStub) string {
	var names []string
	for _, s := range spans {
		if s.Parent.SpanID() == p.SpanContext.SpanID() {
			names = append(names, s.Name)
		}
	}
	return strings.Join(names, ",")
}

// TestTraceSurvivesRestart: one user turn whose tool call's callback
// arrives after serve restarted on its disk store is one trace. The tool
// gets the dispatch span's traceparent as a header, the callback URL
// carries it signed, and the slice the result wakes in the second process
// is a child of the first process's dispatch span; so is the slice of the
// restart's liveness check, whose trace context the pending call's record
// kept. The span tree printed
// here is the one in docs/observability.md.
func TestTraceSurvivesRestart(t *testing.T) {
	t.Parallel()
	rec := otelxtest.New()
	base, invocations := tracedHoldingTool(t)
	cfg := Config{Data: t.TempDir(), Script: testdata(t, "hold_script.json"), ToolServers: []string{base},
		CallbackKeys: "k1:c2FtZS1rZXlzLWFjcm9zcy1ib3RoLWNvbnZlcnNhdGlvbnMtIQ"}
	opts := Options{Tracer: rec.Tracer()}
	const thread = "thr_traced"

	first := startServerOpts(t, cfg, opts)
	postMessage(t, first, thread, `{"text":"start the job","id":"m1"}`)
	inv := nextInvocation2(t, invocations)
	if !rec.WaitSlices(thread, 1, timeout) {
		t.Fatal("the first slice's span never ended")
	}
	waitIdle(t, first)
	first.Stop()

	u, err := url.Parse(inv.CallbackURL)
	if err != nil {
		t.Fatal(err)
	}
	if tp := u.Query().Get("tp"); tp == "" || tp != inv.Traceparent {
		t.Fatalf("callback URL's tp %q, traceparent header %q: want the same, set", tp, inv.Traceparent)
	}

	second := startServerOpts(t, cfg, opts)
	if code := postCallback(t, second, inv.CallbackURL, thread, inv.ID, "job finished"); code != http.StatusOK {
		t.Fatalf("callback after the restart answered %d", code)
	}
	// The restart's liveness recheck runs slices of the thread too: wait
	// for the one that folds the result and replies. (The count is read
	// before the spans: a slice span is exported before it is counted.)
	for {
		n := rec.Ended(thread)
		if replied(rec.Spans(), thread) {
			break
		}
		if !rec.WaitSlices(thread, n+1, timeout) {
			t.Fatal("the resumed slice's span never ended")
		}
	}
	waitIdle(t, second)
	if th := getThread(t, second, thread); th.Items[len(th.Items)-1].Text != "The tool answered." {
		t.Fatalf("thread after the callback: %s", kinds(th.Items))
	}

	// The restart sends the waiting thread a liveness check
	// (runtime.Engine.RecheckThread), which the pending call's record
	// carries the dispatch's trace context into: its slice joins the turn
	// too. Wait for it (the first slice, the check's, the resumed one).
	if !rec.WaitSlices(thread, 3, timeout) {
		t.Fatalf("%d slices of the thread ended, want the first, the liveness check's and the resumed one:\n%s", rec.Ended(thread), otelxtest.Tree(rec.Spans()))
	}
	all := rec.Spans()
	var turn tracetest.SpanStubs
	first0 := sliceSpans(all, thread)[0]
	for _, s := range all {
		if s.SpanContext.TraceID() == first0.SpanContext.TraceID() {
			turn = append(turn, s)
		}
	}
	spans := turn
	t.Logf("span tree of one hibernating turn:\n%s", otelxtest.Tree(spans))
	for _, s := range sliceSpans(all, thread) {
		if s.SpanContext.TraceID() != first0.SpanContext.TraceID() {
			t.Fatalf("a slice of the thread started a trace of its own (outcome %q):\n%s", otelxtest.Attr(s, runtime.AttrOutcome), otelxtest.Tree(all))
		}
	}
	disp := otelxtest.Find(spans, runtime.SpanDispatch)
	if len(disp) != 1 || otelxtest.Attr(disp[0], runtime.AttrGenAIToolName) != "hold" {
		t.Fatalf("dispatch spans %d, want one of hold:\n%s", len(disp), otelxtest.Tree(spans))
	}
	if got := "00-" + disp[0].SpanContext.TraceID().String() + "-" + disp[0].SpanContext.SpanID().String() + "-01"; got != inv.Traceparent {
		t.Fatalf("the tool got traceparent %q, the dispatch span is %s", inv.Traceparent, got)
	}
	// After the first: the check's slice and the resumed one, both
	// children of the dispatch span.
	var ss tracetest.SpanStubs
	checks := 0
	for i, s := range sliceSpans(spans, thread) {
		switch {
		case i == 0:
			ss = append(ss, s)
		case s.Parent.SpanID() != disp[0].SpanContext.SpanID():
			t.Fatalf("slice %d's parent is %s, want the dispatch span %s:\n%s", i, s.Parent.SpanID(), disp[0].SpanContext.SpanID(), otelxtest.Tree(spans))
		case otelxtest.Attr(s, runtime.AttrOutcome) == "replied":
			ss = append(ss, s)
		default:
			checks++
		}
	}
	if len(ss) != 2 || checks == 0 {
		t.Fatalf("the turn's trace holds %d slices that replied or came first and %d liveness checks; want 2 and at least 1:\n%s", len(ss), checks, otelxtest.Tree(spans))
	}
	if got := childNames(spans, ss[0]); got != "load,chat,commit,send,commit" {
		t.Errorf("first slice's phases: %s", got)
	}
	if got := childNames(spans, ss[1]); got != "load,chat,commit,send,commit" {
		t.Errorf("resumed slice's phases: %s", got)
	}
	chats := otelxtest.Find(spans, runtime.SpanCompletion)
	if len(chats) != 2 {
		t.Fatalf("%d completion spans, want 2", len(chats))
	}
	for i, want := range []string{`["tool_calls"]`, `["stop"]`} {
		c := chats[i]
		if otelxtest.Attr(c, runtime.AttrGenAIOperation) != "chat" || otelxtest.Attr(c, runtime.AttrGenAIModel) == "" ||
			otelxtest.Attr(c, runtime.AttrGenAIFinish) != want || otelxtest.Attr(c, runtime.AttrGenAIInputTokens) == "" {
			t.Errorf("completion %d attributes: %v", i, c.Attributes)
		}
	}
	if o := otelxtest.Attr(ss[0], runtime.AttrOutcome); o != "dispatched" {
		t.Errorf("first slice outcome %q", o)
	}
	if o := otelxtest.Attr(ss[1], runtime.AttrOutcome); o != "replied" {
		t.Errorf("resumed slice outcome %q", o)
	}
}

func nextInvocation2(t *testing.T, got <-chan tracedInvocation) tracedInvocation {
	t.Helper()
	select {
	case inv := <-got:
		return inv
	case <-timeoutC():
		t.Fatal("no invocation reached the tool")
		return tracedInvocation{}
	}
}

// TestTraceFollowsSleepAndChild: a sleep's wake-up (a timer) and a child's
// report keep the turn in one trace: the slice the wake-up starts is a
// child of the sleep's dispatch span, the child's first slice a child of
// the parent's send span (its start message), and the parent's slice that
// folds the report a child of the child's send span.
func TestTraceFollowsSleepAndChild(t *testing.T) {
	t.Parallel()
	rec := otelxtest.New()
	srv := startServerOpts(t, Config{Script: testdata(t, "trace_tree_script.json")}, Options{Tracer: rec.Tracer()})
	const thread = "thr_tree"
	postMessage(t, srv, thread, `{"text":"go","id":"m1"}`)
	// The turn is the parent's three slices: the message; the wake-up,
	// which spawns; the report, answered "Noted.".
	if !rec.WaitSlices(thread, 3, timeout) {
		t.Fatalf("the parent's last slice never ended:\n%s", otelxtest.Tree(rec.Spans()))
	}
	if th := getThread(t, srv, thread); len(th.Items) == 0 || th.Items[len(th.Items)-1].Text != "Noted." {
		t.Fatalf("the parent's history: %s", kinds(th.Items))
	}
	spans := rec.Spans()
	t.Logf("span tree:\n%s", otelxtest.Tree(spans))
	parent := sliceSpans(spans, thread)
	if len(parent) != 3 {
		t.Fatalf("%d slices of the parent, want 3 (the message; the wake-up, which spawns; the report)", len(parent))
	}
	for _, s := range otelxtest.Find(spans, runtime.SpanSlice) {
		if s.SpanContext.TraceID() != parent[0].SpanContext.TraceID() {
			t.Fatalf("slice of %s is in trace %s, the turn in %s:\n%s", otelxtest.Attr(s, runtime.AttrThread),
				s.SpanContext.TraceID(), parent[0].SpanContext.TraceID(), otelxtest.Tree(spans))
		}
	}
	// The slice woken by the timer hangs under the sleep's dispatch.
	woken := parent[1]
	p, ok := otelxtest.ByID(spans, woken.Parent.SpanID())
	if !ok || p.Name != runtime.SpanDispatch || otelxtest.Attr(p, runtime.AttrGenAIToolName) != "sleep" {
		t.Fatalf("the woken slice's parent is %q (%s), want the sleep's dispatch:\n%s", p.Name, otelxtest.Attr(p, runtime.AttrGenAIToolName), otelxtest.Tree(spans))
	}
	// The child's slices and the report.
	var child tracetest.SpanStubs
	for _, s := range otelxtest.Find(spans, runtime.SpanSlice) {
		if th := otelxtest.Attr(s, runtime.AttrThread); th != thread {
			child = append(child, s)
		}
	}
	if len(child) == 0 {
		t.Fatalf("no slice of the child:\n%s", otelxtest.Tree(spans))
	}
	childThread := otelxtest.Attr(child[0], runtime.AttrThread)
	cs := sliceSpans(spans, childThread)
	if from, ok := sliceOfParent(spans, cs[0]); !ok || otelxtest.Attr(from, runtime.AttrThread) != thread {
		t.Fatalf("the child's first slice does not hang under a slice of the parent:\n%s", otelxtest.Tree(spans))
	}
	last := parent[len(parent)-1]
	if from, ok := sliceOfParent(spans, last); !ok || otelxtest.Attr(from, runtime.AttrThread) != childThread {
		t.Fatalf("the parent's slice that folds the report does not hang under a slice of the child %s:\n%s", childThread, otelxtest.Tree(spans))
	}
}

// sliceOfParent is the slice span that the span s's parent belongs to.
func sliceOfParent(spans tracetest.SpanStubs, s tracetest.SpanStub) (tracetest.SpanStub, bool) {
	p, ok := otelxtest.ByID(spans, s.Parent.SpanID())
	if !ok {
		return p, false
	}
	return otelxtest.SliceOf(spans, p)
}

// A user message POSTed with a traceparent header starts a turn that
// continues the caller's trace; an invalid header is ignored.
func TestPostMessageContinuesTheCallersTrace(t *testing.T) {
	t.Parallel()
	rec := otelxtest.New()
	srv := startServerOpts(t, Config{Script: testdata(t, "hello_script.json")}, Options{Tracer: rec.Tracer()})
	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for thread, tp := range map[string]string{"thr_caller": caller, "thr_bad_header": "garbage"} {
		req, err := http.NewRequest("POST", srv.URL()+"/threads/"+thread+"/messages", strings.NewReader(`{"text":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", tp)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: POST answered %d", thread, resp.StatusCode)
		}
		if !rec.WaitSlices(thread, 1, timeout) {
			t.Fatalf("%s: no slice span ended", thread)
		}
		s := sliceSpans(rec.Spans(), thread)[0]
		continues := s.SpanContext.TraceID().String() == caller[3:35] && s.Parent.SpanID().String() == caller[36:52]
		if continues != (tp == caller) {
			t.Fatalf("%s (traceparent %q): slice in trace %s under %s", thread, tp, s.SpanContext.TraceID(), s.Parent.SpanID())
		}
	}
}
