package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Report tallies runs across scenarios, modes and backends. It is safe for
// concurrent use by parallel tests.
type Report struct {
	mu          sync.Mutex
	points      map[runtime.CrashPoint]int // crash runs per point
	scenarios   map[string]bool
	runs        int
	modes       map[string]int
	divergences []Divergence
	// fired records, per scenario, the crash points a planned crash
	// fired at.
	fired map[string]map[runtime.CrashPoint]bool
	// skipped counts, per mode, the runs whose planned disturbance did not
	// happen (a second crash past the end, a held batch no mail joined):
	// they are not counted as runs.
	skipped  map[string]int
	failFast bool
	notes    []string
	// evidence that the recovery paths ran
	slices, crashes, redispatches, resends, conflicts, merges, deadMoves, kicks int
}

// FailFast makes the modes stop at the first divergence (a mutant run
// needs one, not all).
func (rep *Report) FailFast() {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	rep.failFast = true
}

// stopped reports whether a fail-fast report has a divergence.
func (rep *Report) stopped() bool {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	return rep.failFast && len(rep.divergences) > 0
}

// NewReport returns an empty report.
func NewReport() *Report {
	return &Report{points: map[runtime.CrashPoint]int{}, scenarios: map[string]bool{}, modes: map[string]int{},
		fired: map[string]map[runtime.CrashPoint]bool{}, skipped: map[string]int{}}
}

// skip records a run whose planned disturbance did not happen; its
// problems, if any, still count.
func (rep *Report) skip(sc, mode, run string, r *Run, problems []string) *Divergence {
	if len(problems) > 0 {
		return rep.add(sc, mode, run, r, nil, problems)
	}
	rep.mu.Lock()
	defer rep.mu.Unlock()
	rep.skipped[mode]++
	return nil
}

// Coverage checks that every crash point fired in some scenario and that
// every scenario crashed at each point it declares (Scenario.Reach); each
// miss is a divergence. Only scenarios that ran crash runs are checked.
func (rep *Report) Coverage(scenarios []*Scenario) []Divergence {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	var out []Divergence
	any := map[runtime.CrashPoint]bool{}
	for _, sc := range scenarios {
		fired, ok := rep.fired[sc.Name]
		if !ok {
			continue
		}
		var missed []string
		for _, p := range sc.Reach {
			if !fired[p] {
				missed = append(missed, fmt.Sprintf("declared crash point %s never fired", p))
			}
		}
		for p := range fired {
			any[p] = true
		}
		if len(missed) > 0 {
			out = append(out, Divergence{Scenario: sc.Name, Run: "coverage", Problems: missed})
		}
	}
	if len(rep.fired) > 0 {
		var missed []string
		for _, p := range Points {
			if !any[p] {
				missed = append(missed, fmt.Sprintf("crash point %s never fired in any scenario", p))
			}
		}
		if len(missed) > 0 {
			out = append(out, Divergence{Scenario: "(all)", Run: "coverage", Problems: missed})
		}
	}
	rep.divergences = append(rep.divergences, out...)
	return out
}

func (rep *Report) add(sc, mode, run string, r *Run, crashed *Site, problems []string) *Divergence {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if r != nil {
		r.mu.Lock()
		rep.slices += r.slices
		rep.crashes += r.crashes
		rep.conflicts += r.conflicts
		seen := map[string]bool{}
		for _, inv := range r.dispatches {
			k := inv.ThreadID + " " + inv.CallID
			if seen[k] {
				rep.redispatches++
			}
			seen[k] = true
		}
		rep.resends += r.resends
		rep.merges += r.merges
		rep.deadMoves += r.deadMoves
		rep.kicks += r.kicks
		r.mu.Unlock()
	}
	rep.scenarios[sc] = true
	rep.runs++
	rep.modes[mode]++
	if crashed != nil {
		rep.points[crashed.Point]++
		if rep.fired[sc] == nil {
			rep.fired[sc] = map[runtime.CrashPoint]bool{}
		}
		rep.fired[sc][crashed.Point] = true
	}
	if len(problems) == 0 {
		return nil
	}
	d := Divergence{Scenario: sc, Run: mode + " " + run, Problems: problems}
	rep.divergences = append(rep.divergences, d)
	return &d
}

// Add records a run the caller made itself (a reference run, a
// comparison of references) and its problems, if any: a failed reference
// counts as a divergence like any other.
func (rep *Report) Add(sc, mode, run string, problems []string) *Divergence {
	return rep.add(sc, mode, run, nil, nil, problems)
}

// Divergences returns the runs that diverged.
func (rep *Report) Divergences() []Divergence {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	return slices.Clone(rep.divergences)
}

