package local

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// gate is a model that watches concurrency: it fails the test if two
// completions of one thread overlap, and for threads "a" and "b" it waits
// until both are inside the model at once (proof of parallelism).
type gate struct {
	t       *testing.T
	inner   runtime.Model
	mu      sync.Mutex
	active  map[string]int
	overlap []string
	met     chan struct{}
	once    sync.Once
	arrived map[string]bool
}

func (g *gate) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	g.mu.Lock()
	g.active[req.ThreadID]++
	if g.active[req.ThreadID] > 1 {
		g.overlap = append(g.overlap, req.ThreadID)
	}
	if req.ThreadID == "a" || req.ThreadID == "b" {
		g.arrived[req.ThreadID] = true
		if g.arrived["a"] && g.arrived["b"] {
			g.once.Do(func() { close(g.met) })
		}
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.active[req.ThreadID]--
		g.mu.Unlock()
	}()
	if req.ThreadID == "a" || req.ThreadID == "b" {
		select {
		case <-g.met:
		case <-time.After(5 * time.Second):
			return runtime.Permanent(fmt.Errorf("thread %s never ran alongside the other thread", req.ThreadID))
		}
	}
	return g.inner.Complete(ctx, req, w)
}

// Invariant 2: FIFO per thread, parallel across threads.
func TestFIFOPerThreadParallelAcrossThreads(t *testing.T) {
	g := &gate{t: t, inner: &model.Sim{Chunks: 2}, active: map[string]int{}, met: make(chan struct{}), arrived: map[string]bool{}}
	h := newHarness(t, g)
	h.send(user("a", "a0", "hello a"), user("b", "b0", "hello b"))
	const n = 40
	for i := range n {
		h.send(user("fifo", fmt.Sprintf("m%02d", i), fmt.Sprintf("message %02d", i)))
	}
	h.wait()
	if len(g.overlap) > 0 {
		t.Fatalf("completions of one thread overlapped: %v", g.overlap)
	}
	var got []string
	for _, it := range h.history("fifo") {
		if it.Kind == runtime.ItemUser {
			got = append(got, it.Input)
		}
	}
	if len(got) != n {
		t.Fatalf("%d user items, want %d", len(got), n)
	}
	for i, id := range got {
		if id != fmt.Sprintf("m%02d", i) {
			t.Fatalf("user items out of order: %v", got)
		}
	}
	if errs := h.outputs("error"); len(errs) > 0 {
		t.Fatalf("threads did not run in parallel: %+v", errs)
	}
}

// deadlineModel records whether completions run under a deadline.
type deadlineModel struct {
	runtime.Model
	mu  sync.Mutex
	got []time.Duration
}

func (d *deadlineModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	d.mu.Lock()
	if dl, ok := ctx.Deadline(); ok {
		d.got = append(d.got, time.Until(dl))
	} else {
		d.got = append(d.got, -1)
	}
	d.mu.Unlock()
	return d.Model.Complete(ctx, req, w)
}

// Slices of the embedded system are bounded: a model call runs under the
// slice's deadline (SliceTimeout less the engine's margin).
func TestSlicesRunUnderADeadline(t *testing.T) {
	m := &deadlineModel{Model: &model.Sim{Chunks: 1}}
	h := newHarness(t, m, func(c *Config) {
		c.SliceTimeout = time.Hour
		c.Limits.DeadlineMargin = time.Minute
	})
	h.send(user("t1", "u1", "hi"))
	h.wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.got) != 1 || m.got[0] <= 0 || m.got[0] > time.Hour-time.Minute {
		t.Fatalf("completion deadlines %v, want one within an hour less the margin", m.got)
	}
}
