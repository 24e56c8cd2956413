package local

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// orderModel records the threads in the order their completions start. The
// first completion waits until the test opens hold, so the test can queue
// work behind it; onCall, when set, runs at the start of every completion.
type orderModel struct {
	inner   runtime.Model
	hold    chan struct{}
	entered chan struct{}
	onCall  func(thread string)

	mu       sync.Mutex
	order    []string
	inFlight int
	maxIn    int
	full     chan struct{} // closed when inFlight reaches fullAt
	fullAt   int
	release  chan struct{} // calls wait on it once full has been signalled
}

func (m *orderModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	m.mu.Lock()
	first := len(m.order) == 0
	m.order = append(m.order, req.ThreadID)
	m.inFlight++
	m.maxIn = max(m.maxIn, m.inFlight)
	if m.full != nil && m.inFlight == m.fullAt {
		close(m.full)
		m.full = nil
	}
	release := m.release
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.inFlight--
		m.mu.Unlock()
	}()
	if m.onCall != nil {
		m.onCall(req.ThreadID)
	}
	if first && m.hold != nil {
		close(m.entered)
		select {
		case <-m.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if release != nil {
		select {
		case <-release:
		case <-time.After(10 * time.Second):
			return runtime.Permanent(fmt.Errorf("never released"))
		}
	}
	return m.inner.Complete(ctx, req, w)
}

func (m *orderModel) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.order)
}

func classed(thread, id string, c runtime.Class) runtime.Message {
	m := user(thread, id, "work "+id)
	m.Class = c
	return m
}

// With one slot busy, interactive threads that became ready after
// background ones still run first.
func TestInteractiveFirstUnderContention(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			m := &orderModel{inner: &model.Sim{Chunks: 1}, hold: make(chan struct{}), entered: make(chan struct{})}
			h := newHarness(t, m, func(c *Config) { c.Scheduler = SchedulerConfig{Slots: 1, FIFO: fifo} })
			h.send(classed("bg0", "b0", runtime.ClassBackground))
			<-m.entered
			for i := 1; i <= 3; i++ {
				h.send(classed(fmt.Sprintf("bg%d", i), fmt.Sprintf("b%d", i), runtime.ClassBackground))
			}
			h.send(classed("i1", "x1", runtime.ClassInteractive), classed("i2", "x2", runtime.ClassInteractive))
			close(m.hold)
			h.wait()
			want := []string{"bg0", "i1", "i2", "bg1", "bg2", "bg3"}
			if fifo {
				want = []string{"bg0", "bg1", "bg2", "bg3", "i1", "i2"}
			}
			if got := m.calls(); !slices.Equal(got, want) {
				t.Fatalf("completions ran in order %v, want %v", got, want)
			}
		})
	}
}

// An interactive flood that never lets up cannot starve background work:
// a background thread queued behind it starts within 1/share picks.
func TestInteractiveFloodCannotStarveBackground(t *testing.T) {
	m := &orderModel{inner: &model.Sim{Chunks: 1}, hold: make(chan struct{}), entered: make(chan struct{})}
	var h *harness
	const flood = 100
	var mu sync.Mutex
	sent := 1
	// Every interactive completion makes two more interactive threads
	// ready, so interactive work always waits while the flood lasts.
	m.onCall = func(thread string) {
		if thread == "bg" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for range 2 {
			if sent < flood {
				id := fmt.Sprintf("i%03d", sent)
				sent++
				if err := h.sys.Send(context.Background(), classed(id, id, runtime.ClassInteractive)); err != nil {
					t.Error(err)
				}
			}
		}
	}
	h = newHarness(t, m, func(c *Config) { c.Scheduler = SchedulerConfig{Slots: 1, BackgroundShare: 0.25} })
	h.send(classed("i000", "i000", runtime.ClassInteractive))
	<-m.entered
	h.send(classed("bg", "bg", runtime.ClassBackground))
	close(m.hold)
	h.wait()
	got := m.calls()
	if len(got) != flood+1 {
		t.Fatalf("%d completions, want %d", len(got), flood+1)
	}
	at := slices.Index(got, "bg")
	// bg was queued while i000 ran; of the contested picks after that, the
	// fourth goes to background (share 0.25).
	if at < 1 || at > 4 {
		t.Fatalf("background thread ran as completion %d of %d; want within the first 4 picks after it was queued", at, len(got))
	}
}

