package runtime

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Liveness: no thread waits forever on a tool.
//
// Every asynchronous call the engine dispatches (except interruptible ones,
// the sleeps, which end by their own timer) gets a deadline (Liveness.
// Deadline; LongRunningDeadline for tools that say they are long-running; a
// tool may set its own through CallDeadliner). Right after the dispatch the
// engine arms a timer (the Timers port the sleeps use, so no process waits
// and it works on both deployments) whose message, of KindCheck, comes back
// to the thread as an ordinary input. A slice that folds a check for the
// still-pending call:
//   - past the deadline: tells the tool to cancel (best effort) and closes
//     the call with an error result the model can read;
//   - before it, asks the tool (StatusChecker, for RAP the server that got
//     the call: /tool_call_status). Dead: the call is closed with an error
//     result. Alive or unknown (5xx, unreachable): the next check is armed,
//     the interval doubling from CheckAfter up to MaxCheckInterval, never
//     later than the deadline.
//
// A check for an active subscription (sent by RecheckThread, on start) asks
// the same question; a dead subscription ends with a synthetic final event
// the model reads inline. A check for a call that is no longer pending is
// consumed without effect. A real result that arrives after the call was
// closed is injected as a synthetic event, as for interrupted calls.

// Liveness configures the engine's per-call deadlines and status checks.
// A nil *Liveness (the Engine default) arms nothing.
type Liveness struct {
	// Timers delivers the check messages. Required.
	Timers Timers
	// Deadline is a call's default deadline. Default 1 hour.
	Deadline time.Duration
	// LongRunningDeadline is the deadline of tools that say they are
	// long-running. Default 24 hours.
	LongRunningDeadline time.Duration
	// CheckAfter is how long after the dispatch the first status check
	// runs. Default 10 minutes.
	CheckAfter time.Duration
	// MaxCheckInterval caps the doubling interval between checks. Default
	// 1 hour.
	MaxCheckInterval time.Duration
	// StatusTimeout bounds one status request. Default 10 seconds.
	StatusTimeout time.Duration
}

// WithDefaults returns l with zero fields set to their defaults.
func (l Liveness) WithDefaults() Liveness {
	if l.Deadline <= 0 {
		l.Deadline = time.Hour
	}
	if l.LongRunningDeadline <= 0 {
		l.LongRunningDeadline = 24 * time.Hour
	}
	if l.CheckAfter <= 0 {
		l.CheckAfter = 10 * time.Minute
	}
	if l.MaxCheckInterval <= 0 {
		l.MaxCheckInterval = time.Hour
	}
	if l.StatusTimeout <= 0 {
		l.StatusTimeout = 10 * time.Second
	}
	return l
}

// CallStatus is a tool's answer about one of its calls.
type CallStatus int

// The call statuses.
const (
	// StatusUnknown: no answer (the server is down or answered 5xx). The
	// call stays pending.
	StatusUnknown CallStatus = iota
	// StatusAlive: the tool still works on the call (or keeps its
	// subscription).
	StatusAlive
	// StatusDead: the tool has no record of the call; no callback will come.
	StatusDead
)

// StatusChecker is implemented by asynchronous tools that can say whether
// a dispatched call (or the subscription it started) is still alive. An
// error counts as StatusUnknown.
type StatusChecker interface {
	CallStatus(ctx context.Context, threadID, callID string) (CallStatus, error)
}

// CallDeadliner is implemented by tools that know how long their calls may
// take: d overrides the engine's default when positive; longRunning selects
// Liveness.LongRunningDeadline otherwise.
type CallDeadliner interface {
	CallDeadline() (d time.Duration, longRunning bool)
}

// checkKey is the timer key of the n-th check of a call: each check has its
// own, so arming the next never collides with the one being delivered.
func checkKey(callID string, n int) string { return "chk" + strconv.Itoa(n) + "~" + callID }

// CheckID is the message ID of the n-th liveness check of a call.
func CheckID(threadID, callID string, n int) string {
	return DeriveID("chk_", threadID, callID, strconv.Itoa(n))
}

// checkMessage is the n-th liveness check of a call.
func checkMessage(threadID, callID string, n int) Message {
	return Message{V: MessageVersion, ID: CheckID(threadID, callID, n), ThreadID: threadID, Kind: KindCheck,
		ToolCallID: callID, Text: strconv.Itoa(n)}
}

