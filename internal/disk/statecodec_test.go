package disk

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// fillNamed is fill with each string naming its field (so that a codec
// that swaps two fields fails) and times in a zone east of UTC.
func fillNamed(v reflect.Value, name string, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 4 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fillNamed(v.Elem(), name, depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 13, 4, 5, 6, time.FixedZone("", 5400))))
			return
		}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fillNamed(v.Field(i), name+"."+f.Name, depth)
			}
		}
	case reflect.Slice:
		if depth > 4 || v.Type().Elem().Kind() == reflect.Uint8 {
			v.Set(reflect.ValueOf([]byte("x")).Convert(v.Type()))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillNamed(s.Index(0), name+"[0]", depth+1)
		v.Set(s)
	case reflect.String:
		v.SetString(strings.TrimPrefix(name, ".") + " <&> ✓")
	default:
		fill(v, depth)
	}
}

// roundTrip checks that the journal's form of st reads back to the JSON
// the database would have got from st itself.
func roundTrip(t *testing.T, what string, st *runtime.ThreadState) runtime.ThreadState {
	t.Helper()
	b, err := appendState(nil, st)
	if err != nil {
		t.Fatalf("%s: encoding: %v", what, err)
	}
	got, err := readState(b)
	if err != nil {
		t.Fatalf("%s: decoding: %v", what, err)
	}
	want, _ := marshal(st)
	have, _ := marshal(&got)
	if !bytes.Equal(want, have) {
		t.Fatalf("%s: the journal's form reads back as\n%s\nwant\n%s", what, have, want)
	}
	js, err := stateJSON(b)
	if err != nil || !bytes.Equal(js, want) {
		t.Fatalf("%s: stateJSON = %s, %v; want %s", what, js, err, want)
	}
	return got
}

