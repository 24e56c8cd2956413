// Package local is the embedded agent system: one process, in-memory stores,
// and a goroutine only for threads that have work.
//
// A message sent to a thread lands in that thread's mailbox; if the thread
// has no goroutine, one starts and drains the mailbox slice by slice, then
// exits. An idle thread is a record in the HistoryStore and nothing else: no
// goroutine, no channel, and no timer unless it sleeps.
//
// Nothing on the per-message path is shared by all threads: mailboxes and
// stored threads are sharded by thread ID, each shard with its own lock, so
// slices of different threads run on every core. Idle threads are frozen
// (compressed with a zstd dictionary the store learns from its own first
// histories) by FreezeIdle, on every core.
//
// The package must not know about AWS or SQL; it implements the interfaces of
// internal/runtime with memory and the Go scheduler.
package local
