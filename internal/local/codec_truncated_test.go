package local

import (
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A frozen history cut anywhere inside its header or inside an item does
// not decode: every read past the end is an error, never a zero value.
// (Cut exactly after the header it is a valid history with no items.)
func TestDecodeFrozenRejectsTruncation(t *testing.T) {
	const th = "thread-x"
	state := runtime.ThreadState{Version: 3, Length: 1, Stack: []string{th}}
	header, err := encodeFrozen(nil, th, &state, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []runtime.Item{
		{Kind: runtime.ItemAssistant, Text: "hello", Reasoning: "r", At: 1_700_000_000_000,
			Usage: &runtime.Usage{Input: 300, Output: 200, Total: 500}, Took: 1234},
		{Kind: runtime.ItemUser, Input: "u1", Text: "hi", At: 1_700_000_000_000}, // ends with its time
	} {
		raw, err := encodeFrozen(nil, th, &state, 0, []runtime.Item{it})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, got, err := decodeFrozen(raw, th); err != nil || len(got) != 1 || got[0].Took != it.Took || got[0].At != it.At {
			t.Fatalf("whole: %+v, %v", got, err)
		}
		for k := range len(raw) {
			if k == len(header) {
				continue
			}
			if _, _, got, err := decodeFrozen(raw[:k], th); err == nil {
				t.Errorf("%s item cut to %d of %d bytes (header %d): decoded %+v, want an error", it.Kind, k, len(raw), len(header), got)
			}
		}
	}
}
