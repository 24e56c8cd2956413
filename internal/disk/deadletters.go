package disk

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// DeadLetters is the durable local.DeadLetterStore: one row per (thread,
// message ID) in the dead_letters table, written through the writer (not
// the journal: dead letters are rare, and each write waits for its
// transaction).
type DeadLetters struct{ d *DB }

var _ local.DeadLetterStore = (*DeadLetters)(nil)

// DeadLetters returns the durable dead letters.
func (d *DB) DeadLetters() *DeadLetters { return &DeadLetters{d: d} }

// PutDeadLetter stores dl, replacing the entry of its message (its place in
// the list stays).
func (s *DeadLetters) PutDeadLetter(ctx context.Context, dl local.DeadLetter) error {
	m := dl.Message
	body, err := json.Marshal(&m)
	if err != nil {
		return fmt.Errorf("disk: encoding dead letter %s/%s: %w", m.ThreadID, m.ID, err)
	}
	err = s.d.w.do(ctx, &wreq{fn: func(w *wconn) error {
		_, err := w.exec(`INSERT INTO dead_letters (thread, id, body, reason, at, status) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (thread, id) DO UPDATE SET body = excluded.body, reason = excluded.reason, at = excluded.at, status = excluded.status`,
			m.ThreadID, m.ID, body, dl.Reason, dl.At.UnixNano(), string(dl.Status))
		return err
	}})
	if err != nil {
		return fmt.Errorf("disk: storing dead letter %s/%s: %w", m.ThreadID, m.ID, err)
	}
	return nil
}

// DeleteDeadLetter forgets the entry of a message, if any.
func (s *DeadLetters) DeleteDeadLetter(ctx context.Context, threadID, id string) error {
	err := s.d.w.do(ctx, &wreq{fn: func(w *wconn) error {
		_, err := w.exec(`DELETE FROM dead_letters WHERE thread = ? AND id = ?`, threadID, id)
		return err
	}})
	if err != nil {
		return fmt.Errorf("disk: forgetting dead letter %s/%s: %w", threadID, id, err)
	}
	return nil
}

// DeadLetters returns every stored entry, oldest first.
func (s *DeadLetters) DeadLetters(ctx context.Context) ([]local.DeadLetter, error) {
	rows, err := s.d.rdb.QueryContext(ctx, `SELECT body, reason, at, status FROM dead_letters ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("disk: reading dead letters: %w", err)
	}
	defer rows.Close()
	var out []local.DeadLetter
	for rows.Next() {
		var body []byte
		var dl local.DeadLetter
		var at int64
		var status string
		if err := rows.Scan(&body, &dl.Reason, &at, &status); err != nil {
			return nil, fmt.Errorf("disk: reading dead letters: %w", err)
		}
		var m runtime.Message
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("disk: a dead letter holds an unreadable message: %w", err)
		}
		dl.Message, dl.At, dl.Status = m, time.Unix(0, at), local.DeadLetterStatus(status)
		out = append(out, dl)
	}
	return out, rows.Err()
}
