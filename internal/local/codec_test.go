package local

import (
	"reflect"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The frozen form leaves out IDs it can derive, and must give back exactly
// what it was given whether or not they were derived.
func TestFrozenRoundTripWithDerivedAndForeignIDs(t *testing.T) {
	for _, inc := range []string{"", "an-incarnation"} {
		t.Run("incarnation="+inc, func(t *testing.T) { frozenRoundTrip(t, inc) })
	}
}

func frozenRoundTrip(t *testing.T, inc string) {
	const th = "thread-x"
	c1 := runtime.CallIDAt(th, inc, 1)
	items := []runtime.Item{
		{Kind: runtime.ItemUser, Input: "u1", Text: "hi"},
		{Kind: runtime.ItemToolCall, CallID: c1, Name: "run", Args: `{}`}, // derived call ID
		{Kind: runtime.ItemToolResult, Input: runtime.ResultID(th, c1), CallID: c1, Name: "run", Text: "ok"},
		{Kind: runtime.ItemToolCall, CallID: "foreign-call", Name: "x", Args: `{"a":1}`, Usage: &runtime.Usage{Total: 3}},
		{Kind: runtime.ItemToolResult, Input: "other-input", CallID: "foreign-call", Name: "x", IsError: true,
			Content: []runtime.Content{{Type: "image", Data: "aGk=", MediaType: "image/png"}}},
		{Kind: runtime.ItemToolResult, Input: runtime.ResultID(th, c1), CallID: c1, Text: "late, not after its call"},
		{Kind: runtime.ItemToolCall, CallID: runtime.CallIDAt(th, inc, 99), Name: "wrong position"},
		{Kind: runtime.ItemToolResult, CallID: runtime.CallIDAt(th, inc, 99)},
		{Kind: runtime.ItemSummary, Text: "sum", Args: `{"covers":2}`},
		{Kind: runtime.ItemAssistant, Text: "thought", Reasoning: "hmm", Usage: &runtime.Usage{Input: 5, Cached: 4, CacheWrite: 9, Total: 7},
			Trace: &runtime.ReasoningTrace{Blocks: []runtime.ReasoningBlock{{Text: "hmm", Signature: "c2ln"}, {Redacted: "cmVk"}}}},
		{Kind: runtime.ItemMarker, Name: runtime.AgentMarkerName, Text: "agent a: version 2", Args: `{"agent":"a"}`},
	}
	state := runtime.ThreadState{Version: 7, Length: len(items), Parent: "p", Stack: []string{"p", th},
		Pending: &runtime.PendingCall{ID: "c", Name: "n"}, Agent: "reviewer", AgentHash: "abc",
		Usage: runtime.Usage{Input: 100, Output: 20, Cached: 50, CacheWrite: 30, Total: 120}, Incarnation: inc}
	raw, err := encodeFrozen(nil, th, &state, 4, items)
	if err != nil {
		t.Fatal(err)
	}
	st, at, got, err := decodeFrozen(raw, th)
	if err != nil {
		t.Fatal(err)
	}
	if at != 4 || !reflect.DeepEqual(st, state) {
		t.Fatalf("header: spawnAt %d state %+v", at, st)
	}
	if !reflect.DeepEqual(got, items) {
		t.Fatalf("items differ:\n got %+v\nwant %+v", got, items)
	}
	// Decoding under another thread's ID must not silently produce the
	// derived IDs of that thread for foreign ones.
	if _, _, other, err := decodeFrozen(raw, "another"); err == nil && other[3].CallID != "foreign-call" {
		t.Fatal("foreign call ID was not stored")
	}
}

func FuzzDecodeFrozen(f *testing.F) {
	raw, _ := encodeFrozen(nil, "t", &runtime.ThreadState{Version: 1, Length: 1}, 0,
		[]runtime.Item{{Kind: runtime.ItemUser, Text: "x"}})
	f.Add(raw)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _, _ = decodeFrozen(b, "t") // must not panic
	})
}
