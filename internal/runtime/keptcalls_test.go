package runtime

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A summary keeps the calls the previous summary kept (a child spawned
// before both compactions may still report), next to the live calls and
// latest spawn_thread calls of the items it covers.
func TestKeptCallsCarriesThePreviousSummarysCalls(t *testing.T) {
	t.Parallel()
	s := &slice{th: &Thread{}, view: []Item{
		{Kind: ItemSummary, Args: `{"covers":4,"calls":[{"id":"c0","name":"spawn_thread","args":"{\"task\":\"old\"}"},{"id":"w0","name":"watch"}]}`},
		{Kind: ItemToolCall, CallID: "c1", Name: "spawn_thread", Args: `{"task":"new"}`},
		{Kind: ItemToolCall, CallID: "r1", Name: "run_command", Args: "{}"},
		{Kind: ItemUser, Text: "go on"},
	}}
	s.st.Subscriptions = []Subscription{{CallID: "w0"}}
	var got []string
	for _, c := range s.keptCalls(len(s.view)) {
		got = append(got, c.ID+":"+c.Name)
	}
	// c0 and c1 are spawn_thread calls, w0 a live subscription; r1 is done.
	if want := "[c0:spawn_thread w0:watch c1:spawn_thread]"; fmt.Sprint(got) != want {
		t.Fatalf("keptCalls = %v, want %s", got, want)
	}
}

// A root thread loaded from its view start (Base > 0, nothing inherited)
// takes its completion count and title from its latest summary, which
// stands for the own items not loaded; a whole load counts for itself.
func TestLoadedTurnsAndTitleOfAViewLoadedFromItsStart(t *testing.T) {
	t.Parallel()
	view := []Item{
		{Kind: ItemSummary, Args: `{"covers":5,"turns":3,"joined":true,"title":"fix the build"}`},
		{Kind: ItemUser, Text: "and the tests"},
	}
	s := &slice{th: &Thread{Base: 5}, view: view}
	s.loadedTurns()
	if s.turnBase != 3 || !s.joined {
		t.Fatalf("loaded from its view start: turnBase %d, joined %v; want the summary's 3, true", s.turnBase, s.joined)
	}
	if got := s.title(); got != "fix the build" {
		t.Fatalf("title = %q, want the summary's", got)
	}
	// A summary that covers another position does not count.
	s = &slice{th: &Thread{Base: 4}, view: view}
	if s.loadedTurns(); s.turnBase != 0 || s.joined {
		t.Fatalf("a summary covering 5 for a view loaded from 4: turnBase %d, joined %v; want 0, false", s.turnBase, s.joined)
	}
	// A whole load (Base 0) counts its own items: no turn base.
	s = &slice{th: &Thread{}, view: []Item{{Kind: ItemUser, Text: "first"}, view[0]}}
	s.turnBase = 9
	if s.loadedTurns(); s.turnBase != 0 || s.joined {
		t.Fatalf("a whole load: turnBase %d, joined %v; want 0, false", s.turnBase, s.joined)
	}
	if got := s.title(); got != "first" {
		t.Fatalf("title of a whole load = %q, want its first user message", got)
	}
}

// summaryCallIn finds a call the latest summary keeps.
func TestSummaryCallIn(t *testing.T) {
	t.Parallel()
	view := []Item{
		{Kind: ItemSummary, Args: `{"covers":2,"calls":[{"id":"c1","name":"spawn_thread","args":"{}"}]}`},
		{Kind: ItemUser, Text: "go on"},
	}
	if it := summaryCallIn(view, "c1"); it == nil || it.Kind != ItemToolCall || it.CallID != "c1" || it.Name != "spawn_thread" {
		t.Fatalf("summaryCallIn(c1) = %+v, want the kept spawn_thread call", it)
	}
	if it := summaryCallIn(view, "c2"); it != nil {
		t.Fatalf("summaryCallIn(c2) = %+v, want nil", it)
	}
}

// A summary of a view loaded from Base counts the own completions it
// covers on top of the turns before the view start: covers is a full-view
// position, the view's index is covers - Base.
func TestSummaryItemCountsTurnsFromTheViewStart(t *testing.T) {
	t.Parallel()
	s := &slice{th: &Thread{Base: 2}, threadID: "t1", view: []Item{
		{Kind: ItemUser, Text: "a"}, {Kind: ItemAssistant, Text: "b"},
		{Kind: ItemUser, Text: "c"}, {Kind: ItemAssistant, Text: "d"},
	}}
	s.turnBase = 1
	it, _ := s.summaryItem(Message{ID: "sum1", Text: "summary", Covers: 4})
	meta, ok := summaryMetaOf(&it)
	if !ok || meta.Covers != 4 || meta.Turns != 2 || !meta.Joined {
		t.Fatalf("summary meta %+v, want covers 4, turns 1+1, joined", meta)
	}
}

// TestSummaryPosAgreesWithTheWholeDecode: summaryPosOf, which every slice
// reads its latest summary with, reads what summaryMetaOf's whole decode
// does, and refuses what it refuses.
func TestSummaryPosAgreesWithTheWholeDecode(t *testing.T) {
	t.Parallel()
	for _, args := range []string{
		`{"covers":8}`, `{}`, `{"covers":0}`, `{"covers":12,"turns":5,"joined":true,"calls":[{"id":"c1","name":"spawn_thread","args":"{}"}],"title":"t"}`,
		`{"turns":3}`, `{"covers":null,"joined":null}`, `{"title":"x","covers":4,"joined":false}`,
		``, `nope`, `[1]`, `{"covers":-1}`, `{"covers":"8"}`, `{"covers":8.5}`, `{"covers":8,"joined":"yes"}`, `{"covers":8,"turns":true}`,
	} {
		it := Item{Kind: ItemSummary, Args: args}
		whole, wok := summaryMetaOf(&it)
		pos, ok := summaryPosOf(&it)
		if ok != wok || (ok && (pos.Covers != whole.Covers || pos.Turns != whole.Turns || pos.Joined != whole.Joined)) {
			t.Errorf("%s: summaryPosOf %+v %v, the whole decode %+v %v", args, pos, ok, whole, wok)
		}
	}
}

// oldSummary is the latest summary of an old orchestrator: it keeps the
// calls of its latest SummaryChildren children with their instructions.
func oldSummary() Item {
	meta := summaryMeta{Covers: 4000, Turns: 900, Joined: true, Title: "the orchestrator's task"}
	for i := range SummaryChildren {
		meta.Calls = append(meta.Calls, summaryCall{ID: fmt.Sprintf("call_%d", i), Name: "spawn_thread",
			Args: fmt.Sprintf(`{"instructions":"child %d: %s","child_of":["orchestrator"]}`, i, strings.Repeat("work ", 20))})
	}
	js, _ := json.Marshal(meta)
	return Item{Kind: ItemSummary, Input: "sum", Text: "SUMMARY", Args: string(js)}
}

// TestEverySliceReadsTheSummaryWithoutItsCalls: what every slice reads of
// its latest summary (loadedTurns, ModelView, title) does not decode the
// calls it keeps, which grow with the thread's children up to
// SummaryChildren (the whole decode of an old orchestrator's summary
// allocates 79 times, about 10 KB); a result tied to a kept call still
// finds it.
func TestEverySliceReadsTheSummaryWithoutItsCalls(t *testing.T) {
	sum := oldSummary()
	view := []Item{sum, {Kind: ItemUser, Input: "u1", Text: "hi"}}
	s := &slice{th: &Thread{Base: 4000}, threadID: "orchestrator", view: view}
	allocs := testing.AllocsPerRun(100, func() {
		s.loadedTurns()
		ModelView(view, 0, 4000)
		_ = s.title()
	})
	if s.turnBase != 900 || !s.joined || s.title() != "the orchestrator's task" {
		t.Fatalf("turns %d joined %v title %q, want 900, true, the task", s.turnBase, s.joined, s.title())
	}
	if allocs > 8 {
		t.Fatalf("a slice's reads of its summary allocate %v times, want at most 8 (the calls are not decoded)", allocs)
	}
	if it := summaryCallIn(view, "call_7"); it == nil || it.Name != "spawn_thread" || !strings.Contains(it.Args, "child 7:") {
		t.Fatalf("summaryCallIn(call_7) = %+v, want the kept spawn call", it)
	}
	if it := summaryCallIn(view, "call_99"); it != nil {
		t.Fatalf("summaryCallIn(call_99) = %+v, want nil", it)
	}
}

// BenchmarkOldSummaryReads is what every slice of an old orchestrator
// reads of its latest summary.
func BenchmarkOldSummaryReads(b *testing.B) {
	sum := oldSummary()
	view := []Item{sum, {Kind: ItemUser, Input: "u1", Text: "hi"}}
	s := &slice{th: &Thread{Base: 4000}, threadID: "orchestrator", view: view}
	for b.Loop() {
		s.loadedTurns()
		ModelView(view, 0, 4000)
		_ = s.title()
	}
}
