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

// Invariant 2: FIFO per thread, parallel across threads, whatever the
// scheduler's settings (priority only picks which thread runs next).
func TestFIFOPerThreadParallelAcrossThreads(t *testing.T) {
	for name, sc := range map[string]SchedulerConfig{
		"default":             {},
		"two_slots":           {Slots: 2},
		"two_slots_fifo":      {Slots: 2, FIFO: true},
		"budget_concurrency2": {Slots: 3, Budget: &Budget{Concurrency: 2, TokensPerMinute: 1 << 20}},
	} {
		t.Run(name, func(t *testing.T) { testFIFOPerThread(t, sc) })
	}
}

func testFIFOPerThread(t *testing.T, sc SchedulerConfig) {
	g := &gate{t: t, inner: &model.Sim{Chunks: 2}, active: map[string]int{}, met: make(chan struct{}), arrived: map[string]bool{}}
	h := newHarness(t, g, func(c *Config) { c.Scheduler = sc })
	b := user("b", "b0", "hello b")
	b.Class = runtime.ClassBackground
	h.send(user("a", "a0", "hello a"), b)
	const n = 40
	for i := range n {
		m := user("fifo", fmt.Sprintf("m%02d", i), fmt.Sprintf("message %02d", i))
		if i%3 == 0 {
			m.Class = runtime.ClassBackground // classes vary; the order must not
		}
		h.send(m)
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

// stepClock is a clock that a model moves forward by step per completion,
// and a model that always calls the synchronous echo tool, so only the
// slice's deadline can end the slice.
type stepClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
	n    int
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *stepClock) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	c.mu.Lock()
	c.now = c.now.Add(c.step)
	c.n++
	done := c.n >= 7
	c.mu.Unlock()
	if done {
		w.Text("done")
		return nil
	}
	w.ToolCall("", "echo", `{}`)
	return nil
}

// Slices of the embedded system are bounded by SliceTimeout: past it
// (less the engine's margin) the slice commits and continues in a new one.
func TestSlicesStopAtTheirDeadline(t *testing.T) {
	clock := &stepClock{now: time.Now(), step: 10 * time.Second}
	h := newHarness(t, clock, func(c *Config) {
		c.Now = clock.Now
		c.SliceTimeout = 25 * time.Second
		c.Limits.DeadlineMargin = time.Second
		c.Limits.MaxCompletions = 100
	})
	h.send(user("t1", "u1", "loop"))
	h.wait()
	items := h.history("t1")
	markers := 0
	for _, it := range items {
		if it.Kind == runtime.ItemMarker {
			markers++
		}
	}
	// 10 s per completion, 24 s usable: three completions per slice, so
	// seven completions take three slices and two continuations.
	if markers != 2 || items[len(items)-1].Text != "done" {
		t.Fatalf("%d continuations, history %s", markers, kinds(items))
	}
}
