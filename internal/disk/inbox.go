package disk

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Inbox holds messages that were accepted and not yet consumed: Put before
// answering "accepted", Done once the slice that got them finished (its
// commit is durable, or the messages were dead-lettered). Recovery queues
// what is left, in the order it was accepted. A message put twice (a retry
// with the same ID) while waiting is kept once.
//
// Both go to the journal. A message consumed before the next checkpoint
// never reaches the database; checkpoints write the others, in order, and
// delete the consumed ones that had been written.
type Inbox struct{ d *DB }

// Put stores the messages durably.
func (in *Inbox) Put(ctx context.Context, msgs []runtime.Message) error {
	rec := inboxRec{kind: recInboxPut, entries: make([]inboxEntry, len(msgs))}
	for i := range msgs {
		body, err := marshal(&msgs[i])
		if err != nil {
			return fmt.Errorf("disk: encoding message %s: %w", msgs[i].ID, err)
		}
		rec.entries[i] = inboxEntry{thread: msgs[i].ThreadID, id: msgs[i].ID, body: body}
	}
	buf := getBuf()
	err := in.d.j.do(ctx, &jreq{rec: frame(*buf, rec.size(), rec.put), pooled: buf, after: func() { in.d.inbox.put(rec.entries) }})
	if err != nil {
		return fmt.Errorf("disk: storing %d accepted messages: %w", len(msgs), err)
	}
	return nil
}

// Done removes consumed messages. It does not wait: a crash before the
// removal is durable delivers them again, and history deduplicates them.
func (in *Inbox) Done(threadID string, ids []string) error {
	rec := inboxRec{kind: recInboxDone, entries: make([]inboxEntry, len(ids))}
	for i, id := range ids {
		rec.entries[i] = inboxEntry{thread: threadID, id: id}
	}
	buf := getBuf()
	err := in.d.j.submit(context.Background(), &jreq{rec: frame(*buf, rec.size(), rec.put), pooled: buf, after: func() { in.d.inbox.done(rec.entries) }})
	if err != nil {
		return fmt.Errorf("disk: removing consumed messages of %s: %w", threadID, err)
	}
	return nil
}

// Pending returns the messages not yet consumed, in the order accepted. It
// checkpoints first, so that the database holds them all.
func (in *Inbox) Pending(ctx context.Context) ([]runtime.Message, error) {
	if _, err := in.d.hist.checkpoint(ctx, false, 0); err != nil {
		return nil, err
	}
	rows, err := in.d.rdb.QueryContext(ctx, `SELECT body FROM inbox ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("disk: reading the inbox: %w", err)
	}
	defer rows.Close()
	var out []runtime.Message
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("disk: reading the inbox: %w", err)
		}
		var m runtime.Message
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("disk: inbox holds an unreadable message: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

type inboxKey struct{ thread, id string }

// inboxState is what the journal holds of the inbox and the database does
// not (yet): changed on the journal's goroutine, taken by checkpoints.
type inboxState struct {
	mu sync.Mutex
	// puts are the messages accepted since the last cut, in order; idx
	// finds them (-1: consumed before the cut, so never written).
	puts []inboxEntry
	idx  map[inboxKey]int
	// stored are the messages in the database, or in a cut being written.
	stored map[inboxKey]struct{}
	// dels are stored messages consumed since the last cut.
	dels []inboxKey
	// retry is a cut whose checkpoint failed: written before the next one.
	retry inboxBatch
}

// inboxBatch is what one checkpoint writes of the inbox, in order.
type inboxBatch struct{ ops []inboxOp }

type inboxOp struct {
	del   bool
	entry inboxEntry
}

func (b inboxBatch) empty() bool { return len(b.ops) == 0 }

func newInboxState(stored map[inboxKey]struct{}) *inboxState {
	return &inboxState{idx: map[inboxKey]int{}, stored: stored}
}

func (s *inboxState) put(entries []inboxEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		k := inboxKey{e.thread, e.id}
		if i, ok := s.idx[k]; ok && i >= 0 {
			continue
		}
		if _, ok := s.stored[k]; ok {
			continue
		}
		s.idx[k] = len(s.puts)
		s.puts = append(s.puts, e)
	}
}

func (s *inboxState) done(entries []inboxEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		k := inboxKey{e.thread, e.id}
		if i, ok := s.idx[k]; ok && i >= 0 {
			s.puts[i].body = nil // consumed before it was written: skipped
			s.idx[k] = -1
		}
		if _, ok := s.stored[k]; ok {
			delete(s.stored, k)
			s.dels = append(s.dels, k)
		}
	}
}

// cut takes the changes since the last cut, after a failed checkpoint's.
// Within one generation a message both removed and put was removed first
// (it was put again after it had been consumed), so removals go first.
func (s *inboxState) cut() inboxBatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.retry
	for _, k := range s.dels {
		b.ops = append(b.ops, inboxOp{del: true, entry: inboxEntry{thread: k.thread, id: k.id}})
	}
	for _, e := range s.puts {
		if e.body != nil {
			b.ops = append(b.ops, inboxOp{entry: e})
			s.stored[inboxKey{e.thread, e.id}] = struct{}{}
		}
	}
	s.puts, s.dels, s.retry = nil, nil, inboxBatch{}
	clear(s.idx)
	return b
}

// failed keeps a batch whose checkpoint did not commit for the next one.
func (s *inboxState) failed(b inboxBatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retry = b
}

func writeInbox(w *wconn, b inboxBatch) error {
	for _, op := range b.ops {
		e := op.entry
		var err error
		if op.del {
			_, err = w.exec(sqlInboxDone, e.thread, e.id)
		} else {
			_, err = w.exec(sqlInboxPut, e.thread, e.id, e.body)
		}
		if err != nil {
			return fmt.Errorf("writing inbox message %s/%s: %w", e.thread, e.id, err)
		}
	}
	return nil
}