// The per-model concurrency budget holds however many slots there are.
func TestBudgetBoundsConcurrentModelCalls(t *testing.T) {
	m := &orderModel{inner: &model.Sim{Chunks: 1}, full: make(chan struct{}), fullAt: 3, release: make(chan struct{})}
	full := m.full
	h := newHarness(t, m, func(c *Config) {
		c.Scheduler = SchedulerConfig{Slots: 20, Budget: &Budget{Concurrency: 3}}
	})
	waits := make(chan struct{}, 100)
	h.sys.budget.mu.Lock()
	h.sys.budget.onWait = func() { waits <- struct{}{} }
	h.sys.budget.mu.Unlock()
	for i := range 30 {
		c := runtime.ClassInteractive
		if i%2 == 1 {
			c = runtime.ClassBackground
		}
		h.send(classed(fmt.Sprintf("t%02d", i), fmt.Sprintf("m%02d", i), c))
	}
	select {
	case <-full:
	case <-time.After(10 * time.Second):
		t.Fatal("three calls never ran at once")
	}
	// Hold the three until the other 17 slices that have a slot wait for
	// the budget, so the budget is what holds them.
	for range 17 {
		select {
		case <-waits:
		case <-time.After(10 * time.Second):
			t.Fatal("calls did not queue for the budget")
		}
	}
	close(m.release)
	h.wait()
	m.mu.Lock()
	maxIn, n := m.maxIn, len(m.order)
	m.mu.Unlock()
	if n != 30 || maxIn != 3 {
		t.Fatalf("%d calls, at most %d at once; want 30 calls, at most 3 at once", n, maxIn)
	}
	if st := h.sys.budget.Stats(); st.MaxInFlight != 3 || st.Calls != 30 || st.Waited == 0 {
		t.Fatalf("budget stats %+v: want 30 calls, 3 at most in flight, some waiting", st)
	}
}

