package dsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentslice/agentslice/internal/runtime"
)

// threadClassSQL reads one thread's state, for its priority class.
// $1 thread ID.
const threadClassSQL = `SELECT format, state FROM threads WHERE id = $1`

// ThreadClass returns the priority class of an existing thread (ok false
// when the thread was never written). A thread's class never changes, so
// senders that must route a message without a class (sqsq.ClassLookup)
// cache the answer. It reads only the thread's row, never its items, so
// the callback receiver's reader role (ReaderRole) may run it.
func (s *Store) ThreadClass(ctx context.Context, threadID string) (runtime.Class, bool, error) {
	if err := checkID("threadID", threadID); err != nil {
		return "", false, fmt.Errorf("dsql: looking up a thread's class: %w", err)
	}
	var (
		class runtime.Class
		found bool
	)
	err := s.retry.run(ctx, threadID, func() (bool, error) {
		type row struct {
			Format int16
			State  string
		}
		rows, err := s.db.Query(ctx, threadClassSQL, threadID)
		if err != nil {
			return retryable(err)
		}
		r, err := pgx.CollectOneRow(rows, pgx.RowToStructByPos[row])
		if errors.Is(err, pgx.ErrNoRows) {
			found = false
			return false, nil
		}
		if err != nil {
			return retryable(err)
		}
		st, err := decodeState(r.Format, r.State)
		if err != nil {
			return false, runtime.Permanent(err)
		}
		class, found = st.Class.OrDefault(), true
		return false, nil
	})
	if err != nil {
		return "", false, fmt.Errorf("dsql: looking up the class of thread %s: %w", threadID, err)
	}
	return class, found, nil
}
