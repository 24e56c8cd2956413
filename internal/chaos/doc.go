// Package chaos proves the slice contract (docs/reliability.md) under
// crashes, redelivery, reordering and racing duplicate slices.
//
// It owns a deterministic driver (Run) that plays a Scenario against a
// runtime.Engine: per-thread FIFO mailboxes, one slice at a time in a fixed
// round-robin order, a scripted model, recording tools and the embedded
// timers (local.Timers) armed on the run's clock (runClock), on which a
// timer fires only when the run fires it. A run is a pure function of its
// scenario and its Plan (where to crash, which messages to deliver again
// and when), so a crash-free run can be compared item by item with a run
// that was killed at any step boundary. The run's clock stands still unless
// a scenario plays a Timeline, which fires the armed timers in time order
// and moves the clock to each: a scenario with Liveness set (deadlines and
// status checks on, armed through the run's timers) is driven that way to
// its deadlines. FireTimers fires every armed timer without moving the
// clock; a step that fired only timers that had fired before (durable
// timers re-arm, after a restart, a fired timer whose row the crash kept)
// has not fired the wake-up it is for, and is played again once held and
// dead-lettered batches have run. The timers are the real ones (a Backend may bring its own: the
// disk store's durable timers, stopped at every restart and re-armed from
// their rows), so a sleep scheduled again (a redelivered dispatch)
// replaces its timer and may wake a second time, and a timer that
// delivers its wake-up after it was cancelled is a problem.
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
// A run's Snapshot also records what each completion was shown (per thread
// and turn: the history without IDs, and the tools offered), and a retried
// completion must be shown what its first attempt was.
//
// After each run, Compare compares its Snapshot with the crash-free run's,
// and Snapshot checks the invariants that do not depend on a reference run:
// every thread ends with no undispatched call and an empty outbox, each
// child thread was created by exactly one commit, each wake-up was
// scheduled with one message only, and every dispatched call is in history
// with the arguments it was dispatched with. Every run must also end live
// (End): every call answered, every asynchronous call dispatched, nothing
// pending, deferred or undelivered, and the scenario's declared counts of
// threads, closed threads, live subscriptions and replies. And every run's
// end state is checked by its meaning, independent of how IDs are spelled
// (meaning.go): every message sent entered its thread's history once (or
// was refused, or dropped by a closed thread), every result landed on its
// call, every sleep ended by its wake-up or an interruption and every
// wake-up fired, every report reached the thread that spawned its sender,
// a subscription is live exactly when started and not ended by a final
// event or a cancel, each thread's replies are its model turns without a
// tool call, no open thread is stranded, and every call to a tool that
// never answers was ended by the engine (its deadline). The crash-free
// run itself is compared with a golden snapshot (testdata/golden), so a bug
// shared by every run is still caught; the golden pins ID text, the
// meaning checks do not.
//
// Each scenario declares the crash points it must reach (Scenario.Reach);
// Report.Coverage fails a matrix in which a declared point, or any point of
// Points, never fired. Runs whose planned disturbance did not happen (a
// second crash after the run ended) are not counted, their end states
// still compared. On the embedded System, whose batching depends on
// goroutine timing, a crash is addressed by the batch of the slice it hits
// (Target), not by its passage number, and a planned crash that does not
// fire is a problem of its run.
//
// Three modes change batching and are held to the End's structural checks,
// the meaning checks and the invariants instead of the reference:
// HeldCrashes (a crashed batch redelivered together with the mail that
// arrived meanwhile), DeadLetters (a batch dead-lettered after N failed
// receives while its thread goes on with its next message as a first
// delivery) and SupersetRaces (one message per slice, raced by a
// redelivery that carries it and more).
//
// A scenario may run without the backend's dedup store (Scenario.NoDedup),
// and the tests also run the matrix on the memory history store alone, so
// the "sent" commit path (a second commit after a dispatch instead of a
// dedup record) runs too.
//
// The package is test machinery: it is imported only by tests and by
// `make chaos`, and must never be wired into a production engine.
package chaos
