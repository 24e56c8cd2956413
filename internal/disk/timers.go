package disk

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Timers is the durable runtime.Timers: an armed timer (a sleep's wake-up,
// a liveness check, a provider wait) is a row (thread, timer key, time,
// message) as well as an in-process timer. A timer that fires sends its
// message through Queue and then removes its row (by its key, which for a
// check or a provider wait is not the message's call ID); Rearm arms every
// stored row again after a restart (one whose time has passed fires at
// once).
//
// With a Horizon, only the timers due within it are armed in memory: a
// timer due later is only its row until the due-time index brings it in
// (advance, every Horizon/2 of the clock), so that a million sleeping
// agents hold no million timers and a restart reads only the rows due
// soon (Rearm).
type Timers struct {
	d     *DB
	inner *local.Timers
	clock local.Clock
	// Queue receives wake-ups. Set it before anything is scheduled.
	Queue runtime.Queue
	// Horizon, when positive and set before Rearm, arms only the timers
	// due before the clock's now plus Horizon.
	Horizon time.Duration

	mu      sync.Mutex
	lazy    bool  // Rearm ran with a Horizon: rows due after edge are not armed
	edge    int64 // UnixNano: every row due at or before it is armed
	next    local.Stopper
	stopped bool
}

var _ runtime.Timers = (*Timers)(nil)

// Timers returns durable timers on the wall clock delivering to q (which
// may be set later through the Queue field).
func (d *DB) Timers(q runtime.Queue) *Timers { return d.TimersOn(q, nil) }

// TimersOn returns durable timers whose in-process timers are armed on
// clock c (nil: local.RealClock), as a test harness that moves its own
// time needs. Rows hold each timer's time, so after a restart Rearm arms
// them again on whatever clock the new timers have.
func (d *DB) TimersOn(q runtime.Queue, c local.Clock) *Timers {
	if c == nil {
		c = local.RealClock
	}
	t := &Timers{d: d, Queue: q, clock: c}
	t.inner = local.NewTimersOn(fireQueue{t}, c)
	t.inner.Fired = t.fired
	return t
}

// fireQueue delivers a fired timer's message to Queue (set after the
// timers are built). A message Queue refuses keeps its row: the next start
// re-arms it.
type fireQueue struct{ t *Timers }

func (f fireQueue) Send(ctx context.Context, msgs ...runtime.Message) error {
	return f.t.Queue.Send(ctx, msgs...)
}

// fired forgets the row of a timer whose message was delivered.
func (t *Timers) fired(tm runtime.Timer) {
	_ = t.d.w.submit(&wreq{fn: func(w *wconn) error {
		_, err := w.exec(`DELETE FROM timers WHERE thread = ? AND call = ?`, tm.ThreadID, tm.CallID)
		return err
	}})
}

// Schedule stores the timer durably, then arms it.
func (t *Timers) Schedule(ctx context.Context, tm runtime.Timer) error {
	body, err := json.Marshal(&tm.Message)
	if err != nil {
		return fmt.Errorf("disk: encoding the wake-up of %s/%s: %w", tm.ThreadID, tm.CallID, err)
	}
	err = t.d.w.do(ctx, &wreq{fn: func(w *wconn) error {
		_, err := w.exec(`INSERT INTO timers (thread, call, at, body) VALUES (?, ?, ?, ?)
			ON CONFLICT (thread, call) DO UPDATE SET at = excluded.at, body = excluded.body`, tm.ThreadID, tm.CallID, tm.At.UnixNano(), body)
		return err
	}})
	if err != nil {
		return fmt.Errorf("disk: storing the timer of %s/%s: %w", tm.ThreadID, tm.CallID, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lazy && tm.At.UnixNano() > t.edge {
		// advance arms it when it comes within the horizon (it reads the
		// row, committed above); a replaced earlier time is disarmed.
		return t.inner.Cancel(ctx, tm.ThreadID, tm.CallID)
	}
	return t.inner.Schedule(ctx, tm)
}

// Cancel disarms the timer and forgets it.
func (t *Timers) Cancel(ctx context.Context, threadID, callID string) error {
	if err := t.inner.Cancel(ctx, threadID, callID); err != nil {
		return err
	}
	err := t.d.w.do(ctx, &wreq{fn: func(w *wconn) error {
		_, err := w.exec(`DELETE FROM timers WHERE thread = ? AND call = ?`, threadID, callID)
		return err
	}})
	if err != nil {
		return fmt.Errorf("disk: forgetting the timer of %s/%s: %w", threadID, callID, err)
	}
	return nil
}

// Rearmed counts the timers Rearm armed, by what their message does.
type Rearmed struct {
	Sleeps  int // wake-ups of sleeping calls
	Checks  int // liveness checks of dispatched calls
	Retries int // ends of provider waits
	Other   int
	// Later counts the rows due after the horizon (Timers.Horizon), not
	// armed yet, of any kind.
	Later int
}

// Total is the number of timers armed.
func (r Rearmed) Total() int { return r.Sleeps + r.Checks + r.Retries + r.Other }

func (r *Rearmed) count(k runtime.Kind) {
	switch k {
	case runtime.KindWake:
		r.Sleeps++
	case runtime.KindCheck:
		r.Checks++
	case runtime.KindRetry:
		r.Retries++
	default:
		r.Other++
	}
}

// Rearm arms every stored timer (after a restart), or with a Horizon
// those due within it, and returns how many of each kind.
func (t *Timers) Rearm(ctx context.Context) (Rearmed, error) {
	var n Rearmed
	if t.Horizon <= 0 {
		err := t.arm(ctx, `SELECT thread, call, at, body FROM timers ORDER BY at`, nil, &n)
		return n, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	edge := t.clock.Now().Add(t.Horizon).UnixNano()
	if err := t.arm(ctx, `SELECT thread, call, at, body FROM timers WHERE at <= ? ORDER BY at`, []any{edge}, &n); err != nil {
		return n, err
	}
	if err := t.d.rdb.QueryRowContext(ctx, `SELECT count(*) FROM timers WHERE at > ?`, edge).Scan(&n.Later); err != nil {
		return n, fmt.Errorf("disk: counting stored timers: %w", err)
	}
	t.lazy, t.edge = true, edge
	if !t.stopped {
		t.next = t.clock.AfterFunc(t.Horizon/2, t.advance)
	}
	return n, nil
}

// advance arms the rows that came within the horizon since the last
// time, and comes back in half a horizon.
func (t *Timers) advance() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	edge := t.clock.Now().Add(t.Horizon).UnixNano()
	var n Rearmed
	err := t.arm(context.Background(), `SELECT thread, call, at, body FROM timers WHERE at > ? AND at <= ? ORDER BY at`, []any{t.edge, edge}, &n)
	if err != nil {
		// The rows stay; the next round reads them again.
		t.d.opts.Logger.Warn("could not arm the timers coming due; trying again", "error", err)
	} else {
		t.edge = max(t.edge, edge)
	}
	t.next = t.clock.AfterFunc(t.Horizon/2, t.advance)
}

// arm arms the timers query finds (with args), counting them into n.
func (t *Timers) arm(ctx context.Context, query string, args []any, n *Rearmed) error {
	rows, err := t.d.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("disk: reading stored timers: %w", err)
	}
	var tms []runtime.Timer
	for rows.Next() {
		var tm runtime.Timer
		var at int64
		var body []byte
		if err := rows.Scan(&tm.ThreadID, &tm.CallID, &at, &body); err != nil {
			rows.Close()
			return fmt.Errorf("disk: reading stored timers: %w", err)
		}
		if err := json.Unmarshal(body, &tm.Message); err != nil {
			rows.Close()
			return fmt.Errorf("disk: timer %s/%s holds an unreadable message: %w", tm.ThreadID, tm.CallID, err)
		}
		tm.At = time.Unix(0, at)
		tms = append(tms, tm)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("disk: reading stored timers: %w", err)
	}
	for _, tm := range tms {
		if err := t.inner.Schedule(ctx, tm); err != nil {
			return fmt.Errorf("disk: re-arming the timer of %s/%s: %w", tm.ThreadID, tm.CallID, err)
		}
		n.count(tm.Message.Kind)
	}
	return nil
}

// Pending returns the number of armed timers.
func (t *Timers) Pending() int { return t.inner.Pending() }

// Stop disarms every in-process timer (the rows stay for the next start)
// and waits for callbacks already running.
func (t *Timers) Stop() {
	t.mu.Lock()
	t.stopped = true
	if t.next != nil {
		t.next.Stop()
	}
	t.mu.Unlock()
	t.inner.Stop()
}