// Line is the summary `make chaos` ends with: the distinct crash points a
// run was killed at, the scenarios, the runs and the divergences.
func (rep *Report) Line() string {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	return fmt.Sprintf("crash points: %d, scenarios: %d, runs: %d, divergences: %d",
		len(rep.points), len(rep.scenarios), rep.runs, len(rep.divergences))
}

// Details lists runs per mode and crash runs per point.
func (rep *Report) Details() string {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	var b strings.Builder
	for _, n := range rep.notes {
		b.WriteString(n + "\n")
	}
	modes := make([]string, 0, len(rep.modes))
	for m := range rep.modes {
		modes = append(modes, m)
	}
	slices.Sort(modes)
	b.WriteString("runs per mode:")
	for _, m := range modes {
		fmt.Fprintf(&b, " %s=%d", m, rep.modes[m])
	}
	b.WriteString("\ncrash runs per point:")
	for _, p := range Points {
		fmt.Fprintf(&b, " %s=%d", p, rep.points[p])
	}
	skipped := make([]string, 0, len(rep.skipped))
	for m := range rep.skipped {
		skipped = append(skipped, m)
	}
	slices.Sort(skipped)
	b.WriteString("\nnot counted (the planned disturbance did not happen):")
	for _, m := range skipped {
		fmt.Fprintf(&b, " %s=%d", m, rep.skipped[m])
	}
	fmt.Fprintf(&b, "\nrecovery evidence: %d slices, %d killed, %d lost a race (ErrConflict), %d calls dispatched again, %d messages delivered again, %d crashed batches redelivered with newer mail, %d batches dead-lettered, %d threads kicked after a restart",
		rep.slices, rep.crashes, rep.conflicts, rep.redispatches, rep.resends, rep.merges, rep.deadMoves, rep.kicks)
	return b.String()
}

// NewBackend returns fresh, empty stores for one run, and a function that
// releases them.
type NewBackend func() (Backend, func(), error)

// Reference plays sc crash-free and returns its snapshot and the crash
// points its slices passed, in order. Its problems are invariant violations
// of the crash-free run itself.
func Reference(ctx context.Context, sc *Scenario, nb NewBackend) (*Snapshot, []Site, []string, error) {
	b, done, err := nb()
	if err != nil {
		return nil, nil, nil, err
	}
	defer done()
	r := Play(ctx, sc, b, CrashFree())
	snap, problems := r.Snapshot(ctx)
	sites, _ := r.f.state()
	return snap, sites, problems, nil
}

// Matrix runs one scenario's disturbed runs on one backend and compares
// each with the reference.
type Matrix struct {
	Scenario *Scenario
	Backend  string // its name, for the report
	New      NewBackend
	Ref      *Snapshot
	Sites    []Site
	Report   *Report
	// Sample, when above 1, runs only every Sample-th site from Offset
	// (and the first passage of each point, and the last), for a fast
	// subset; 0 or 1 runs every site.
	Sample, Offset int
}

func (m *Matrix) sites() []int {
	var out []int
	if m.Report.stopped() {
		return nil
	}
	first := map[runtime.CrashPoint]bool{}
	for i, s := range m.Sites {
		// The first passage of each point is always kept, so a sampled
		// matrix still reaches every point the scenario passes.
		keep := m.Sample <= 1 || i%m.Sample == m.Offset%m.Sample || i == len(m.Sites)-1 || !first[s.Point]
		first[s.Point] = true
		if keep {
			out = append(out, i)
		}
	}
	return out
}

func (m *Matrix) play(ctx context.Context, plan Plan) (*Run, []string) {
	b, done, err := m.New()
	if err != nil {
		return nil, []string{"creating the backend: " + err.Error()}
	}
	defer done()
	r := Play(ctx, m.Scenario, b, plan)
	snap, problems := r.Snapshot(ctx)
	if plan.relaxed() {
		// Batching differs from the reference's: the End and the
		// invariants (in problems) are what the run is held to.
		return r, problems
	}
	return r, Compare(m.Ref, snap, problems)
}

// Crashes kills the scenario once at every site, in a run of its own, and
// lets redelivery finish the work.
func (m *Matrix) Crashes(ctx context.Context) []Divergence {
	var out []Divergence
	for _, i := range m.sites() {
		if m.Report.stopped() {
			break
		}
		want := m.Sites[i]
		r, problems := m.play(ctx, Plan{CrashAt: i, HookAt: NoCrash})
		var fired *Site
		if r != nil {
			_, fired = r.f.state()
			switch {
			case fired == nil:
				problems = append(problems, fmt.Sprintf("the crash planned at passage %d (%s) never fired: the run is not deterministic", i, want))
			case *fired != want:
				problems = append(problems, fmt.Sprintf("the crash planned at passage %d (%s) fired at %s: the run is not deterministic", i, want, fired))
			}
		}
		if d := m.Report.add(m.Scenario.Name, "crash/"+m.Backend, fmt.Sprintf("#%d %s", i, want), r, fired, problems); d != nil {
			out = append(out, *d)
		}
	}
	return out
}

