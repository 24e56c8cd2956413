package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Target addresses a crash on the embedded System. Its threads run
// concurrently, and the System hands a thread all the mail waiting for it
// as one batch, so whether two messages arrive in one slice or in two (a
// child's report and its close notice, say) depends on goroutine timing: a
// thread's n-th passage through a point is no steady address. A Target
// names the passage by what its slice was given instead: the Ordinal-th
// passage (from 0) through Site.Point of a slice of Site.Thread whose batch
// held Batch. A crashed run counts the passages through Site from the
// first slice of the thread whose batch holds any message of Batch (so
// also when that mail is split over slices, or merged with other mail), and
// crashes at the Ordinal-th; the work the reference run did in that slice
// was asked for by those messages, so it comes in that slice or after.
type Target struct {
	Site    Site
	Batch   []string // message IDs of the slice's batch, in batch order
	Ordinal int
}

func (t Target) String() string {
	return fmt.Sprintf("%s#%d[%s]", t.Site, t.Ordinal, strings.Join(t.Batch, ","))
}

// holds reports whether batch holds a message of t's batch.
func (t *Target) holds(batch []string) bool {
	for _, id := range batch {
		if slices.Contains(t.Batch, id) {
			return true
		}
	}
	return false
}

// batchTracer is the engine's runtime.Tracer on the System: it traces
// nothing and tells the run's faults each slice's batch as the slice
// starts, before it loads its thread.
type batchTracer struct{ f *faults }

func (b batchTracer) StartSlice(ctx context.Context, threadID string, batch []runtime.Message) (context.Context, runtime.Span) {
	ids := make([]string, len(batch))
	for i, m := range batch {
		ids[i] = m.ID
	}
	b.f.startSlice(threadID, ids)
	return ctx, noSpan{}
}

func (batchTracer) Start(ctx context.Context, name string) (context.Context, runtime.Span) {
	return ctx, noSpan{}
}

func (batchTracer) Traceparent(context.Context) string { return "" }

type noSpan struct{}

func (noSpan) SetString(string, string)    {}
func (noSpan) SetInt(string, int64)        {}
func (noSpan) SetStrings(string, []string) {}
func (noSpan) End(error)                   {}

// startSlice notes the batch of the slice thread starts, and arms the
// target at the first slice of its thread that holds a message of its
// batch.
func (f *faults) startSlice(thread string, ids []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches[thread] = ids
	for s := range f.ordinals {
		if s.Thread == thread {
			delete(f.ordinals, s)
		}
	}
	if t := f.target; t != nil && !f.armed && thread == t.Site.Thread && t.holds(ids) {
		f.armed = true
	}
	if f.begun != nil {
		for _, id := range ids {
			f.begun[id] = true
		}
		close(f.started)
		f.started = make(chan struct{})
	}
}

// splitCloseNotices returns a local.Config.OnSend that holds each close
// notice until its parent has started a slice holding the last report sent
// to it (or 10 s have passed).
func (f *faults) splitCloseNotices() func([]runtime.Message) {
	f.mu.Lock()
	f.begun, f.started = map[string]bool{}, make(chan struct{})
	f.mu.Unlock()
	reports := map[string]string{} // parent -> its last report's ID
	var mu sync.Mutex
	return func(msgs []runtime.Message) {
		for _, m := range msgs {
			if m.Kind != runtime.KindReport {
				continue
			}
			mu.Lock()
			last := reports[m.ThreadID]
			if !m.Final || m.Text != "" {
				reports[m.ThreadID] = m.ID
			}
			mu.Unlock()
			if m.Text != "" || !m.Final || last == "" {
				continue
			}
			timeout := time.After(10 * time.Second)
			for {
				f.mu.Lock()
				begun, started := f.begun[last], f.started
				f.mu.Unlock()
				if begun {
					break
				}
				select {
				case <-started:
				case <-timeout:
					return
				}
			}
		}
	}
}

// PlayOnSystem plays sc on the embedded agent system (internal/local), the
// one developers and the density benchmark run: its per-thread goroutines,
// mailboxes and retry with backoff, instead of this package's driver. With
// target set, the run crashes once there and the System's own retry
// redelivers the batch.
func PlayOnSystem(ctx context.Context, sc *Scenario, b Backend, target *Target) *Run {
	return playOnSystem(ctx, sc, b, target, false)
}

