package local

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentslice/agentslice/internal/runtime"
)

// DeadLetterStatus says what became of a dead letter.
type DeadLetterStatus string

// The dead letter statuses.
const (
	// DeadOpen: set aside, nothing done about it yet.
	DeadOpen DeadLetterStatus = "open"
	// DeadRedriven: sent to its thread again (same ID); it becomes
	// resolved once consumed, or open again if it fails again.
	DeadRedriven DeadLetterStatus = "redriven"
	// DeadResolved: a message with its ID was consumed after it was set
	// aside (redriven, or sent again by its client).
	DeadResolved DeadLetterStatus = "resolved"
)

// DeadLetterStore keeps dead letters across restarts (internal/disk
// implements it). Put inserts or replaces the entry of (thread, message
// ID); List returns them in the order they were first put.
type DeadLetterStore interface {
	PutDeadLetter(ctx context.Context, d DeadLetter) error
	DeleteDeadLetter(ctx context.Context, threadID, id string) error
	DeadLetters(ctx context.Context) ([]DeadLetter, error)
}

// The errors of Redrive and DiscardDeadLetter.
var (
	ErrNoDeadLetter = errors.New("local: no such dead letter")
	// ErrDeadLetterResolved: a message with the entry's ID was consumed
	// since; redriving it would do nothing.
	ErrDeadLetterResolved = errors.New("local: the dead letter is resolved")
)

type deadKey struct{ thread, id string }

func keyOf(m runtime.Message) deadKey { return deadKey{m.ThreadID, m.ID} }

// loadDeadLetters reads the stored dead letters (New calls it).
func (s *System) loadDeadLetters(ctx context.Context) error {
	if s.cfg.DeadLetters == nil {
		return nil
	}
	dead, err := s.cfg.DeadLetters.DeadLetters(ctx)
	if err != nil {
		return fmt.Errorf("local: loading the dead letters: %w", err)
	}
	if len(dead) > maxDeadLetters {
		dead = dead[len(dead)-maxDeadLetters:]
	}
	s.dead = append(s.dead[:0], dead...)
	for _, d := range s.dead {
		if d.Status != DeadResolved {
			s.deadOpen.Add(1)
		}
	}
	s.deadSeen = len(s.dead)
	s.reindexDead()
	return nil
}

// reindexDead rebuilds deadIDs after s.dead shifted. Called with s.mu held.
func (s *System) reindexDead() {
	clear(s.deadIDs)
	for i, d := range s.dead {
		s.deadIDs[keyOf(d.Message)] = i
	}
}

// storeDead persists an entry, best effort: a dead letter lost to a failed
// write is still in memory and in the log.
func (s *System) storeDead(d DeadLetter) {
	if s.cfg.DeadLetters == nil {
		return
	}
	if err := s.cfg.DeadLetters.PutDeadLetter(context.Background(), d); err != nil {
		s.log.Warn("dead letter not stored; it is listed until the process stops", "thread", d.Message.ThreadID,
			"message", d.Message.ID, "error", err)
	}
}

// resolveDead marks the batch's dead letters resolved: the batch's slice
// finished, so its messages are consumed (or were already).
func (s *System) resolveDead(batch []runtime.Message) {
	if s.deadOpen.Load() == 0 {
		return // the common case: one atomic load per batch
	}
	var changed []DeadLetter
	s.mu.Lock()
	for _, m := range batch {
		if i, ok := s.deadIDs[keyOf(m)]; ok && s.dead[i].Status != DeadResolved {
			s.dead[i].Status = DeadResolved
			s.deadOpen.Add(-1)
			changed = append(changed, s.dead[i])
		}
	}
	s.mu.Unlock()
	for _, d := range changed {
		s.log.Info("dead letter resolved: the message was consumed", "thread", d.Message.ThreadID, "message", d.Message.ID)
		s.storeDead(d)
	}
}

// Redrive sends a dead letter's message to its thread again, with its ID
// (so history still deduplicates it). The entry stays listed as redriven
// until the message is consumed (resolved) or fails again (open).
//
// The entry is marked redriven (and stored) before the message is sent:
// from Send on, the thread may consume the message or fail on it at any
// moment, and resolveDead and deadLetter must find the entry redriven. Marked
// after Send, a slice that failed first found the entry still open, took it
// for a redelivery of a message already set aside and said nothing (no
// error event), and then Redrive marked it redriven for good; one that
// succeeded first had its resolved status overwritten by a stale copy.
func (s *System) Redrive(ctx context.Context, threadID, id string) (DeadLetter, error) {
	s.mu.Lock()
	i, ok := s.deadIDs[deadKey{threadID, id}]
	if !ok {
		s.mu.Unlock()
		return DeadLetter{}, fmt.Errorf("%w: message %s of thread %s", ErrNoDeadLetter, id, threadID)
	}
	before := s.dead[i]
	if before.Status == DeadResolved {
		s.mu.Unlock()
		return before, fmt.Errorf("%w: message %s of thread %s was consumed since", ErrDeadLetterResolved, id, threadID)
	}
	s.dead[i].Status, s.dead[i].At = DeadRedriven, s.engine.Clock()
	d := s.dead[i]
	s.mu.Unlock()
	s.storeDead(d)
	if err := s.Send(ctx, d.Message); err != nil {
		// Nothing was sent (the system stopped, the inbox refused): the
		// entry is as it was, unless something changed it meanwhile (a
		// discard, or the client's own resend consumed or refused).
		s.mu.Lock()
		i, ok := s.deadIDs[deadKey{threadID, id}]
		restore := ok && s.dead[i].Status == DeadRedriven
		if restore {
			s.dead[i] = before
		}
		s.mu.Unlock()
		if restore {
			s.storeDead(before)
		}
		return before, fmt.Errorf("local: redriving message %s of thread %s: %w", id, threadID, err)
	}
	s.log.Info("dead letter redriven", "thread", threadID, "message", id)
	return d, nil
}

// DiscardDeadLetter forgets a dead letter.
func (s *System) DiscardDeadLetter(ctx context.Context, threadID, id string) error {
	s.mu.Lock()
	i, ok := s.deadIDs[deadKey{threadID, id}]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("%w: message %s of thread %s", ErrNoDeadLetter, id, threadID)
	}
	if s.dead[i].Status != DeadResolved {
		s.deadOpen.Add(-1)
	}
	s.dead = append(s.dead[:i:i], s.dead[i+1:]...)
	s.reindexDead()
	s.mu.Unlock()
	s.log.Info("dead letter discarded", "thread", threadID, "message", id)
	if s.cfg.DeadLetters != nil {
		if err := s.cfg.DeadLetters.DeleteDeadLetter(ctx, threadID, id); err != nil {
			return fmt.Errorf("local: forgetting dead letter %s of thread %s: %w", id, threadID, err)
		}
	}
	return nil
}
