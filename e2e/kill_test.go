//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless"
	"github.com/agentslice/agentslice/internal/testenv"
)

// TestKillMidSlice SIGKILLs the slice function's bootstrap in the middle of
// a slice, under the emulator, and lets the queue redeliver: the thread
// ends exactly as a thread that was never killed. The bootstrap is built
// with the agentslice_faults tag (scripts/e2e.sh: slicefn-faults), whose
// only difference is that AGENTSLICE_FAULT_KILL makes it kill itself, once,
// at a named crash point of a named thread:
//   - before_dispatch: the turn with the tool call is committed, the call
//     not yet sent to the tool server;
//   - after_dispatch: the tool server accepted the call, the messages are
//     not yet marked processed in DynamoDB;
//   - after_commit: the reply turn is committed, nothing sent yet.
//
// The emulator reports the dead invocation as an error, the poller makes
// the records visible again, and the next invocation starts a new process
// (a cold start), as Lambda does.
func TestKillMidSlice(t *testing.T) {
	bin := testenv.Need(t, binVar)
	if _, err := os.Stat(filepath.Join(bin, "slicefn-faults", "bootstrap")); err != nil {
		t.Fatalf("the fault-injecting bootstrap is missing (scripts/e2e.sh builds it): %v", err)
	}
	suffix := time.Now().Format("150405")
	markers := t.TempDir()
	points := []runtime.CrashPoint{runtime.CrashBeforeDispatch, runtime.CrashAfterDispatch, runtime.CrashAfterCommit}
	var specs []string
	thread := func(p runtime.CrashPoint) string {
		return "kill-" + strings.ReplaceAll(string(p), "_", "-") + "-" + suffix
	}
	marker := func(p runtime.CrashPoint) string { return filepath.Join(markers, string(p)) }
	for _, p := range points {
		specs = append(specs, string(p)+","+thread(p)+","+marker(p))
	}
	r := startRig(t, rigOptions{sliceDir: "slicefn-faults",
		sliceEnv: []string{serverless.EnvFaultKill + "=" + strings.Join(specs, ";")}})

	// The reference: the same turn, never killed.
	base := "kill-none-" + suffix
	r.send(t, base, "m1", "what time is it?")
	want := r.replies(t, base, 1)
	wantKinds, _ := r.kinds(t, base)
	if want[0] != "reply: The clock answered." {
		t.Fatalf("reference replies %q", want)
	}

	for _, p := range points {
		t.Run(string(p), func(t *testing.T) {
			th := thread(p)
			r.send(t, th, "m1", "what time is it?")
			got := r.replies(t, th, 1)
			if _, err := os.Stat(marker(p)); err != nil {
				t.Fatalf("the bootstrap was never killed at %s: %v", p, err)
			}
			kinds, _ := r.kinds(t, th)
			if !slices.Equal(got, want) || !slices.Equal(kinds, wantKinds) {
				t.Fatalf("after a kill at %s: replies %q, history %v; without a kill: %q, %v", p, got, kinds, want, wantKinds)
			}
		})
	}
	// No message of any of these threads was dead-lettered.
	for _, rc := range r.dlq.All() {
		if strings.Contains(rc.Body, suffix) {
			t.Fatalf("dead-lettered: %s", rc.Body)
		}
	}
}
