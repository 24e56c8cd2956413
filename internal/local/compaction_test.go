package local

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// compactions counts the summaries in thread's own history, and tells
// whether a compaction is at work.
func compactions(t *testing.T, h *harness, thread string) int {
	t.Helper()
	th, err := h.store.Load(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, it := range th.Own() {
		if it.Kind == runtime.ItemSummary {
			n++
		}
	}
	if th.State.Compacting != "" {
		n++
	}
	return n
}

// A summary that does not shrink the context (here the model reports the
// same usage after it) stops compaction with an error item and an error
// event, and later completions above the threshold do not start another.
func TestCompactionThatDoesNotShrinkStops(t *testing.T) {
	big := &runtime.Usage{Input: 850, Output: 50, Total: 900}
	script := &model.Script{
		Threads: map[string][]model.Step{"main": {
			{Text: "One.", Usage: big},
			{Text: "Two, still big.", Usage: big},
			{Text: "Three, still big.", Usage: big},
			{Text: "Four, still big.", Usage: big},
		}},
		Match: []model.MatchRule{{Contains: "Summarise the conversation", Steps: []model.Step{{Text: "SUMMARY: far too long."}}}},
	}
	sc := newScenario(t, model.NewScripted(script), func(c *Config) {
		c.Compaction = &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8}
	})
	for _, id := range []string{"u1", "u2", "u3", "u4"} {
		sc.send(user("main", id, "go on"))
		sc.wait()
	}
	if n := compactions(t, sc.harness, "main"); n != 1 {
		t.Fatalf("%d compactions started, want 1 (the one that did not shrink the context, then none)", n)
	}
	var stops int
	for _, it := range sc.history("main") {
		if it.Kind == runtime.ItemMarker && it.IsError && it.Name == runtime.CompactionMarkerName {
			stops++
			if !strings.Contains(it.Text, "900 tokens") || !strings.Contains(it.Text, "not compacted again") {
				t.Errorf("the error item does not say what happened: %q", it.Text)
			}
		}
	}
	if stops != 1 {
		t.Fatalf("%d compaction error items, want 1\n%s", stops, sc.render(true))
	}
	var errs int
	for _, ev := range sc.outputs("error") {
		if strings.Contains(ev.Text, "compaction stopped") {
			errs++
		}
	}
	if errs != 1 {
		t.Fatalf("%d compaction error events, want 1", errs)
	}
}

// A summary that does shrink the context lets the thread compact again
// later, when it has grown back.
func TestCompactionThatShrinksCompactsAgain(t *testing.T) {
	big := &runtime.Usage{Input: 850, Output: 50, Total: 900}
	small := &runtime.Usage{Input: 150, Output: 50, Total: 200}
	script := &model.Script{
		Threads: map[string][]model.Step{"main": {
			{Text: "One.", Usage: big},
			{Text: "Two, small again.", Usage: small},
			{Text: "Three, big again.", Usage: big},
		}},
		Match: []model.MatchRule{{Contains: "Summarise the conversation", Steps: []model.Step{{Text: "SUMMARY: short."}}}},
	}
	sc := newScenario(t, model.NewScripted(script), func(c *Config) {
		c.Compaction = &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8}
	})
	for _, id := range []string{"u1", "u2", "u3"} {
		sc.send(user("main", id, "go on"))
		sc.wait()
	}
	if n := compactions(t, sc.harness, "main"); n != 2 {
		t.Fatalf("%d compactions, want 2\n%s", n, sc.render(true))
	}
}

// A thread's title (its first user message) is kept across compactions:
// each compaction child is told it, the second too although the first
// user message is no longer loaded (the memory store's slice loads start
// at the first summary), and each summary keeps it.
func TestCompactionKeepsTheTitle(t *testing.T) {
	big := &runtime.Usage{Input: 850, Output: 50, Total: 900}
	small := &runtime.Usage{Input: 150, Output: 50, Total: 200}
	script := &model.Script{
		Threads: map[string][]model.Step{"main": {
			{Text: "One.", Usage: big},
			{Text: "Two, small again.", Usage: small},
			{Text: "Three, big again.", Usage: big},
		}},
		Match: []model.MatchRule{{Contains: "Summarise the conversation", Steps: []model.Step{{Text: "SUMMARY: short."}}}},
	}
	sc := newScenario(t, model.NewScripted(script), func(c *Config) {
		c.Compaction = &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8}
	})
	for i, text := range []string{"Port the   parser\nto Go", "go on", "and on"} {
		sc.send(user("main", fmt.Sprint("u", i), text))
		sc.wait()
	}
	const title = "Port the parser to Go"
	told := 0
	for _, id := range sc.store.Threads() {
		if strings.HasPrefix(id, "cmp_") {
			h := sc.history(id)
			if !strings.Contains(h[len(h)-2].Text, "- the thread's title: "+title) {
				t.Errorf("compaction child %s was not told the title:\n%s", id, h[len(h)-2].Text)
			}
			told++
		}
	}
	sums := 0
	for _, it := range sc.history("main") {
		if it.Kind == runtime.ItemSummary {
			sums++
			if !strings.Contains(it.Args, `"title":"`+title+`"`) {
				t.Errorf("summary %d does not keep the title: %s", sums, it.Args)
			}
		}
	}
	if told != 2 || sums != 2 {
		t.Fatalf("%d compaction children and %d summaries, want 2 of each\n%s", told, sums, sc.render(true))
	}
}

