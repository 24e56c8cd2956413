package runtime

import (
	"fmt"
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
