package runtime

import (
	"errors"
	"fmt"
)

// CrashPoint names a step boundary of a slice where a test may kill it.
type CrashPoint string

// The crash points, in the order a slice passes them. Timer calls happen
// inside the dispatch of a sleep, so the dispatch points bracket them.
const (
	CrashAfterLoad       CrashPoint = "after_load"
	CrashAfterCompletion CrashPoint = "after_completion"
	CrashAfterCommit     CrashPoint = "after_commit"
	CrashAfterSend       CrashPoint = "after_send" // a child's start, a report, a continuation, a reply
	CrashBeforeDispatch  CrashPoint = "before_dispatch"
	CrashAfterDispatch   CrashPoint = "after_dispatch"
	CrashAfterDedupMark  CrashPoint = "after_dedup_mark"
)

// CrashPoints lists every crash point.
var CrashPoints = []CrashPoint{CrashAfterLoad, CrashAfterCompletion, CrashAfterCommit, CrashAfterSend,
	CrashBeforeDispatch, CrashAfterDispatch, CrashAfterDedupMark}

// ErrCrashed is returned by a slice that a FaultInjector killed. Nothing
// after the crash point happened, as if the process had died there.
var ErrCrashed = errors.New("slice crashed by fault injection")

// FaultInjector decides, at each crash point a slice passes, whether the
// slice dies there. It exists for the crash tests; production engines
// leave Engine.Faults nil.
type FaultInjector interface {
	Crash(point CrashPoint, threadID string) bool
}

func (s *slice) crash(p CrashPoint) error {
	if mutateDropsCrashPoint(p) {
		return nil
	}
	if s.e.Faults != nil && s.e.Faults.Crash(p, s.threadID) {
		return fmt.Errorf("runtime: thread %s at %s: %w", s.threadID, p, ErrCrashed)
	}
	return nil
}
