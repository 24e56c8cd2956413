package disk

import (
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A state's Reach is written in a V3 record, and only when set: a state
// without it keeps its V2 bytes. A V3 record with no reach is refused.
func TestStateCodecReach(t *testing.T) {
	st := runtime.ThreadState{Version: 2, Length: 3, Stack: []string{"a", "b"}, ViewStart: 4}
	b, err := appendState(nil, &st)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != stateCodecV2 {
		t.Fatalf("a state without reach starts with %d, want V2", b[0])
	}
	st.Reach = 3
	b3, err := appendState(nil, &st)
	if err != nil {
		t.Fatal(err)
	}
	if b3[0] != stateCodecV3 {
		t.Fatalf("a state with reach starts with %d, want V3", b3[0])
	}
	got, err := readState(b3)
	if err != nil || got.Reach != 3 || got.ViewStart != 4 {
		t.Fatalf("read back reach %d, view start %d, err %v", got.Reach, got.ViewStart, err)
	}
	bad := append([]byte{stateCodecV3}, b[1:]...) // V3 with the view start's varint last: no reach
	if _, err := readState(bad); err == nil {
		t.Fatalf("a V3 record without a reach was read")
	}
}
