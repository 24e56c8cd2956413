// Package local is the embedded agent system: one process, in-memory stores,
// and a goroutine only for threads that have work.
//
// A message sent to a thread lands in that thread's mailbox; if the thread
// has no goroutine, one drains the mailbox slice by slice (a new goroutine,
// or one whose thread has just given back its slot), then goes on with the
// next ready thread or exits. An idle thread is a record in the HistoryStore
// and nothing else: no goroutine, no channel, and no timer unless it sleeps.
//
// Nothing on the per-message path is shared by all threads: mailboxes and
// stored threads are sharded by thread ID, each shard with its own lock, so
// slices of different threads run on every core. Idle threads are frozen
// (compressed with a zstd dictionary the store learns from its own first
// histories) by FreezeIdle, on every core.
//
// A thread with mail waits in its priority class's ready queue (an entry,
// no goroutine) until the scheduler gives it one of a bounded number of
// slots: interactive first, background with a guaranteed share so it is
// never starved; each model's calls are bounded by its Budget (concurrency
// and tokens per minute) so provider limits are avoided rather than
// retried. See scheduler.go and budget.go.
//
// A batch whose slice keeps failing goes to the dead letters
// (deadletters.go): one entry per (thread, message ID), logged, published
// as an "error" event of the thread, kept by a DeadLetterStore when one is
// configured. Redrive sends the message again with its ID; an entry whose
// ID a later slice consumed is resolved. Errors: ErrNoDeadLetter,
// ErrDeadLetterResolved.
//
// Timers (timers.go) arm one timer per pending wake-up on a Clock: the wall
// clock (RealClock) unless NewTimersOn is given another, as the chaos
// harness does to fire them when its own time says so.
//
// The package must not know about AWS or SQL; it implements the interfaces of
// internal/runtime with memory and the Go scheduler.
package local