// DoubleCrashes kills the scenario at every site and again `after`
// passages later, for each after in 1..depth: the second crash lands in the
// slice that recovers from the first.
func (m *Matrix) DoubleCrashes(ctx context.Context, depth int) []Divergence {
	var out []Divergence
	for _, i := range m.sites() {
		if m.Report.stopped() {
			break
		}
		for after := 1; after <= depth; after++ {
			r, problems := m.play(ctx, Plan{CrashAt: i, CrashAgain: after, HookAt: NoCrash})
			var fired *Site
			if r != nil {
				_, fired = r.f.state()
				if r.f.secondSite() == nil {
					// The run ended before the second crash: not a double crash.
					if d := m.Report.skip(m.Scenario.Name, "double-crash/"+m.Backend, fmt.Sprintf("#%d+%d", i, after), r, problems); d != nil {
						out = append(out, *d)
					}
					continue
				}
			}
			if d := m.Report.add(m.Scenario.Name, "double-crash/"+m.Backend, fmt.Sprintf("#%d+%d", i, after), r, fired, problems); d != nil {
				out = append(out, *d)
			}
		}
	}
	return out
}

// Redeliveries plays the scenario with every message delivered 2–3 times,
// duplicates arriving after later messages, once per seed.
func (m *Matrix) Redeliveries(ctx context.Context, seeds []uint64) []Divergence {
	var out []Divergence
	for _, seed := range seeds {
		if m.Report.stopped() {
			break
		}
		r, problems := m.play(ctx, Plan{CrashAt: NoCrash, HookAt: NoCrash, Duplicates: &Duplicates{Seed: seed, MaxDelay: 6}})
		if d := m.Report.add(m.Scenario.Name, "redelivery/"+m.Backend, fmt.Sprintf("seed %d", seed), r, nil, problems); d != nil {
			out = append(out, *d)
		}
	}
	return out
}

// CrashesWithRedelivery combines both: a crash at every site of a run in
// which every message is also delivered 2–3 times. The passages differ from
// the reference's once duplicates arrive, so a site here is only a number.
func (m *Matrix) CrashesWithRedelivery(ctx context.Context) []Divergence {
	var out []Divergence
	for _, i := range m.sites() {
		if m.Report.stopped() {
			break
		}
		r, problems := m.play(ctx, Plan{CrashAt: i, HookAt: NoCrash, Duplicates: &Duplicates{Seed: uint64(i) + 1, MaxDelay: 6}})
		var fired *Site
		if r != nil {
			if _, fired = r.f.state(); fired == nil {
				if d := m.Report.skip(m.Scenario.Name, "crash+redelivery/"+m.Backend, fmt.Sprintf("#%d", i), r, problems); d != nil {
					out = append(out, *d)
				}
				continue
			}
		}
		if d := m.Report.add(m.Scenario.Name, "crash+redelivery/"+m.Backend, fmt.Sprintf("#%d", i), r, fired, problems); d != nil {
			out = append(out, *d)
		}
	}
	return out
}

// Races starts a duplicate slice of the same batch at every site, as when a
// visibility timeout expires mid-slice: the duplicate runs to its end while
// the first slice is stopped at the site, then the first goes on. Exactly
// one of them commits the batch; the other commits nothing of it (it fails
// with runtime.ErrConflict, or finds the batch processed), and the failed
// batch is redelivered and deduplicated. With greedy set, the duplicate's
// batch also takes the messages that reached the thread since (the batch
// of a redelivery need not equal the first one); they stay in the mailbox
// too, so they are delivered twice.
func (m *Matrix) Races(ctx context.Context, greedy bool) []Divergence {
	mode := "race"
	if greedy {
		mode = "race-greedy"
	}
	return m.races(ctx, mode, greedy, 0)
}

// SupersetRaces is Races with batches that differ: the driver hands each
// slice one message at a time, and the duplicate started at every site
// takes the first slice's message and every one waiting behind it (up to
// ten) or, when none waits, the message the thread was handed before, so
// the redelivery that races the original carries more than it.
// Only runs whose duplicate's batch was larger are counted; their batching
// differs from the reference's, so they are held to the scenario's End
// and the invariants (as HeldCrashes).
func (m *Matrix) SupersetRaces(ctx context.Context) []Divergence {
	return m.races(ctx, "race-superset", true, 1)
}

