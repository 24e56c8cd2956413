package runtime

import (
	"strings"
	"testing"
)

// IsCallIDAt and IsResultID agree with the IDs they check, and do not
// allocate. (Not parallel: AllocsPerRun.)
func TestIsDerivedIDs(t *testing.T) {
	inc := DeriveID("", "an incarnation")
	for _, th := range []string{"t", "agent-000042", strings.Repeat("x", 200)} {
		for _, in := range []string{"", inc} {
			for pos := range 5 {
				call := CallIDAt(th, in, pos)
				if !IsCallIDAt(call, th, in, pos) || IsCallIDAt(call, th, in, pos+1) || IsCallIDAt(call+"x", th, in, pos) {
					t.Fatalf("IsCallIDAt disagrees with CallIDAt(%q, %q, %d) = %s", th, in, pos, call)
				}
				res := ResultID(th, call)
				if !IsResultID(res, th, call) || IsResultID(res, th, call+"x") || IsResultID(call, th, call) {
					t.Fatalf("IsResultID disagrees with ResultID(%q, %s) = %s", th, call, res)
				}
			}
		}
	}
	call := CallIDAt("agent-000042", inc, 7)
	res := ResultID("agent-000042", call)
	if n := testing.AllocsPerRun(100, func() {
		_ = IsCallIDAt(call, "agent-000042", inc, 7) && IsResultID(res, "agent-000042", call)
	}); n != 0 {
		t.Errorf("IsCallIDAt and IsResultID allocate %v times per call, want 0", n)
	}
}

// TestIncarnationSeparatesCallIDs: a thread's call IDs depend on its
// incarnation, and an empty one derives them as before incarnations did
// (states written then keep their IDs).
func TestIncarnationSeparatesCallIDs(t *testing.T) {
	t.Parallel()
	a, b := DeriveID("", "first"), DeriveID("", "second")
	if CallIDAt("demo", a, 1) == CallIDAt("demo", b, 1) || CallIDAt("demo", a, 1) == CallIDAt("demo", "", 1) {
		t.Fatal("two incarnations of thread demo issue the same call ID")
	}
	// The ID every thread named demo issued at position 1 before incarnations.
	if got := CallIDAt("demo", "", 1); got != DeriveID("call_", "demo", "1") {
		t.Fatalf("CallIDAt without an incarnation = %s, want the old derivation %s", got, DeriveID("call_", "demo", "1"))
	}
	if incarnationID("out_", "", "demo", "3") != DeriveID("out_", "demo", "3") || incarnationID("out_", a, "demo", "3") == DeriveID("out_", "demo", "3") {
		t.Fatal("incarnationID: an empty incarnation must derive the old ID, another must not")
	}
	x, err := newIncarnation(FixedEntropy, "demo")
	y, err2 := newIncarnation(FixedEntropy, "demo")
	if err != nil || err2 != nil || x != y || x == "" {
		t.Fatalf("fixed entropy: %q, %q (%v, %v), want one deterministic incarnation", x, y, err, err2)
	}
}
