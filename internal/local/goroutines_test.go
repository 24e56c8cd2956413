package local

import (
	"context"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	goruntime "runtime"

	"github.com/agentslice/agentslice/internal/runtime"
)

// completionGate holds every first completion until released, so a test can look at
// the system while all its threads are mid-slice.
type completionGate struct {
	runtime.Model
	arrived chan struct{}
	release chan struct{}
}

func (g *completionGate) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	if req.Turn() == 0 {
		g.arrived <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Model.Complete(ctx, req, w)
}

// threadGoroutines counts the goroutines running a thread's slices (the
// System's per-thread drain loop), from a goroutine profile.
func threadGoroutines(t *testing.T) int {
	t.Helper()
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	// Debug level 1 groups identical stacks: "N @ ..." then the frames.
	n := 0
	for _, rec := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(rec, "local.(*System).drain") {
			continue
		}
		// The first record also carries the profile's header line.
		if i := strings.Index(rec, " @ "); i >= 0 {
			rec = rec[strings.LastIndex(rec[:i], "\n")+1:]
		}
		var c int
		for _, ch := range rec {
			if ch < '0' || ch > '9' {
				break
			}
			c = c*10 + int(ch-'0')
		}
		n += c
	}
	return n
}

// TestIdleThreadsOwnNoGoroutine counts the goroutines that run threads:
// one per thread while 50 threads are mid-slice, none once they are idle.
func TestIdleThreadsOwnNoGoroutine(t *testing.T) {
	g := &completionGate{Model: simWithTool(), arrived: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, g)
	const threads = 50
	for i := range threads {
		h.send(user(fmtID("t", i), "u1", "go"))
	}
	timeout := time.After(10 * time.Second)
	for range threads {
		select {
		case <-g.arrived:
		case <-timeout:
			t.Fatal("the threads did not all start a completion")
		}
	}
	if n := threadGoroutines(t); n != threads {
		t.Fatalf("%d thread goroutines while %d threads are mid-slice", n, threads)
	}
	close(g.release)
	h.wait()
	if st := h.store.Stats(); st.Threads != threads {
		t.Fatalf("%d threads stored", st.Threads)
	}
	// Idle is signalled just before the last goroutine returns: wait (on
	// the scheduler, bounded) for the count to reach zero.
	for n := threadGoroutines(t); n != 0; n = threadGoroutines(t) {
		select {
		case <-timeout:
			t.Fatalf("%d thread goroutines left after every thread went idle", n)
		default:
			goruntime.Gosched()
		}
	}
}