// A compaction child's reply longer than MaxSummaryBytes becomes a summary
// cut to the cap, saying so.
func TestSummaryIsCapped(t *testing.T) {
	big := &runtime.Usage{Input: 850, Output: 50, Total: 900}
	script := &model.Script{
		Threads: map[string][]model.Step{"main": {{Text: "One.", Usage: big}, {Text: "Two."}}},
		Match: []model.MatchRule{{Contains: "Summarise the conversation", Steps: []model.Step{
			{Text: "SUMMARY: " + strings.Repeat("a long summary ", 40)}}}},
	}
	sc := newScenario(t, model.NewScripted(script), func(c *Config) {
		c.Compaction = &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8, MaxSummaryBytes: 200}
	})
	sc.send(user("main", "u1", "go"))
	sc.wait()
	var sum *runtime.Item
	for _, it := range sc.history("main") {
		if it.Kind == runtime.ItemSummary {
			sum = &it
		}
	}
	if sum == nil {
		t.Fatalf("no summary\n%s", sc.render(true))
	}
	if len(sum.Text) > 200 || !strings.Contains(sum.Text, "summary cut at 200 of") {
		t.Fatalf("summary of %d bytes, want at most 200 with a note: %q", len(sum.Text), sum.Text)
	}
}

// The compaction child is told what the thread still owes and is owed:
// its children and what each was asked, its pending call, its usage; the
// summary keeps those calls, so that the child's report after the
// compaction is matched although the spawn call is no longer loaded.
func TestCompactionKnowsTheTree(t *testing.T) {
	big := &runtime.Usage{Input: 850, Output: 50, Total: 900}
	script := &model.Script{
		Threads: map[string][]model.Step{"main": {
			{ToolCall: call("spawn_thread", `{"instructions":"omega task: wait for the go","child_of":["main"]}`)},
			{Text: "Starting the build.", ToolCall: call("work", `{"job":"build"}`), Usage: big},
			{Text: "Omega reported."},
		}},
		Match: []model.MatchRule{
			{Contains: "Summarise the conversation", Steps: []model.Step{{Text: "SUMMARY: omega waits, the build runs."}}},
			{Contains: "omega task", Steps: []model.Step{{Text: "Waiting."}, {ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"omega is done"}`)}}},
		},
	}
	sc := newScenario(t, model.NewScripted(script), func(c *Config) {
		c.Compaction = &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8}
	})
	sc.send(user("main", "u1", "build it"))
	sc.wait()
	th, err := sc.store.Load(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	omega, work := th.State.Children[0], sc.work.Calls()[0].CallID
	var told string
	for _, id := range sc.store.Threads() {
		if strings.HasPrefix(id, "cmp_") {
			told = sc.history(id)[len(sc.history(id))-2].Text
		}
	}
	for _, want := range []string{"child thread " + omega, "omega task: wait for the go", "the call " + work + " (work) is waiting", "tokens used so far: 900"} {
		if !strings.Contains(told, want) {
			t.Errorf("the compaction child was not told %q:\n%s", want, told)
		}
	}
	if th.State.ViewStart == 0 {
		t.Fatalf("no view start after the compaction")
	}
	var spawn string
	for _, it := range th.Own() {
		if it.Kind == runtime.ItemToolCall && it.Name == "spawn_thread" {
			spawn = it.CallID
		}
		if it.Kind == runtime.ItemSummary && !strings.Contains(it.Args, `{"id":"`+spawn+`","name":"spawn_thread"`) {
			t.Fatalf("the summary does not keep the spawn call %s: %s", spawn, it.Args)
		}
	}
	// The child reports after the compaction: its spawn call, before the
	// view start, is matched through the summary.
	sc.send(runtime.Message{V: 1, ID: "pm-1", ThreadID: omega, Kind: runtime.KindParent, From: "main", Text: "go"})
	sc.wait()
	sc.send(result("main", "r1", work, "built")) // the report waited for the pending call
	sc.wait()
	if dl, _ := sc.sys.DeadLetters(); len(dl) > 0 {
		t.Fatalf("dead letter: %+v", dl[0])
	}
	var reported bool
	for _, it := range sc.history("main") {
		reported = reported || (it.Kind == runtime.ItemToolResult && strings.Contains(it.Text, "omega is done"))
	}
	if !reported {
		t.Fatalf("the report of the child spawned before the compaction did not reach main\n%s", sc.render(true))
	}
}

// Limits.MaxSubscriptions bounds the subscriptions a thread keeps: the
// call that would start one more gets an error the model can read, the
// subscription is not kept, and its events are refused.
func TestSubscriptionLimit(t *testing.T) {
	script := &model.Script{Threads: map[string][]model.Step{"main": {
		{Text: "Watching the build.", ToolCall: call("work", `{"watch":"ci"}`)},
		{Text: "Subscribed."},
		{Text: "Watching the deploy too.", ToolCall: call("work", `{"watch":"deploy"}`)},
		{Text: "Could not subscribe."},
	}}}
	sc := newScenario(t, model.NewScripted(script), func(c *Config) { c.Limits.MaxSubscriptions = 1 })
	c1 := sc.subscribe()
	sc.send(user("main", "u2", "watch the deploy too"))
	sc.wait()
	c2 := sc.work.Calls()[1].CallID
	sc.send(runtime.Message{V: 1, ID: "sub-2", ThreadID: "main", Kind: runtime.KindToolResult, ToolCallID: c2,
		Text: "watching deploy", Subscription: true})
	sc.wait()
	th, err := sc.store.Load(context.Background(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(th.State.Subscriptions) != 1 || th.State.Subscriptions[0].CallID != c1 {
		t.Fatalf("subscriptions %+v, want only %s", th.State.Subscriptions, c1)
	}
	var res *runtime.Item
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult && it.CallID == c2 {
			res = &it
		}
	}
	if res == nil || !res.IsError || !strings.Contains(res.Text, "1 active subscriptions, its limit") {
		t.Fatalf("the second subscription's result does not tell the model: %+v", res)
	}
	// Its events are refused: it is not active.
	sc.send(event("e1", c2, "deployed", true, false))
	sc.wait()
	if dl, _ := sc.sys.DeadLetters(); len(dl) != 1 || !strings.Contains(dl[0].Reason, "no active subscription") {
		t.Fatalf("dead letters %+v, want the event for the subscription not kept", dl)
	}
}

// A compaction child's ID depends on the history it summarises, not on
// how many commits wrote it: a sent-only commit (one a store may lose in
// a crash, Commit.SentOnly) before the slice that compacts leaves the
// child's ID as it is.
func TestCompactionChildIDIgnoresSentOnlyCommits(t *testing.T) {
	child := func(extra bool) string {
		big := &runtime.Usage{Input: 850, Output: 50, Total: 900}
		script := &model.Script{
			Threads: map[string][]model.Step{"main": {{Text: "One."}, {Text: "Two, big.", Usage: big}}},
			Match:   []model.MatchRule{{Contains: "Summarise the conversation", Steps: []model.Step{{Text: "SUMMARY: short."}}}},
		}
		sc := newScenario(t, model.NewScripted(script), func(c *Config) {
			c.Compaction = &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8}
		})
		sc.send(user("main", "u1", "go on"))
		sc.wait()
		if extra {
			st := sc.state("main")
			next := st
			next.Version++
			if err := sc.store.Commit(context.Background(), &runtime.Commit{ThreadID: "main", Expected: st.Version, State: next, SentOnly: true}); err != nil {
				t.Fatal(err)
			}
		}
		sc.send(user("main", "u2", "and on"))
		sc.wait()
		var ids []string
		for _, id := range sc.store.Threads() {
			if strings.HasPrefix(id, "cmp_") {
				ids = append(ids, id)
			}
		}
		if len(ids) != 1 {
			t.Fatalf("compaction children %q, want one\n%s", ids, sc.render(true))
		}
		return ids[0]
	}
	if a, b := child(false), child(true); a != b {
		t.Fatalf("the compaction child is %s after a sent-only commit, %s without one", b, a)
	}
}
