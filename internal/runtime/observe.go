package runtime

import (
	"context"
	"log/slog"
	"time"
)

// EventType names what an observer is told about.
type EventType string

// The observed events.
const (
	EventSliceStarted       EventType = "slice_started"
	EventSliceFinished      EventType = "slice_finished"
	EventCompletionFinished EventType = "completion_finished"
	EventTurnCommitted      EventType = "turn_committed"
	EventToolDispatched     EventType = "tool_dispatched"
	EventMessageRejected    EventType = "message_rejected"
	EventMessageDropped     EventType = "message_dropped"
	// EventCompletionFailed: a completion failed for good (an error item
	// is in history). Always carries Err.
	EventCompletionFailed EventType = "completion_failed"
	// EventThreadLoaded: the slice loaded its thread (Duration: the load).
	EventThreadLoaded EventType = "thread_loaded"
	// EventInputsMarked: the slice marked its inputs processed in the
	// dedup store (Duration: the write).
	EventInputsMarked EventType = "inputs_marked"
	// EventModelWaiting: every attempt of a completion failed with a
	// retryable error and the thread waits for the provider (provider_wait.go).
	EventModelWaiting EventType = "model_waiting"
	// EventBudgetWaiting: a completion would pass a budget and the thread
	// waits for a person to raise it (budget.go).
	EventBudgetWaiting EventType = "budget_waiting"
)

// Event is one observation of the engine at work.
type Event struct {
	Type       EventType
	ThreadID   string
	SliceID    string
	MessageIDs []string
	ToolCallID string
	ToolName   string
	Version    int64
	Duration   time.Duration
	Reason     string
	Err        error
}

// Observer is told what the engine does. Implementations must be fast and
// must not block; they run on the slice's goroutine.
type Observer interface {
	Observe(ctx context.Context, ev Event)
}

// EventFilter is implemented by observers that ignore some events. The
// engine does not build an event its observer ignores: it reads no clock
// for its duration and allocates no list of message IDs for it (a slice
// start's IDs were one allocation per slice). An observer without it is
// given every event.
type EventFilter interface {
	// Wants reports whether the observer acts on events of type t;
	// failed says whether the event carries an error.
	Wants(t EventType, failed bool) bool
}

// A phase's duration (a load, a commit, a dispatch, a dedup mark) is
// measured only when the observer wants its event: start reads the clock
// then, and timedEvent tells the event with the time since.
func (s *slice) startTimer(t EventType) (start time.Time, timed bool) {
	if s.e.wants(t, false) {
		return s.e.now(), true
	}
	return time.Time{}, false
}

// timedEvent tells ev, with its duration since start, when timed.
func (s *slice) timedEvent(ctx context.Context, ev Event, start time.Time, timed bool) {
	if timed {
		ev.Duration = s.e.now().Sub(start)
		s.tell(ctx, ev)
	}
}

// SlogObserver logs events as structured records. Slice starts, completions
// and commits log at Debug; rejections, drops and failures at Warn.
type SlogObserver struct{ Logger *slog.Logger }

func (o SlogObserver) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// eventLevel is the level an event of type t is logged at.
func eventLevel(t EventType, failed bool) slog.Level {
	if failed || t == EventMessageRejected || t == EventMessageDropped {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// Wants reports whether the logger would log an event of type t.
func (o SlogObserver) Wants(t EventType, failed bool) bool {
	return o.logger().Enabled(context.Background(), eventLevel(t, failed))
}

// Observe logs ev.
func (o SlogObserver) Observe(ctx context.Context, ev Event) {
	lg := o.logger()
	level := eventLevel(ev.Type, ev.Err != nil)
	if !lg.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("thread", ev.ThreadID), slog.String("slice", ev.SliceID)}
	if len(ev.MessageIDs) > 0 {
		attrs = append(attrs, slog.Any("messages", ev.MessageIDs))
	}
	if ev.ToolCallID != "" {
		attrs = append(attrs, slog.String("tool_call", ev.ToolCallID), slog.String("tool", ev.ToolName))
	}
	if ev.Version != 0 {
		attrs = append(attrs, slog.Int64("version", ev.Version))
	}
	if ev.Duration != 0 {
		attrs = append(attrs, slog.Duration("duration", ev.Duration))
	}
	if ev.Reason != "" {
		attrs = append(attrs, slog.String("reason", ev.Reason))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", ev.Err.Error()))
	}
	lg.LogAttrs(ctx, level, string(ev.Type), attrs...)
}
