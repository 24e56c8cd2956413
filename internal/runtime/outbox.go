package runtime

import (
	"context"
	"fmt"
	"strconv"
)

// The outbox (invariant 5): what a slice committed to send, and how the
// next slice knows whether it went out.

// recoverOutbox sends what a previous slice committed and then died
// before sending, with the same IDs, unless the batch or the dedup store
// shows it went out; wake when a call the tool now refuses got its error
// result, so that the model goes on.
func (s *slice) recoverOutbox(ctx context.Context, in SliceInput, batch []Message) (wake bool, err error) {
	if len(s.st.Outbox) == 0 && (s.st.Pending == nil || s.st.Pending.Dispatched) {
		return false, nil
	}
	sent := s.outboxEvidentlySent(in, batch)
	if !sent {
		if sent, err = s.outboxMarkedSent(ctx); err != nil {
			return false, err
		}
	}
	if sent {
		// The predecessor sent everything and recorded that in the
		// dedup store instead of a second commit: clear it with ours.
		s.clearOutbox()
	} else if wake, err = s.resend(ctx); err != nil {
		return false, err
	}
	return s.mutateRecovered(wake), nil
}

// OutboxSentID is the dedup record (per thread) saying that the outbox
// committed at version v was sent in full. With a DedupStore, the engine
// writes it instead of a second commit; a reader of a thread's state that
// finds an outbox at version v should treat it as sent when the record
// exists (the next slice clears it).
func OutboxSentID(v int64) string { return "outbox-sent:" + strconv.FormatInt(v, 10) }

// outboxEvidentlySent reports whether the batch itself shows that the
// loaded outbox was sent, so that no lookup is needed:
//   - a result for the pending call proves the call was dispatched;
//   - on a queue with FIFO groups, a first delivery means every earlier
//     message of the thread was deleted, so the slice that wrote the outbox
//     finished. That is trusted for output events only (replies, notices):
//     if that earlier message went to the dead-letter queue instead, the
//     cost is a lost notification of a reply that history keeps. Calls and
//     messages to threads are always checked.
func (s *slice) outboxEvidentlySent(in SliceInput, batch []Message) bool {
	if s.e.Dedup == nil {
		return false
	}
	if s.mutateTrustsFirstDelivery(in) {
		return true
	}
	for _, o := range s.st.Outbox {
		if o.Output == nil || !in.FirstDelivery {
			return false
		}
	}
	p := s.st.Pending
	if p == nil || p.Dispatched {
		return true
	}
	for _, m := range batch {
		if (m.Kind == KindToolResult || m.Kind == KindWake || m.Kind == KindNotice) && m.ToolCallID == p.ID {
			return true
		}
	}
	return false
}

// outboxMarkedSent reports whether the loaded outbox was sent already.
func (s *slice) outboxMarkedSent(ctx context.Context) (bool, error) {
	if s.e.Dedup == nil {
		return false, nil
	}
	seen, err := s.e.Dedup.Seen(ctx, s.threadID, []string{OutboxSentID(s.version)})
	if err != nil {
		return false, fmt.Errorf("runtime: checking the outbox of thread %s: %w", s.threadID, err)
	}
	return len(seen) == 1 && seen[0], nil
}

// clearOutbox records that everything the outbox held was sent.
func (s *slice) clearOutbox() {
	s.dropOutbox()
	if p := s.st.Pending; p != nil && !p.Dispatched {
		pp := *p
		pp.Dispatched = true
		s.st.Pending = &pp
	}
}
