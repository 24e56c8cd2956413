// Package chaos proves the slice contract (README, "Reliability") under
// crashes, redelivery, reordering and racing duplicate slices.
//
// It owns a deterministic driver (Run) that plays a Scenario against a
// runtime.Engine: per-thread FIFO mailboxes, one slice at a time in a fixed
// round-robin order, a scripted model, recording tools and manual timers. A
// run is a pure function of its scenario and its Plan (where to crash, which
// messages to deliver again and when), so a crash-free run can be compared
// item by item with a run that was killed at any step boundary.
//
// A crash is the engine's own fault injection (runtime.Engine.Faults and
// runtime.CrashPoints) plus the points this package adds by wrapping the
// engine's ports: before and after each timer call, before each history
// commit, after each output publish and before each dedup write (Points
// lists them all). A wrapper crashes by panicking, which the engine recovers
// at the slice boundary: nothing after the point runs, as if the process had
// died there. The driver then redelivers the batch, as SQS does once the
// visibility timeout expires.
//
// After each run, Check compares its Snapshot with the crash-free run's and
// checks the invariants that do not depend on a reference run: every thread
// ends with no undispatched call and an empty outbox, each child thread was
// created by exactly one commit, each wake-up was scheduled with one message
// only, and every dispatched call is in history with the arguments it was
// dispatched with.
//
// The package is test machinery: it is imported only by tests and by
// `make chaos`, and must never be wired into a production engine.
package chaos