func (m *Matrix) races(ctx context.Context, mode string, greedy bool, maxBatch int) []Divergence {
	var out []Divergence
	for _, i := range m.sites() {
		if m.Report.stopped() {
			break
		}
		want := m.Sites[i]
		var raced, grew bool
		var dupErr error
		hook := func(r *Run, s Site) {
			raced = true
			in := r.current
			in.Messages = slices.Clone(in.Messages)
			if greedy {
				for _, d := range r.boxes[in.ThreadID] {
					if len(in.Messages) < 10 {
						in.Messages = append(in.Messages, d.msg)
					}
				}
			}
			if maxBatch == 1 && len(in.Messages) == 1 {
				// No mail waits: the redelivery also carries the message
				// the thread was handed before this one, again (a sender's
				// retry that joined the batch).
				if prev, ok := r.previous[in.ThreadID]; ok && prev.ID != in.Messages[0].ID {
					in.Messages = append([]runtime.Message{prev}, in.Messages...)
				}
			}
			grew = len(in.Messages) > len(r.current.Messages)
			in.FirstDelivery = false
			res, err := r.DuplicateEngine().RunSlice(ctx, in)
			dupErr = err
			if res != nil {
				for _, rej := range res.Rejected {
					r.deadLetter(rej.ID, rej.Err.Error())
				}
			}
		}
		plan := Plan{CrashAt: NoCrash, HookAt: i, Hook: hook, AllowConflicts: true, MaxBatch: maxBatch, OneByOne: maxBatch == 1}
		r, problems := m.play(ctx, plan)
		if !raced {
			problems = append(problems, fmt.Sprintf("the duplicate slice planned at passage %d (%s) never started", i, want))
		}
		if dupErr != nil && !errors.Is(dupErr, runtime.ErrConflict) {
			problems = append(problems, fmt.Sprintf("the duplicate slice failed with something other than a conflict: %v", dupErr))
		}
		run := fmt.Sprintf("#%d %s", i, want)
		if plan.OneByOne && !grew {
			if d := m.Report.skip(m.Scenario.Name, mode+"/"+m.Backend, run, r, problems); d != nil {
				out = append(out, *d)
			}
			continue
		}
		if d := m.Report.add(m.Scenario.Name, mode+"/"+m.Backend, run, r, nil, problems); d != nil {
			out = append(out, *d)
		}
	}
	return out
}

// HeldCrashes kills the scenario once at every site and, when the killed
// slice had committed, holds its batch until more mail reaches the thread,
// then redelivers both together (Plan.HoldCrashed). Batching then differs
// from the reference's, so a run is held to the scenario's End and the
// invariants. Runs where no mail joined the held batch are not counted.
func (m *Matrix) HeldCrashes(ctx context.Context) []Divergence {
	return m.crashEverySite(ctx, "crash+held",
		func(i int) Plan { return Plan{CrashAt: i, HookAt: NoCrash, HoldCrashed: true} },
		func(r *Run) bool { return r.merges > 0 })
}

// DeadLetters kills the scenario once at every site and, when the killed
// slice had committed, fails its batch on every receive until the n-th,
// when it goes to the dead-letter queue; the thread goes on with its next
// message as a first delivery, and the dead letters are redriven at the
// end (Plan.DeadLetterAfter). Held to the scenario's End and the
// invariants; runs where nothing was dead-lettered are not counted.
func (m *Matrix) DeadLetters(ctx context.Context, n int) []Divergence {
	return m.crashEverySite(ctx, "dead-letter",
		func(i int) Plan { return Plan{CrashAt: i, HookAt: NoCrash, DeadLetterAfter: n} },
		func(r *Run) bool { return r.deadMoves > 0 })
}

// crashEverySite plays plan(i) at every sampled site and holds each run to
// the scenario's End and the invariants. A run in which the planned
// disturbance did not happen (happened false) is not counted as a run.
func (m *Matrix) crashEverySite(ctx context.Context, mode string, plan func(site int) Plan, happened func(*Run) bool) []Divergence {
	var out []Divergence
	mode += "/" + m.Backend
	for _, i := range m.sites() {
		if m.Report.stopped() {
			break
		}
		r, problems := m.play(ctx, plan(i))
		run := fmt.Sprintf("#%d %s", i, m.Sites[i])
		if r == nil || !happened(r) {
			if d := m.Report.skip(m.Scenario.Name, mode, run, r, problems); d != nil {
				out = append(out, *d)
			}
			continue
		}
		_, fired := r.f.state()
		if d := m.Report.add(m.Scenario.Name, mode, run, r, fired, problems); d != nil {
			out = append(out, *d)
		}
	}
	return out
}