// TestStateCodecCoversEveryField: a state with every field set (the nested
// types too) survives the journal's form; so do the shapes of the hot path
// and the empty state. A field added to ThreadState (or to a type it holds)
// and unknown to the codec fails here.
func TestStateCodecCoversEveryField(t *testing.T) {
	var full runtime.ThreadState
	fillNamed(reflect.ValueOf(&full).Elem(), "", 0)
	// One outbox entry of each shape the codec tells apart.
	full.Outbox = append(full.Outbox, runtime.OutboxEntry{Output: &runtime.OutputEvent{ID: "o1", ThreadID: "t", Kind: "reply", Text: "<b>\"quoted\"</b>\n"}},
		runtime.OutboxEntry{Message: &runtime.Message{V: 1, ID: "m1", ThreadID: "c", Kind: runtime.KindUser, Text: "hi"}})
	roundTrip(t, "every field", &full)

	utc := runtime.ThreadState{Version: 3, Length: 9, Stack: []string{"a"}, Class: runtime.ClassInteractive,
		Pending: &runtime.PendingCall{ID: "c1", Name: "run_command", Args: `{"command":"ls"}`, Dispatched: true, Deadline: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	if got := roundTrip(t, "pending call", &utc); !reflect.DeepEqual(got, utc) {
		t.Fatalf("pending call: %+v, want %+v", got, utc)
	}
	var empty runtime.ThreadState
	if got := roundTrip(t, "empty", &empty); !reflect.DeepEqual(got, empty) {
		t.Fatalf("empty: %+v, want the zero state", got)
	}
}

// TestStateCodecRefusesDamage: a cut or padded state is an error, not a
// different state.
func TestStateCodecRefusesDamage(t *testing.T) {
	var full runtime.ThreadState
	fillNamed(reflect.ValueOf(&full).Elem(), "", 0)
	b, err := appendState(nil, &full)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{b[:len(b)/2], b[:len(b)-1], append(append([]byte(nil), b...), 0), {}, {2}} {
		if _, err := readState(bad); err == nil {
			t.Fatalf("a damaged state of %d bytes (of %d) decoded without an error", len(bad), len(b))
		}
	}
	// A list length past what is left is refused before anything is
	// allocated for it (version 1, length 0, no parent, stack, spawn call
	// or flags, then an outbox of 2^39 entries).
	huge := binary.AppendUvarint([]byte{stateCodecV1, 2, 0, 0, 0, 0, 0}, 1<<39)
	if _, err := readState(huge); err == nil {
		t.Fatal("a state claiming 2^39 outbox entries in a few bytes decoded without an error")
	}
	if js, err := stateJSON([]byte(`{"version":1}`)); err != nil || string(js) != `{"version":1}` {
		t.Fatalf("a JSON state from an older journal: %s, %v", js, err)
	}
}

// BenchmarkEncodeState compares the journal's state form with JSON on the
// state of a commit that holds a reply in its outbox (the hot path's
// largest).
func BenchmarkEncodeState(b *testing.B) {
	reply := strings.Repeat("The workspace build finished; three crates were rebuilt, and the test plan covers each module. ", 7)
	st := runtime.ThreadState{Version: 41, Length: 53, Stack: []string{"agent-000706"}, Class: runtime.ClassInteractive,
		Outbox: []runtime.OutboxEntry{{Output: &runtime.OutputEvent{ID: "out_fehugbz4fzyk53wfu47vilwaay", ThreadID: "agent-000706", Kind: "reply", Text: reply}}}}
	buf := make([]byte, 0, 4096)
	b.Run("journal", func(b *testing.B) {
		for b.Loop() {
			buf, _ = appendState(buf[:0], &st)
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			_, _ = marshal(&st)
		}
	})
}

// A journal record written before incarnations ends after Model: it still
// reads, as a state without one.
func TestStateCodecReadsRecordsWithoutIncarnation(t *testing.T) {
	t.Parallel()
	st := runtime.ThreadState{Version: 3, Length: 2, Stack: []string{"t"}, Model: "m"}
	old, err := appendState(nil, &st)
	if err != nil {
		t.Fatal(err)
	}
	// What the codec wrote before incarnations: V1, ending after Model
	// (without the empty incarnation, the empty ModelWait and V2's ViewStart).
	old = old[:len(old)-3]
	old[0] = stateCodecV1
	got, err := readState(old)
	if err != nil || !reflect.DeepEqual(got, st) {
		t.Fatalf("readState = %+v, %v; want %+v", got, err, st)
	}
	st.Incarnation = "inc"
	b, _ := appendState(nil, &st)
	if got, err := readState(b); err != nil || got.Incarnation != "inc" {
		t.Fatalf("readState = %+v, %v", got, err)
	}
}

// TestStateCodecTraceContexts: the pending call's and the subscriptions'
// trace contexts (kept for liveness checks) round-trip alone or together,
// and a state without them is as long as before they existed.
func TestStateCodecTraceContexts(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	subs := func(traces ...string) []runtime.Subscription {
		var out []runtime.Subscription
		for i, tr := range traces {
			out = append(out, runtime.Subscription{CallID: "s" + string(rune('0'+i)), Tool: "watch", Trace: tr})
		}
		return out
	}
	plain := runtime.ThreadState{Version: 2, Stack: []string{"t"}, Pending: &runtime.PendingCall{ID: "c", Name: "hold", Dispatched: true},
		Subscriptions: subs("", "")}
	base, err := appendState(nil, &plain)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*runtime.ThreadState){
		"pending call's":   func(st *runtime.ThreadState) { st.Pending.Trace = tp },
		"a subscription's": func(st *runtime.ThreadState) { st.Subscriptions = subs("", tp) },
		"all":              func(st *runtime.ThreadState) { st.Pending.Trace = tp; st.Subscriptions = subs(tp, tp) },
		"no pending call":  func(st *runtime.ThreadState) { st.Pending = nil; st.Subscriptions = subs(tp) },
		"open children and traces": func(st *runtime.ThreadState) {
			st.Open = []string{"k1", "k2"}
			st.Pending.Trace = tp
			st.Subscriptions = subs("", tp)
		},
		"open children only": func(st *runtime.ThreadState) { st.Open = []string{"k1"} },
	} {
		st := plain
		st.Pending = &runtime.PendingCall{ID: "c", Name: "hold", Dispatched: true}
		edit(&st)
		if got := roundTrip(t, name, &st); !reflect.DeepEqual(got, st) {
			t.Errorf("%s: %+v, want %+v", name, got, st)
		}
	}
	if got := roundTrip(t, "none", &plain); !reflect.DeepEqual(got, plain) {
		t.Errorf("none: %+v, want %+v", got, plain)
	}
	// A state without trace contexts is written as before they existed:
	// the same state with the call's is it plus the (empty) budget, fork,
	// upgrade and open children of the rare tail and the trace context.
	traced := plain
	traced.Pending = &runtime.PendingCall{ID: "c", Name: "hold", Dispatched: true, Trace: tp}
	b, err := appendState(nil, &traced)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, base) || len(b)-len(base) != 4+1+len(tp) {
		t.Errorf("with the call's trace context: %d bytes, without: %d (a prefix: %v); want %d more", len(b), len(base), bytes.HasPrefix(b, base), 4+1+len(tp))
	}
}
