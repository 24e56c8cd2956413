// Package local is the embedded agent system: one process, in-memory stores,
// and a goroutine only for threads that have work.
//
// A message sent to a thread lands in that thread's mailbox; if the thread
// has no goroutine, one starts and drains the mailbox slice by slice, then
// exits. An idle thread is a record in the HistoryStore and nothing else: no
// goroutine, no channel, and no timer unless it sleeps.
//
// The package must not know about AWS or SQL; it implements the interfaces of
// internal/runtime with memory and the Go scheduler.
package local
