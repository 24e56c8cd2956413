package runtime

import (
	"strings"
	"testing"
)

// IsCallIDAt and IsResultID agree with the IDs they check, and do not
// allocate. (Not parallel: AllocsPerRun.)
func TestIsDerivedIDs(t *testing.T) {
	for _, th := range []string{"t", "agent-000042", strings.Repeat("x", 200)} {
		for pos := range 5 {
			call := CallIDAt(th, pos)
			if !IsCallIDAt(call, th, pos) || IsCallIDAt(call, th, pos+1) || IsCallIDAt(call+"x", th, pos) {
				t.Fatalf("IsCallIDAt disagrees with CallIDAt(%q, %d) = %s", th, pos, call)
			}
			res := ResultID(th, call)
			if !IsResultID(res, th, call) || IsResultID(res, th, call+"x") || IsResultID(call, th, call) {
				t.Fatalf("IsResultID disagrees with ResultID(%q, %s) = %s", th, call, res)
			}
		}
	}
	call := CallIDAt("agent-000042", 7)
	res := ResultID("agent-000042", call)
	if n := testing.AllocsPerRun(100, func() {
		_ = IsCallIDAt(call, "agent-000042", 7) && IsResultID(res, "agent-000042", call)
	}); n != 0 {
		t.Errorf("IsCallIDAt and IsResultID allocate %v times per call, want 0", n)
	}
}