// deadlineFor returns the deadline of a call to entry dispatched at now.
func (l *Liveness) deadlineFor(entry ToolEntry, now time.Time) time.Time {
	d := l.Deadline
	if cd, ok := entry.Async.(CallDeadliner); ok {
		over, long := cd.CallDeadline()
		switch {
		case over > 0:
			d = over
		case long:
			d = l.LongRunningDeadline
		}
	}
	return now.Add(d)
}

// nextCheck is when check n+1 runs, given check n ran at now.
func (l *Liveness) nextCheck(n int, now, deadline time.Time) time.Time {
	d := l.CheckAfter
	for i := 0; i < n && d < l.MaxCheckInterval; i++ {
		d *= 2
	}
	d = min(d, l.MaxCheckInterval)
	at := now.Add(d)
	if !deadline.IsZero() && at.After(deadline) {
		at = deadline
	}
	return at
}

// armLiveness sets the deadline of a call being dispatched and arms its
// first check. It returns the deadline (zero without Liveness).
func (s *slice) armLiveness(ctx context.Context, p *PendingCall, entry ToolEntry) (time.Time, error) {
	if s.e.Liveness == nil || s.e.Liveness.Timers == nil || entry.Interruptible {
		// Interruptible calls (the sleeps) end by their own timer or by
		// any message: they need no deadline, and must not get one (a
		// two-hour sleep is not a stuck tool).
		return time.Time{}, nil
	}
	l := s.e.Liveness.WithDefaults()
	now := s.e.now()
	deadline := l.deadlineFor(entry, now)
	if err := s.scheduleCheck(ctx, p.ID, 1, l.nextCheck(0, now, deadline)); err != nil {
		return time.Time{}, err
	}
	return deadline, nil
}

func (s *slice) scheduleCheck(ctx context.Context, callID string, n int, at time.Time) error {
	t := Timer{ThreadID: s.threadID, CallID: checkKey(callID, n), At: at, Message: checkMessage(s.threadID, callID, n)}
	t.Message.Trace = s.traceparent(ctx)
	if err := s.e.Liveness.Timers.Schedule(ctx, t); err != nil {
		return fmt.Errorf("runtime: arming liveness check %d of call %s of thread %s: %w", n, callID, s.threadID, err)
	}
	return nil
}

// foldCheck handles a liveness check. It reports whether the model should
// run (the call or subscription was closed with an error).
func (s *slice) foldCheck(ctx context.Context, m Message) bool {
	s.consume(m.ID)
	n, _ := strconv.Atoi(m.Text)
	if p := s.st.Pending; p != nil && p.ID == m.ToolCallID && p.Dispatched {
		return s.checkPending(ctx, p, n)
	}
	if s.subscribed(m.ToolCallID) {
		return s.checkSubscription(ctx, m.ToolCallID)
	}
	return false // the call has its result already: nothing to do
}

// consume records that a message was processed without adding an item.
func (s *slice) consume(id string) {
	s.inputs = append(s.inputs, id)
	s.res.Processed = append(s.res.Processed, id)
	s.changed()
}

func (s *slice) checkPending(ctx context.Context, p *PendingCall, n int) bool {
	if s.e.Liveness == nil {
		return false
	}
	l := s.e.Liveness.WithDefaults()
	now := s.e.now()
	if p.Deadline.IsZero() {
		// The deadline set at dispatch was not committed (the slice
		// recorded "sent" in the dedup store instead of a second commit):
		// count it from this first check, a little late rather than never.
		if entry, ok, err := s.lookup(ctx, p.Name); err == nil && ok && entry.Async != nil {
			pp := *p
			pp.Deadline = l.deadlineFor(entry, now)
			s.st.Pending, p = &pp, &pp
			s.changed()
		}
	}
	if !p.Deadline.IsZero() && !now.Before(p.Deadline) && !mutateDeadlineWaits(now, p.Deadline) {
		s.addOutbox(OutboxEntry{Cancel: &PendingCall{ID: p.ID, Name: p.Name}})
		s.closePending(Item{Kind: ItemToolResult, CallID: p.ID, Name: p.Name, IsError: true,
			Text: fmt.Sprintf("error: %s did not return before its deadline (%s); the call was cancelled. "+
				"A late result will be delivered as an event.", p.Name, p.Deadline.UTC().Format(time.RFC3339))})
		return true
	}
	switch s.askStatus(ctx, l, p.Name, p.ID) {
	case StatusDead:
		s.closePending(Item{Kind: ItemToolResult, CallID: p.ID, Name: p.Name, IsError: true,
			Text: "error: the tool server is no longer processing this call (it has no record of it, for example because it restarted). " +
				"Call the tool again if you still need the result."})
		return true
	}
	if err := s.scheduleCheck(ctx, p.ID, n+1, l.nextCheck(n, now, p.Deadline)); err != nil {
		// The slice is retried and the check with it.
		s.observe(ctx, Event{Type: EventToolDispatched, ThreadID: s.threadID, ToolCallID: p.ID, ToolName: p.Name,
			Reason: "arming the next liveness check failed", Err: err})
		s.foldErr = err
	}
	return false
}

