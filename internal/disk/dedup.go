package disk

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Dedup is the durable runtime.DedupStore: records expire after
// Options.DedupTTL, like the DynamoDB one, and expired ones are swept now
// and then.
type Dedup struct {
	d     *DB
	marks atomic.Int64
}

var _ runtime.DedupStore = (*Dedup)(nil)

// Seen reports which IDs are marked for the thread and not expired.
func (s *Dedup) Seen(ctx context.Context, threadID string, ids []string) ([]bool, error) {
	out := make([]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(ids)+2)
	args = append(args, threadID, s.d.opts.Now().UnixNano())
	for _, id := range ids {
		args = append(args, id)
	}
	q := `SELECT id FROM dedup WHERE thread = ? AND expires > ? AND id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
	rows, err := s.d.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("disk: reading processed IDs of %s: %w", threadID, err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("disk: reading processed IDs of %s: %w", threadID, err)
		}
		seen[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("disk: reading processed IDs of %s: %w", threadID, err)
	}
	for i, id := range ids {
		out[i] = seen[id]
	}
	return out, nil
}

// Mark records the IDs durably.
func (s *Dedup) Mark(ctx context.Context, threadID string, ids []string) error {
	now := s.d.opts.Now()
	exp := now.Add(s.d.opts.DedupTTL).UnixNano()
	sweep := s.marks.Add(int64(len(ids)))%4096 < int64(len(ids))
	err := s.d.w.do(ctx, &wreq{atomic: true, fn: func(w *wconn) error {
		for _, id := range ids {
			if _, err := w.exec(`INSERT INTO dedup (thread, id, expires) VALUES (?, ?, ?)
				ON CONFLICT (thread, id) DO UPDATE SET expires = excluded.expires`, threadID, id, exp); err != nil {
				return err
			}
		}
		if sweep {
			if _, err := w.exec(`DELETE FROM dedup WHERE expires <= ?`, now.UnixNano()); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("disk: marking %d IDs of %s processed: %w", len(ids), threadID, err)
	}
	return nil
}