// playOnSystem is PlayOnSystem; with split, a close notice is held in Send
// until its parent has started a slice holding the report sent to it
// before, so the two never share a batch (system_split_test.go).
func playOnSystem(ctx context.Context, sc *Scenario, b Backend, target *Target, split bool) *Run {
	r := newRun(sc, b, CrashFree())
	r.timers.strict = false
	r.f.batches, r.f.ordinals = map[string][]string{}, map[Site]int{}
	// A passage outside any slice of its thread has no batch: its target
	// counts from the run's start.
	r.f.target, r.f.armed = target, target != nil && len(target.Batch) == 0
	cfg := local.Config{Model: r.model, Tools: r.toolbox(crashTimers{inner: r.timers, f: r.f}),
		History: slicedStore(crashHistory{HistoryStore: r.store, f: r.f}, r.store.HistoryStore), Output: &outputs{},
		Observer: systemObserver{r}, Limits: sc.Limits, Logger: slog.New(slog.DiscardHandler),
		SliceAttempts: 5, RetryBase: time.Millisecond, Compaction: sc.Compaction}
	if cfg.Limits.RetryBase == 0 {
		cfg.Limits.RetryBase = time.Millisecond
	}
	if b.Dedup != nil && !sc.NoDedup {
		cfg.Dedup = crashDedup{DedupStore: b.Dedup, f: r.f}
	}
	if split {
		cfg.OnSend = r.f.splitCloseNotices()
	}
	sys, err := local.New(cfg)
	if err != nil {
		r.problem("building the system: %v", err)
		return r
	}
	// The System publishes an error event per dead letter itself, outside
	// any slice (the driver's queue model has no such event): only the
	// engine's publishes are recorded and pass the crash point.
	sys.Engine().Output = crashOutput{inner: r.out, f: r.f}
	sys.Engine().Faults = engineFaults{r.f}
	sys.Engine().Entropy = runtime.FixedEntropy
	sys.Engine().Tracer = batchTracer{r.f}
	sys.Engine().Now = r.now
	if r.ledger != nil {
		sys.Engine().Budgets = &runtime.Budgets{Ledger: crashLedger{inner: r.ledger, f: r.f}, DefaultMaxOutputTokens: budgetMaxOutput}
	}
	if l := sc.Liveness; l != nil {
		ll := *l
		ll.Timers = crashTimers{inner: r.timers, f: r.f}
		sys.Engine().Liveness = &ll
	}
	r.send = sys.Send
	r.settle = func(ctx context.Context) error {
		select {
		case <-sys.Idle():
			return nil
		case <-time.After(20 * time.Second):
			return fmt.Errorf("the system did not go idle; %d threads active", sys.Active())
		}
	}
	if err := sys.Start(ctx); err != nil {
		r.problem("starting the system: %v", err)
		return r
	}
	defer sys.Stop()
	for i, step := range sc.Steps {
		if err := step(ctx, r); err != nil {
			r.problem("step %d: %v", i, err)
			break
		}
		select {
		case <-sys.Idle():
		case <-time.After(20 * time.Second):
			r.problem("step %d: the system did not go idle; %d threads active", i, sys.Active())
			return r
		}
	}
	dead, _ := sys.DeadLetters()
	for _, d := range dead {
		if strings.HasPrefix(d.Reason, "gave up") {
			r.problem("the system gave up on %s: %s", d.Message.ID, d.Reason)
			continue
		}
		r.deadLetter(d.Message.ID, d.Reason)
	}
	return r
}

// systemObserver tells crashed slices from failed ones.
type systemObserver struct{ r *Run }

// Wants reports that only slice ends matter (runtime.EventFilter): the
// engine then times no phase for this observer.
func (o systemObserver) Wants(t runtime.EventType, failed bool) bool {
	return t == runtime.EventSliceFinished
}

func (o systemObserver) Observe(ctx context.Context, ev runtime.Event) {
	if ev.Type != runtime.EventSliceFinished || ev.Reason != "" {
		return
	}
	o.r.mu.Lock()
	o.r.slices++
	o.r.mu.Unlock()
	if ev.Err == nil {
		return
	}
	if o.r.f.takeCrash() {
		o.r.mu.Lock()
		o.r.crashes++
		o.r.mu.Unlock()
		return
	}
	o.r.problem("unexpected slice error on thread %s: %v", ev.ThreadID, ev.Err)
}

// ReferenceOnSystem is Reference on the embedded System; it returns the
// run's passages as Targets.
func ReferenceOnSystem(ctx context.Context, sc *Scenario, nb NewBackend) (*Snapshot, []Target, []string, error) {
	b, done, err := nb()
	if err != nil {
		return nil, nil, nil, err
	}
	defer done()
	r := PlayOnSystem(ctx, sc, b, nil)
	snap, problems := r.Snapshot(ctx)
	r.f.mu.Lock()
	targets := slices.Clone(r.f.passages)
	r.f.mu.Unlock()
	return snap, targets, problems, nil
}

// SystemCrashes is Crashes on the embedded System, at each of targets
// (from ReferenceOnSystem; m.Sites is not used). A planned crash that
// never fires is a problem of its run.
func (m *Matrix) SystemCrashes(ctx context.Context, targets []Target) []Divergence {
	var out []Divergence
	mm := *m
	mm.Sites = make([]Site, len(targets))
	for i, t := range targets {
		mm.Sites[i] = t.Site
	}
	for _, i := range mm.sites() {
		if m.Report.stopped() {
			break
		}
		tg := targets[i]
		b, done, err := m.New()
		if err != nil {
			m.Report.add(m.Scenario.Name, "system-crash/"+m.Backend, tg.String(), nil, nil, []string{"creating the backend: " + err.Error()})
			continue
		}
		r := PlayOnSystem(ctx, m.Scenario, b, &tg)
		snap, problems := r.Snapshot(ctx)
		done()
		problems = Compare(m.Ref, snap, problems)
		_, fired := r.f.state()
		if fired == nil {
			problems = append(problems, fmt.Sprintf("the crash planned at %s never fired", tg))
		}
		if d := m.Report.add(m.Scenario.Name, "system-crash/"+m.Backend, tg.String(), r, fired, problems); d != nil {
			out = append(out, *d)
		}
	}
	return out
}
