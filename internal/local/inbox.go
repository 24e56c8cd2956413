package local

import (
	"context"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Inbox makes accepted messages durable (internal/disk implements it).
// With one configured, Send returns only once Put has stored the messages,
// and a thread's batch is handed to Done when its slice finished with them
// (committed, deduplicated or dead-lettered), not when it was cancelled by
// Stop: what Done never saw is queued again by the next start.
type Inbox interface {
	Put(ctx context.Context, msgs []runtime.Message) error
	Done(threadID string, ids []string) error
}

// Kick runs a slice with no messages for each thread, so that it sends what
// its committed state still has to send (an outbox, an undispatched call).
// Recovery after a restart uses it.
func (s *System) Kick(threadIDs ...string) error {
	if err := s.accepting(); err != nil {
		return err
	}
	for _, id := range threadIDs {
		sh, box, err := s.lockBox(id)
		if err != nil {
			return err
		}
		box.kick = true
		sh.mu.Unlock()
	}
	return nil
}
