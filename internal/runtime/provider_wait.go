package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Provider outages: a completion whose in-slice attempts all failed with
// a retryable error (connection refused, 5xx, 429/throttling) does not fail
// the slice when the engine has a ProviderWait. The slice commits what it
// folded (the user's message is in history) and a small state change
// (ThreadState.ModelWait), and arms a timer through the Timers port, as
// liveness checks are armed: no goroutine and no slice waits. The timer's
// message, of KindRetry, is an ordinary input (serialised, deduplicated,
// crash-safe); folding it runs the model again when the thread still waits
// for that wait (ModelWait.Waits matches), and does nothing otherwise (a
// user message ran the model in between, or a person stopped the thread).
// Each wait doubles from First up to Interval, and is at least what the
// provider asked for (RetryAfterError, HTTP Retry-After). Only when the
// thread has waited MaxWait does the completion fail for good: an error
// item in history (failModel), as for a permanent error.

// ProviderWait configures how threads wait out model provider outages.
// A nil *ProviderWait (the Engine default) makes a completion that failed
// every attempt fail the slice, which its caller retries or dead-letters.
type ProviderWait struct {
	// Timers delivers the retry messages. Required.
	Timers Timers
	// First is the first wait. Default 30 seconds.
	First time.Duration
	// Interval caps the doubling wait. Default 15 minutes.
	Interval time.Duration
	// MaxWait is how long a thread waits in all before its completion
	// fails for good. Default 24 hours.
	MaxWait time.Duration
}

// The ProviderWait defaults.
const (
	ProviderWaitFirstDefault    = 30 * time.Second
	ProviderWaitIntervalDefault = 15 * time.Minute
	ProviderWaitMaxDefault      = 24 * time.Hour
)

// WithDefaults returns w with zero fields set to their defaults.
func (w ProviderWait) WithDefaults() ProviderWait {
	if w.First <= 0 {
		w.First = ProviderWaitFirstDefault
	}
	if w.Interval <= 0 {
		w.Interval = ProviderWaitIntervalDefault
	}
	if w.Interval < w.First {
		w.Interval = w.First
	}
	if w.MaxWait <= 0 {
		w.MaxWait = ProviderWaitMaxDefault
	}
	return w
}

// delay is the n-th wait (n ≥ 1), at least retryAfter.
func (w ProviderWait) delay(n int, retryAfter time.Duration) time.Duration {
	d := w.First
	for i := 1; i < n && d < w.Interval; i++ {
		d *= 2
	}
	d = min(d, w.Interval)
	return max(d, retryAfter)
}

// ModelWait is a thread waiting for its model provider to come back.
type ModelWait struct {
	// Since is when the first completion of this outage failed.
	Since time.Time `json:"since"`
	// Waits counts the waits armed so far; the retry message of the
	// latest carries it.
	Waits int `json:"waits"`
	// Until is when the latest wait ends.
	Until time.Time `json:"until"`
	// Error is the provider's latest error.
	Error string `json:"error"`
}

// RetryAfterError is implemented by model errors that say how long the
// provider asked to wait (an HTTP Retry-After header).
type RetryAfterError interface {
	error
	RetryAfter() time.Duration
}

// retryAfter returns the wait err asks for, 0 when none.
func retryAfter(err error) time.Duration {
	var ra RetryAfterError
	if errors.As(err, &ra) {
		return max(ra.RetryAfter(), 0)
	}
	return 0
}

// waitsLonger reports whether err asks for a wait (Retry-After) at least
// as long as the provider wait's first: the thread then waits through the
// timers at once, costing no held slice, instead of spending its in-slice
// attempts on a provider that said when to come back (a 429 storm of a
// fan-out on AWS).
func (s *slice) waitsLonger(err error) bool {
	w := s.e.ProviderWait
	if w == nil || w.Timers == nil {
		return false
	}
	ra := retryAfter(err)
	return ra > 0 && ra >= w.WithDefaults().First
}

// retryKey is the timer key of a thread's n-th provider wait: each wait has
// its own, so arming the next never collides with the one being delivered.
func retryKey(n int) string { return "mwait" + strconv.Itoa(n) }

// RetryID is the message ID of the n-th provider wait of a thread whose
// outage began at since.
func RetryID(threadID string, since time.Time, n int) string {
	return DeriveID("mwait_", threadID, strconv.FormatInt(since.UnixNano(), 10), strconv.Itoa(n))
}