// The token budget admits calls while the bucket holds their estimate and
// refills by the clock; a call that does not fit waits rather than being
// sent. (Calls are bounded, completeWithin: a refill that never comes
// fails by assertion instead of hanging.)
func TestBudgetTokensPerMinute(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	calls := 0
	inner := modelFunc(func(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
		calls++
		w.Usage(runtime.Usage{Input: 70, Output: 30})
		return nil
	})
	g, err := Budgeted(inner, Budget{TokensPerMinute: 600, EstimateTokens: 100, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	req := &runtime.CompletionRequest{ThreadID: "t"}
	for i := range 6 {
		if err := completeWithin(t, g, context.Background(), req); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := completeWithin(t, g, ctx, req); err == nil || calls != 6 {
		t.Fatalf("seventh call in the same minute: err %v, %d calls reached the model; want it held back", err, calls)
	}
	mu.Lock()
	now = now.Add(10 * time.Second) // 100 tokens at 600 a minute
	mu.Unlock()
	if err := completeWithin(t, g, context.Background(), req); err != nil || calls != 7 {
		t.Fatalf("after the refill: err %v, %d calls; want the call through", err, calls)
	}
	if st := g.Stats(); st.Calls != 7 {
		t.Fatalf("stats %+v: want 7 calls", st)
	}
}

type modelFunc func(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error

func (f modelFunc) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	return f(ctx, req, w)
}

type discardTurn struct{}

func (discardTurn) Text(string)             {}
func (discardTurn) Reasoning(string)        {}
func (discardTurn) ToolCall(_, _, _ string) {}
func (discardTurn) Usage(runtime.Usage)     {}

func TestSchedulerConfigIsChecked(t *testing.T) {
	for _, c := range []SchedulerConfig{
		{BackgroundShare: 1},
		{BackgroundShare: -0.5},
		{Budget: &Budget{Concurrency: -1}},
		{Budget: &Budget{TokensPerMinute: 100, EstimateTokens: 1000}},
	} {
		if _, err := New(Config{Model: &model.Sim{}, Tools: runtime.NewToolbox(), Scheduler: c}); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// gatedStore holds every commit until release is closed, and reports
// through CommitsWaitForDisk that its commits wait (like the disk store's
// fsync).
type gatedStore struct {
	*HistoryStore
	waits   bool
	release chan struct{}

	mu       sync.Mutex
	inFlight int
	reached  chan struct{} // closed when inFlight reaches at
	at       int
}

func (g *gatedStore) CommitsWaitForDisk() bool { return g.waits }

func (g *gatedStore) Commit(ctx context.Context, c *runtime.Commit) error {
	g.mu.Lock()
	g.inFlight++
	if g.inFlight == g.at {
		close(g.reached)
	}
	g.mu.Unlock()
	<-g.release
	return g.HistoryStore.Commit(ctx, c)
}

// A store whose commits wait for the disk gets more slots by default: more
// slices wait in Commit at once than the 64 per core a memory store gets,
// so one fsync can carry their commits together.
func TestDiskWaitingStoreGetsMoreSlots(t *testing.T) {
	cores := goruntime.GOMAXPROCS(0)
	for _, waits := range []bool{false, true} {
		g := &gatedStore{HistoryStore: NewHistoryStore(), waits: waits, release: make(chan struct{}),
			reached: make(chan struct{}), at: 64*cores + 1}
		h := newHarness(t, &model.Sim{Chunks: 1}, func(c *Config) { c.History = g })
		want := 64 * cores
		if waits {
			want = 512 * cores
		}
		if got := h.sys.cfg.Scheduler.Slots; got != want {
			t.Fatalf("CommitsWaitForDisk %v: %d slots by default, want %d", waits, got, want)
		}
		if !waits {
			close(g.release)
			continue
		}
		for i := range g.at {
			h.send(user(fmt.Sprintf("t%04d", i), "m", "hello"))
		}
		select {
		case <-g.reached:
		case <-time.After(30 * time.Second):
			g.mu.Lock()
			n := g.inFlight
			g.mu.Unlock()
			t.Fatalf("only %d commits waited at once; want %d", n, g.at)
		}
		close(g.release)
		h.wait()
	}
}

// While both classes wait, background gets its share of the picks, no
// more and no less, and never two picks in a row at a share under a half:
// with a share of a quarter, one pick in four of a hundred.
func TestPickerGivesBackgroundItsShare(t *testing.T) {
	p := picker{capacity: 1, share: 0.25}
	picks, last := [2]int{}, ci
	for range 100 {
		c := p.next([2]bool{true, true}, ci)
		if c < 0 {
			t.Fatal("a free unit and both classes waiting: no pick")
		}
		p.took(c, true)
		p.running[c]-- // the call ends before the next pick
		picks[c]++
		if c == cb && last == cb {
			t.Fatalf("background picked twice in a row after %d picks", picks[ci]+picks[cb])
		}
		last = c
	}
	if picks[cb] != 25 {
		t.Fatalf("background got %d of 100 contested picks, want 25 (its share of a quarter)", picks[cb])
	}
}

// A queue that never drains (a class with work always waiting) still
// reuses its array: it compacts once most of it is popped, so what it holds
// stays bounded by what is queued, not by what ever went through it, and
// it keeps its order. (With the compaction never taken, the array grew by
// every item pushed.)
func TestFifoQueueStaysBoundedWhileNeverEmpty(t *testing.T) {
	var q fifoQueue[int]
	q.push(0)
	for i := 1; i <= 100_000; i++ {
		q.push(i)
		if got := q.pop(); got != i-1 {
			t.Fatalf("pop %d returned %d; want %d (first in, first out)", i, got, i-1)
		}
		if q.len() != 1 {
			t.Fatalf("after %d pushes and pops the queue holds %d; want 1", i, q.len())
		}
	}
	if n := len(q.items); n > 4096 {
		t.Fatalf("a queue holding one item keeps an array of %d after 100000 went through; want it compacted (at most 4096)", n)
	}
}
