package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	_ "time/tzdata" // IANA zones even where the host has none (Lambda)
)

// MaxSleep bounds sleep and sleep_until.
const MaxSleep = 366 * 24 * time.Hour

// SleepTools returns sleep(seconds), sleep_until(date, time, timezone) and
// sleep_until_event_or_input(), all asynchronous and interruptible: a user
// message or an event ends the sleep at once, and a wake-up that arrives
// after that is recorded without waking the model. Wake-ups go through
// timers; now defaults to time.Now.
func SleepTools(timers Timers, now func() time.Time) []ToolEntry {
	if now == nil {
		now = time.Now
	}
	return []ToolEntry{
		{Spec: ToolSpec{Name: "sleep", Description: "Pause for a number of seconds. A new message or event wakes you earlier.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","exclusiveMinimum":0}},"required":["seconds"]}`)},
			Async: &sleeper{timers: timers, now: now, kind: "sleep"}, Interruptible: true, Toolset: ToolsetSleep},
		{Spec: ToolSpec{Name: "sleep_until", Description: "Pause until a local date and time in an IANA time zone (e.g. 2026-03-29, 09:00, Europe/Paris). A time in the past returns at once.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"date":{"type":"string","description":"YYYY-MM-DD"},"time":{"type":"string","description":"HH:MM or HH:MM:SS"},"timezone":{"type":"string"}},"required":["date","time","timezone"]}`)},
			Async: &sleeper{timers: timers, now: now, kind: "until"}, Interruptible: true, Toolset: ToolsetSleep},
		{Spec: ToolSpec{Name: "sleep_until_event_or_input", Description: "Wait, using no resources, until a message or an event arrives.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
			Async: &sleeper{timers: timers, now: now, kind: "event"}, Interruptible: true, Toolset: ToolsetSleep},
	}
}

type sleeper struct {
	timers Timers
	now    func() time.Time
	kind   string
}

// wakeAt computes when a sleep call ends.
func (s *sleeper) wakeAt(args string) (time.Time, error) {
	switch s.kind {
	case "sleep":
		var a struct {
			Seconds *float64 `json:"seconds"`
		}
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			return time.Time{}, fmt.Errorf("arguments: %v", err)
		}
		if a.Seconds == nil || *a.Seconds <= 0 {
			return time.Time{}, fmt.Errorf("seconds must be a number above 0")
		}
		d := time.Duration(*a.Seconds * float64(time.Second))
		if d > MaxSleep || d <= 0 {
			return time.Time{}, fmt.Errorf("seconds must be at most %d", int(MaxSleep.Seconds()))
		}
		return s.now().Add(d), nil
	case "until":
		var a struct {
			Date, Time, Timezone string
		}
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			return time.Time{}, fmt.Errorf("arguments: %v", err)
		}
		return SleepUntil(a.Date, a.Time, a.Timezone, s.now())
	}
	return time.Time{}, nil
}

// SleepUntil resolves a local date and time in an IANA zone to an instant.
// A local time that does not exist (skipped by a DST change) resolves to
// the instant the clocks jumped to; an ambiguous one to its first
// occurrence, as time.Date does.
func SleepUntil(date, clock, zone string, now time.Time) (time.Time, error) {
	if zone == "" {
		return time.Time{}, fmt.Errorf("timezone is required (an IANA name such as Europe/Paris)")
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return time.Time{}, fmt.Errorf("timezone %q is not an IANA time zone", zone)
	}
	d, err := time.Parse("2006-01-02", date)
	if err != nil {
		return time.Time{}, fmt.Errorf("date %q is not YYYY-MM-DD", date)
	}
	var c time.Time
	if c, err = time.Parse("15:04:05", clock); err != nil {
		if c, err = time.Parse("15:04", clock); err != nil {
			return time.Time{}, fmt.Errorf("time %q is not HH:MM or HH:MM:SS", clock)
		}
	}
	at := time.Date(d.Year(), d.Month(), d.Day(), c.Hour(), c.Minute(), c.Second(), 0, loc)
	if at.Sub(now) > MaxSleep {
		return time.Time{}, fmt.Errorf("%s is more than a year away", at.Format(time.RFC3339))
	}
	return at, nil
}

// ValidateArgs checks the arguments before the call is recorded.
func (s *sleeper) ValidateArgs(args string) error {
	_, err := s.wakeAt(args)
	return err
}

// Dispatch arms the wake-up. sleep_until_event_or_input arms nothing.
func (s *sleeper) Dispatch(ctx context.Context, inv Invocation) error {
	if s.kind == "event" {
		return nil
	}
	at, err := s.wakeAt(inv.Args)
	if err != nil {
		return &ToolRejectedError{Tool: inv.Name, Reason: err.Error()}
	}
	if s.timers == nil {
		return &ToolRejectedError{Tool: inv.Name, Reason: "no timers are configured in this runtime"}
	}
	now := s.now()
	if at.Before(now) {
		at = now
	}
	return s.timers.Schedule(ctx, Timer{ThreadID: inv.ThreadID, CallID: inv.CallID, At: at,
		Message: Message{V: MessageVersion, ID: WakeID(inv.ThreadID, inv.CallID), ThreadID: inv.ThreadID, Kind: KindWake,
			ToolCallID: inv.CallID, Class: inv.Class.OrDefault(), Text: "woke up; it is now " + at.Format(time.RFC3339),
			Trace: inv.Trace}})
}

// Cancel disarms the wake-up of an interrupted sleep (best effort: a
// wake-up already on its way is recorded without waking the model).
func (s *sleeper) Cancel(ctx context.Context, threadID, callID string) error {
	if s.kind == "event" || s.timers == nil {
		return nil
	}
	return s.timers.Cancel(ctx, threadID, callID)
}

// WakeID is the message ID of the wake-up of a sleep call.
func WakeID(threadID, callID string) string { return DeriveID("wake_", threadID, callID) }