// waitForProvider arms the next wait for a completion that failed every
// attempt with err. It reports false when the thread has waited MaxWait
// already (or the wait cannot be armed for good): the completion then
// fails. An error means the slice should be retried.
func (s *slice) waitForProvider(ctx context.Context, err error) (bool, error) {
	w := s.e.ProviderWait.WithDefaults()
	now := s.e.now()
	prev := s.st.ModelWait
	since, n := now, 1
	if prev != nil {
		since, n = prev.Since, prev.Waits+1
	}
	if now.Sub(since) >= w.MaxWait {
		return false, nil
	}
	at := now.Add(w.delay(n, retryAfter(err)))
	if limit := since.Add(w.MaxWait); at.After(limit) {
		at = limit // the last try comes at the limit, not after it
	}
	m := Message{V: MessageVersion, ID: RetryID(s.threadID, since, n), ThreadID: s.threadID, Kind: KindRetry,
		Text: strconv.Itoa(n), Class: s.st.Class.OrDefault(), Trace: s.traceparent(ctx)}
	if serr := w.Timers.Schedule(ctx, Timer{ThreadID: s.threadID, CallID: retryKey(n), At: at, Message: m}); serr != nil {
		return false, fmt.Errorf("runtime: arming provider wait %d of thread %s: %w (model error: %v)", n, s.threadID, serr, err)
	}
	s.st.ModelWait = &ModelWait{Since: since, Waits: n, Until: at, Error: err.Error()}
	s.changed()
	s.observe(ctx, Event{Type: EventModelWaiting, ThreadID: s.threadID, Err: err,
		Reason: fmt.Sprintf("model provider unavailable; wait %d until %s", n, at.UTC().Format(time.RFC3339))})
	return true, nil
}

// foldRetry handles the end of a provider wait. It reports whether the
// model should run: only for the wait the thread is still in.
func (s *slice) foldRetry(m Message) bool {
	s.consume(m.ID)
	w := s.st.ModelWait
	return w != nil && strconv.Itoa(w.Waits) == m.Text
}

// failureArgs is the Args of a failure item (ItemMarker with IsError):
// what failed and how often it was tried.
type failureArgs struct {
	Failed   string `json:"failed"`
	Attempts int    `json:"attempts,omitempty"`
	Waited   string `json:"waited,omitempty"`
	Error    string `json:"error"`
}

// FailureMarkerName is the Name of a failure item: a marker (IsError) saying
// that a completion failed for good, Args holding failureArgs.
const FailureMarkerName = "completion"

// IsFailure reports whether it is a failure item: a marker saying that a
// completion failed for good (see failModel).
func IsFailure(it *Item) bool {
	return it.Kind == ItemMarker && it.IsError && it.Name == FailureMarkerName
}

// ErrStopped is matched (errors.Is) by the permanent error a model returns
// for a completion a person stopped: it ends the slice's completions with
// an error event but is no failure in history (the stop message that
// follows records what happened).
var ErrStopped = errors.New("runtime: the completion was stopped")

// failModel ends the slice's completions for good: an error item in history
// (what failed, the provider's error, how often it was tried, how long the
// thread waited) and an error event the user can read; the slice must not
// be retried for it. attempts is 0 when the model was not called.
func (s *slice) failModel(ctx context.Context, err error, attempts int) {
	s.res.ModelErr = err
	if errors.Is(err, ErrStopped) {
		s.addOutbox(OutboxEntry{Output: &OutputEvent{
			ID: incarnationID("out_", s.st.Incarnation, s.threadID, strconv.Itoa(s.ownPos()), "error"), ThreadID: s.threadID,
			Kind: "error", Text: "the model failed: " + err.Error()}})
		return
	}
	s.observe(ctx, Event{Type: EventCompletionFailed, ThreadID: s.threadID, Err: err, Reason: "the completion failed for good"})
	args := failureArgs{Failed: "completion", Attempts: attempts, Error: err.Error()}
	if w := s.st.ModelWait; w != nil {
		args.Waited = s.e.now().Sub(w.Since).Round(time.Second).String()
		s.st.ModelWait = nil
	}
	js, _ := json.Marshal(args) // strings and ints: cannot fail
	text := "the model failed: " + err.Error()
	switch {
	case args.Waited != "":
		text = fmt.Sprintf("the model failed after waiting %s for the provider: %s", args.Waited, err)
	case attempts > 1:
		text = fmt.Sprintf("the model failed after %d attempts: %s", attempts, err)
	}
	s.appendItem(Item{Kind: ItemMarker, IsError: true, Name: FailureMarkerName, Args: string(js), Text: text})
	s.addOutbox(OutboxEntry{Output: &OutputEvent{
		ID: incarnationID("out_", s.st.Incarnation, s.threadID, strconv.Itoa(s.ownPos()), "error"), ThreadID: s.threadID,
		Kind: "error", Text: text}})
}