func (s *slice) checkSubscription(ctx context.Context, callID string) bool {
	var sub Subscription
	for _, x := range s.st.Subscriptions {
		if x.CallID == callID {
			sub = x
		}
	}
	l := Liveness{}
	if s.e.Liveness != nil {
		l = *s.e.Liveness
	}
	if s.askStatus(ctx, l.WithDefaults(), sub.Tool, callID) != StatusDead {
		return false
	}
	s.dropSubscription(callID)
	return s.foldOrDefer(ctx, Message{ID: DeriveID("lost_", s.threadID, callID), ThreadID: s.threadID, Kind: KindEvent,
		ToolCallID: callID, Final: true, Associative: true, IsError: true,
		Text: "error: the tool server no longer keeps this subscription (it has no record of it, for example because it restarted); " +
			"no more events will come. Subscribe again if you still need them."})
}

// askStatus asks the tool behind a call whether it is alive. Anything but
// a clear answer is StatusUnknown.
func (s *slice) askStatus(ctx context.Context, l Liveness, tool, callID string) CallStatus {
	entry, ok, err := s.lookup(ctx, tool)
	if err != nil || !ok || entry.Async == nil {
		return StatusUnknown
	}
	sc, ok := entry.Async.(StatusChecker)
	if !ok {
		return StatusUnknown
	}
	cctx, cancel := context.WithTimeout(ctx, l.StatusTimeout)
	defer cancel()
	st, err := sc.CallStatus(cctx, s.threadID, callID)
	if err != nil {
		return StatusUnknown
	}
	return st
}

// LivenessChecks returns the check messages that make a thread's next
// slice ask the tools about its pending call and every active
// subscription. Their IDs are unique to round, so every round runs. Each
// check carries the trace context its record kept (PendingCall.Trace,
// Subscription.Trace: the dispatch of the call), so its slice joins the
// call's trace.
func LivenessChecks(th *Thread, round string) []Message {
	var out []Message
	if p := th.State.Pending; p != nil && p.Dispatched && !th.State.Closed {
		m := checkMessage(th.ID, p.ID, 0)
		m.ID = DeriveID("chk_", th.ID, p.ID, "round", round)
		m.Trace = p.Trace // the check's slice joins the call's trace
		out = append(out, m)
	}
	for _, sub := range th.State.Subscriptions {
		if th.State.Closed {
			break
		}
		m := checkMessage(th.ID, sub.CallID, 0)
		m.ID = DeriveID("chk_", th.ID, sub.CallID, "round", round)
		m.Trace = sub.Trace
		out = append(out, m)
	}
	return out
}

// RecheckThread loads a thread and sends it a liveness check for its
// pending call and for each active subscription, so that a call whose tool
// server forgot it (restarted, say) ends with an error result instead of
// waiting forever. Call it on start for every thread that has a pending
// call or an active subscription; round (the start's time, say) keeps two
// starts' checks apart. It does not wait for the checks to run.
func (e *Engine) RecheckThread(ctx context.Context, threadID, round string) error {
	th, err := e.History.Load(ctx, threadID)
	if err != nil {
		return fmt.Errorf("runtime: loading thread %s for a liveness check: %w", threadID, err)
	}
	msgs := LivenessChecks(th, round)
	if len(msgs) == 0 {
		return nil
	}
	if err := e.Queue.Send(ctx, msgs...); err != nil {
		return fmt.Errorf("runtime: sending liveness checks to thread %s: %w", threadID, err)
	}
	return nil
}
