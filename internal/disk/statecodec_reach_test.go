package disk

import (
	"bytes"
	"encoding/hex"
	"reflect"
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

// stateV2Fixture is what main's codec (V2, before Reach; commit ca42d98)
// wrote for v2FixtureState: every part of the tail set (budget, fork and
// upgrade, open children, trace contexts). It must keep reading as that
// state, with no reach.
const stateV2Fixture = "020e0a0170030172017001630273630402633104686f6c6400010f01000000000000000000000000ffff000001027331057761746368000002026b31026b32000000000000000000000000000008117b227573645f6d6963726f73223a31327d157b22746872656164223a2266222c226174223a337d066c617465737401026b323730302d34626639326633353737623334646136613363653932396430653065343733362d303066303637616130626139303262372d3031013730302d34626639326633353737623334646136613363653932396430653065343733362d303066303637616130626139303262372d3031"

func v2FixtureState() runtime.ThreadState {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	return runtime.ThreadState{Version: 7, Length: 5, Parent: "p", Stack: []string{"r", "p", "c"}, SpawnCall: "sc",
		Pending:       &runtime.PendingCall{ID: "c1", Name: "hold", Dispatched: true, Trace: tp},
		Subscriptions: []runtime.Subscription{{CallID: "s1", Tool: "watch", Trace: tp}},
		Children:      []string{"k1", "k2"}, Open: []string{"k2"}, ViewStart: 4,
		Budget: &runtime.BudgetState{Micros: 12}, Fork: &runtime.ForkPoint{Thread: "f", At: 3}, Upgrade: runtime.UpgradeLatest}
}

// TestStateCodecReadsV2Records: a V2 record written before Reach existed
// reads as the state it was written from; the same state, written now,
// has the same bytes; with a reach it becomes V3 and keeps the whole tail.
func TestStateCodecReadsV2Records(t *testing.T) {
	old, err := hex.DecodeString(stateV2Fixture)
	if err != nil {
		t.Fatal(err)
	}
	want := v2FixtureState()
	got, err := readState(old)
	if err != nil {
		t.Fatalf("reading a V2 record: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("a V2 record reads as\n%+v\nwant\n%+v", got, want)
	}
	if now, _ := appendState(nil, &want); !bytes.Equal(now, old) {
		t.Fatalf("a state without reach is written as\n%x\nnot its V2 bytes\n%x", now, old)
	}
	want.Reach = 2
	if got := roundTrip(t, "the V2 fixture with a reach", &want); !reflect.DeepEqual(got, want) {
		t.Fatalf("with a reach: %+v, want %+v", got, want)
	}
}
