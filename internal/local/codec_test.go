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

// TestItemTimesRoundTrip: item times survive the binary form whatever
// their order (the same time as the previous item costs nothing; later,
// earlier and unset times after set ones are kept), in frozen histories
// and in the rows AppendItems writes from any first position; rows written
// before items had times decode with none.
func TestItemTimesRoundTrip(t *testing.T) {
	const th = "thread-t"
	const t0 = runtime.Stamp(1_790_000_000_123)
	items := []runtime.Item{
		{Kind: runtime.ItemUser, At: t0, Text: "a"},
		{Kind: runtime.ItemAssistant, At: t0, Text: "b"},
		{Kind: runtime.ItemToolCall, At: t0 + 5, CallID: runtime.CallIDAt(th, "", 2), Name: "run"},
		{Kind: runtime.ItemToolResult, At: t0 + 3, CallID: runtime.CallIDAt(th, "", 2), Name: "run", Text: "arrived before"},
		{Kind: runtime.ItemMarker, Text: "no time"},
		{Kind: runtime.ItemUser, At: t0 + 86_400_000, Text: "a day later"},
	}
	st := runtime.ThreadState{Version: 1, Length: len(items)}
	raw, err := encodeFrozen(nil, th, &st, 0, items)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, got, err := decodeFrozen(raw, th); err != nil || !reflect.DeepEqual(got, items) {
		t.Fatalf("frozen: %v\n got %+v\nwant %+v", err, got, items)
	}
	row := AppendItems(nil, th, "", 2, items[2:])
	if got, err := DecodeItems(nil, row, th, "", 2); err != nil || !reflect.DeepEqual(got, items[2:]) {
		t.Fatalf("row: %v\n got %+v\nwant %+v", err, got, items[2:])
	}
	untimed := []runtime.Item{{Kind: runtime.ItemUser, Text: "old"}, {Kind: runtime.ItemAssistant, Text: "row"}}
	if got, err := DecodeItems(nil, AppendItems(nil, th, "", 0, untimed), th, "", 0); err != nil || !reflect.DeepEqual(got, untimed) {
		t.Fatalf("untimed: %v %+v", err, got)
	}
	// The same time as the previous item adds nothing to the encoding.
	one := AppendItems(nil, th, "", 0, items[:1])
	two := AppendItems(nil, th, "", 0, items[:2])
	if alone := AppendItems(nil, th, "", 1, []runtime.Item{{Kind: runtime.ItemAssistant, Text: "b"}}); len(two)-len(one) != len(alone) {
		t.Fatalf("a repeated time costs %d bytes", len(two)-len(one)-len(alone))
	}
}
