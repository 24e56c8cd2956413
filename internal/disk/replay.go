package disk

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrCorrupt is returned by Open for a journal that cannot be replayed: a
// damaged record before the end of the journal, or a commit that does not
// follow from what the database holds. Nothing was changed.
var ErrCorrupt = errors.New("disk: corrupt journal")

// replay applies the journal segments left in the directory to the
// database, in one transaction, and returns the number of the last segment
// (0 when there was none). Applying a record twice changes nothing (a
// checkpoint may have copied it before the crash): a commit whose version
// the database already has is skipped, inbox changes are idempotent. A
// segment that was cut ends with a recEnd record; only the last may end
// without one, in a torn record or a reused file's leftovers, which are
// ignored (see record.go).
func replay(ctx context.Context, db *sql.DB, dir string) (last uint64, records int, err error) {
	segs, err := segments(dir)
	if err != nil || len(segs) == 0 {
		return 0, 0, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("disk: replaying the journal: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("disk: replaying the journal: %w", err)
	}
	defer tx.Rollback()
	rtx := &replayTx{Tx: tx, stmts: map[string]*sql.Stmt{}}
	for i, n := range segs {
		data, err := os.ReadFile(filepath.Join(dir, segName(n)))
		if err != nil {
			return 0, 0, fmt.Errorf("disk: reading journal segment %d: %w", n, err)
		}
		last := i == len(segs)-1
		for off := 0; ; {
			payload, _, ferr := unframe(data[off:], n)
			if ferr != nil {
				if last {
					break // a write cut short by the crash (never acknowledged), or a reused file's leftovers
				}
				return 0, 0, fmt.Errorf("%w: segment %d is damaged at byte %d, before the end of the journal (the files were left as they are)", ErrCorrupt, n, off)
			}
			if payload[0] == recEnd {
				break // cut here; what follows is a reused file's leftovers
			}
			if err := applyRecord(ctx, rtx, payload); err != nil {
				return 0, 0, fmt.Errorf("%w: segment %d, record at byte %d: %v (the files were left as they are)", ErrCorrupt, n, off, err)
			}
			off += frameHeader + len(payload)
			records++
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("disk: committing the replayed journal: %w", err)
	}
	return segs[len(segs)-1], records, nil
}

func applyRecord(ctx context.Context, tx *replayTx, payload []byte) error {
	if len(payload) == 0 {
		return errors.New("empty record")
	}
	r := &reader{b: payload[1:]}
	switch payload[0] {
	case recCommit, recCommitKept:
		var c commitRec
		c.read(r, payload[0])
		if r.err != nil {
			return fmt.Errorf("commit record: %v", r.err)
		}
		return replayCommit(ctx, tx, &c)
	case recInboxPut, recInboxDone:
		in := inboxRec{kind: payload[0]}
		in.read(r)
		if r.err != nil {
			return fmt.Errorf("inbox record: %v", r.err)
		}
		for _, e := range in.entries {
			var err error
			if in.kind == recInboxPut {
				_, err = tx.ExecContext(ctx, sqlInboxPut, e.thread, e.id, e.body)
			} else {
				_, err = tx.ExecContext(ctx, sqlInboxDone, e.thread, e.id)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown record kind %d", payload[0])
}

func replayCommit(ctx context.Context, tx *replayTx, c *commitRec) error {
	var version int64
	var length int
	err := tx.QueryRowContext(ctx, `SELECT version, length FROM threads WHERE id = ?`, c.thread).Scan(&version, &length)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if c.expected != 0 {
			return fmt.Errorf("thread %s: commit expects version %d, the database has no such thread", c.thread, c.expected)
		}
		version, length = 0, 0
	case err != nil:
		return err
	}
	switch {
	case version >= int64(c.version):
		return nil // copied by a checkpoint before the crash
	case version != c.expected || length != c.oldLen:
		return fmt.Errorf("thread %s: commit expects version %d with %d items, the database has version %d with %d", c.thread, c.expected, c.oldLen, version, length)
	}
	state, err := replayState(ctx, tx, c)
	if err != nil {
		return fmt.Errorf("thread %s: state: %w", c.thread, err)
	}
	if _, err := tx.ExecContext(ctx, sqlUpsertState, c.thread, c.parent, 0, c.version, c.length, state, c.attention); err != nil {
		return err
	}
	if c.items != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO items (thread, pos, data) VALUES (?, ?, ?)`, c.thread, c.oldLen, c.items); err != nil {
			return err
		}
	}
	if err := replayRoots(ctx, tx, c); err != nil {
		return err
	}
	for _, k := range c.kids {
		state, err := stateJSON(k.state)
		if err != nil {
			return fmt.Errorf("child %s: state: %w", k.id, err)
		}
		if _, err := tx.ExecContext(ctx, sqlInsertThread, k.id, k.parent, k.spawnAt, k.version, k.length, state, k.attention); err != nil {
			return err
		}
	}
	return nil
}

// replayState is a commit record's state as the database keeps it. A
// record that lists only the children after the previous state's first
// kept (recCommitKept) takes those from the state the database holds,
// which is the previous one (replayCommit checked its version).
func replayState(ctx context.Context, tx *replayTx, c *commitRec) ([]byte, error) {
	if c.kept == 0 {
		return stateJSON(c.state)
	}
	st, err := readState(c.state)
	if err != nil {
		return nil, err
	}
	var prev []byte
	if err := tx.QueryRowContext(ctx, `SELECT state FROM threads WHERE id = ?`, c.thread).Scan(&prev); err != nil {
		return nil, fmt.Errorf("reading the previous state for its children: %w", err)
	}
	var old struct {
		Children []string `json:"children"`
	}
	if err := json.Unmarshal(prev, &old); err != nil {
		return nil, fmt.Errorf("the previous state: %w", err)
	}
	if len(old.Children) < c.kept {
		return nil, fmt.Errorf("the commit keeps %d children of the previous state, which has %d", c.kept, len(old.Children))
	}
	st.Children = append(old.Children[:c.kept:c.kept], st.Children...)
	return marshal(&st)
}

// The statements replay and checkpoints share.
const (
	// sqlUpsertState writes a thread's state (its spawn_at only when the row
	// is new: a child's row is created by its parent's commit).
	sqlUpsertState = `INSERT INTO threads (id, parent, spawn_at, version, length, state, attention) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET version = excluded.version, length = excluded.length, state = excluded.state,
			attention = excluded.attention`
	sqlInsertThread = `INSERT INTO threads (id, parent, spawn_at, version, length, state, attention) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`
	sqlInboxPut  = `INSERT INTO inbox (thread, id, body) VALUES (?, ?, ?) ON CONFLICT (thread, id) DO NOTHING`
	sqlInboxDone = `DELETE FROM inbox WHERE thread = ? AND id = ?`
)

// replayTx is the replay's transaction with its statements prepared once
// each: replay runs a few statements per record, tens of thousands of
// records after a crash, and preparing each anew was most of its time.
type replayTx struct {
	*sql.Tx
	stmts map[string]*sql.Stmt // closed with the transaction
}

func (t *replayTx) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return st, nil
	}
	st, err := t.Tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	t.stmts[query] = st
	return st, nil
}

func (t *replayTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (t *replayTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return t.Tx.QueryRowContext(ctx, query, args...) // carries the same error
	}
	return st.QueryRowContext(ctx, args...)
}
