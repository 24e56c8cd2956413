package disk

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Inbox holds messages that were accepted and not yet consumed: Put before
// answering "accepted", Done once the slice that got them finished (its
// commit is durable, or the messages were dead-lettered). Recovery queues
// what is left, in the order it was accepted. A message put twice (a retry
// with the same ID) while waiting is kept once.
type Inbox struct{ d *DB }

// Put stores the messages durably.
func (in *Inbox) Put(ctx context.Context, msgs []runtime.Message) error {
	bodies := make([][]byte, len(msgs))
	for i := range msgs {
		var err error
		if bodies[i], err = json.Marshal(&msgs[i]); err != nil {
			return fmt.Errorf("disk: encoding message %s: %w", msgs[i].ID, err)
		}
	}
	err := in.d.w.do(ctx, &wreq{atomic: len(msgs) > 1, fn: func(w *wconn) error {
		for i, m := range msgs {
			if _, err := w.exec(`INSERT INTO inbox (thread, id, body) VALUES (?, ?, ?) ON CONFLICT (thread, id) DO NOTHING`,
				m.ThreadID, m.ID, bodies[i]); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("disk: storing %d accepted messages: %w", len(msgs), err)
	}
	return nil
}

// Done removes consumed messages. It does not wait: a crash before the
// removal is durable delivers them again, and history deduplicates them.
func (in *Inbox) Done(threadID string, ids []string) error {
	err := in.d.w.submit(&wreq{fn: func(w *wconn) error {
		for _, id := range ids {
			if _, err := w.exec(`DELETE FROM inbox WHERE thread = ? AND id = ?`, threadID, id); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("disk: removing consumed messages of %s: %w", threadID, err)
	}
	return nil
}

// Pending returns the messages not yet consumed, in the order accepted.
func (in *Inbox) Pending(ctx context.Context) ([]runtime.Message, error) {
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
