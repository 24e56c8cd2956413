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
// After each run, Compare compares its Snapshot with the crash-free run's,
// and Snapshot checks the invariants that do not depend on a reference run:
// every thread ends with no undispatched call and an empty outbox, each
// child thread was created by exactly one commit, each wake-up was
// scheduled with one message only, and every dispatched call is in history
// with the arguments it was dispatched with. Every run must also end live
// (End): every call answered, every asynchronous call dispatched, nothing
// pending, deferred or undelivered, and the scenario's declared counts of
// threads, closed threads, live subscriptions and replies. The crash-free
// run itself is compared with a golden snapshot (testdata/golden), so a bug
// shared by every run is still caught.
//
// Each scenario declares the crash points it must reach (Scenario.Reach);
// Report.Coverage fails a matrix in which a declared point, or any point of
// Points, never fired. Runs whose planned disturbance did not happen (a
// second crash after the run ended) are not counted.
//
// Two modes change batching and are held to the End's structural checks
// and the invariants instead of the reference: HeldCrashes (a crashed batch
// redelivered together with the mail that arrived meanwhile) and
// DeadLetters (a batch dead-lettered after N failed receives while its
// thread goes on with its next message as a first delivery).
//
// The package is test machinery: it is imported only by tests and by
// `make chaos`, and must never be wired into a production engine.
package chaos
