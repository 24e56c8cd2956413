package disk

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Thread digests (schema v9): each thread's runtime.Digest (title,
// status, agent, counts: what a row of GET /threads shows) in a table of
// its own, beside the tree index, with the root's status, agent and title
// copied into its roots row. A page of GET /threads, a filtered one, and
// the count of threads per agent version read these and no thread state.
// A checkpoint writes the digest of each thread it writes (DigestOf over
// the thread's items in memory, on the encoding workers), replay advances
// the stored digest by each commit it applies (Digest.Advance over the
// commit's new items), and migration v9 makes them for the threads an
// older version stored (fillDigests).

const (
	sqlPutDigest = `INSERT INTO digests (id, parent, agent, hash, pinned, versioned, data) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET agent = excluded.agent, hash = excluded.hash, pinned = excluded.pinned,
			versioned = excluded.versioned, data = excluded.data`
	sqlNewDigest = `INSERT INTO digests (id, parent, agent, hash, pinned, versioned, data) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`
	sqlGetDigest  = `SELECT data FROM digests WHERE id = ?`
	sqlRootDigest = `UPDATE roots SET status = ?, agent = ?, versioned = ?, title = ? WHERE id = ?`
	sqlRootNew    = `INSERT INTO roots (id, activity, status, agent, versioned, title) VALUES (?, 0, ?, ?, ?, ?)`
	sqlRootKey    = `SELECT status, agent, versioned FROM roots WHERE id = ?`
	// sqlRootKeyTitle is sqlRootKey with the title and its index entry
	// (titles.go), from schema v11 on.
	sqlRootKeyTitle = `SELECT status, agent, versioned, title, title_row FROM roots WHERE id = ?`
)

// putDigest writes thread id's digest (encoded as data) through exec,
// and its roots row when it is a root; it reports whether that row is new.
func putDigest(rw rowWriter, query, id string, d *runtime.Digest, data []byte) (bool, error) {
	exec := rw.exec
	if _, err := exec(query, id, d.Parent, d.Agent, d.AgentHash, d.Pinned, d.Versioned, data); err != nil {
		return false, err
	}
	if d.Parent != "" {
		return false, nil
	}
	status := d.DurableStatus()
	old, err := rootKey(rw, id)
	if err != nil {
		return false, err
	}
	if old != nil {
		if _, err = exec(sqlRootDigest, status, d.Agent, d.Versioned, d.Title, id); err != nil {
			return false, err
		}
		if !rw.skipTitles && old.title != d.Title {
			if err := setTitle(rw, id, old.titleRow, d.Title); err != nil {
				return false, err
			}
		}
		if old.rootCount == (rootCount{status, d.Agent, d.Versioned}) {
			return false, nil
		}
		if err = countRoot(exec, old.status, old.agent, old.versioned, -1); err == nil {
			err = countRoot(exec, status, d.Agent, d.Versioned, 1)
		}
		return false, err
	}
	if _, err = exec(sqlRootNew, id, status, d.Agent, d.Versioned, d.Title); err == nil {
		err = countRoot(exec, status, d.Agent, d.Versioned, 1)
	}
	if err == nil && !rw.skipTitles && d.Title != "" {
		err = setTitle(rw, id, 0, d.Title)
	}
	return err == nil, err
}

// rootCount is a key of root_counts: how many roots have this status,
// agent and versioned flag (kept with every change of a roots row, so
// that a filtered listing's total is a sum of a few rows, not a count of
// its index range).
type rootCount struct {
	status, agent string
	versioned     bool
}

// rootRow is what putDigest reads of a roots row: its root_counts key,
// and (unless skipTitles) its title and title index entry.
type rootRow struct {
	rootCount
	title    string
	titleRow int64
}

// rootKey reads root id's row; nil when it has none.
func rootKey(rw rowWriter, id string) (*rootRow, error) {
	var k rootRow
	var err error
	if rw.skipTitles {
		err = rw.queryRow(sqlRootKey, id).Scan(&k.status, &k.agent, &k.versioned)
	} else {
		err = rw.queryRow(sqlRootKeyTitle, id).Scan(&k.status, &k.agent, &k.versioned, &k.title, &k.titleRow)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &k, nil
}

// rowWriter is a transaction as the digests' writes see it: the writer's
// connection, replay's transaction, the migration's.
type rowWriter struct {
	exec     func(string, ...any) (int64, error)
	queryRow func(string, ...any) *sql.Row
	// skipTitles leaves the title index alone: migration v9's step, which
	// runs before v11 makes it (fillTitles then indexes what v9 wrote).
	skipTitles bool
}

// txWriter is tx as a rowWriter.
func txWriter(ctx context.Context, tx interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) rowWriter {
	return rowWriter{
		exec: func(q string, args ...any) (int64, error) {
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return 0, err
			}
			return res.RowsAffected()
		},
		queryRow: func(q string, args ...any) *sql.Row { return tx.QueryRowContext(ctx, q, args...) },
	}
}

// countRoot adds by to the count of roots of (status, agent, versioned).
func countRoot(exec func(string, ...any) (int64, error), status, agent string, versioned bool, by int) error {
	_, err := exec(`INSERT INTO root_counts (status, agent, versioned, n) VALUES (?, ?, ?, ?)
		ON CONFLICT (status, agent, versioned) DO UPDATE SET n = n + excluded.n`, status, agent, versioned, by)
	return err
}

// writeDigests writes the digests of a checkpoint's entries (encoded by
// encodeEntry); it returns how many root rows it created.
func writeDigests(w *wconn, snap []ckptEntry) (int, error) {
	added := 0
	for i := range snap {
		e := &snap[i]
		created, err := putDigest(rowWriter{exec: w.exec, queryRow: w.queryRow}, sqlPutDigest, e.id, &e.digest, e.digestJSON)
		if err != nil {
			return added, fmt.Errorf("writing the digest of thread %s: %w", e.id, err)
		}
		if created {
			added++
		}
	}
	return added, nil
}

// replayDigest advances the stored digest of a commit's thread (st, its
// new items added) and makes those of the children it creates.
func replayDigest(ctx context.Context, tx *replayTx, c *commitRec, st *runtime.ThreadState, added []runtime.Item) error {
	var prev runtime.Digest
	var data []byte
	switch err := tx.QueryRowContext(ctx, sqlGetDigest, c.thread).Scan(&data); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(data, &prev); err != nil {
			return fmt.Errorf("thread %s: corrupt digest: %w", c.thread, err)
		}
	}
	rw := txWriter(ctx, tx)
	d := prev.Advance(st, added)
	if err := putEncoded(rw, sqlPutDigest, c.thread, &d); err != nil {
		return fmt.Errorf("thread %s: %w", c.thread, err)
	}
	for _, k := range c.kids {
		ks, err := decodeState(k.state)
		if err != nil {
			return fmt.Errorf("child %s: state: %w", k.id, err)
		}
		kd := runtime.DigestOf(&ks, nil)
		if err := putEncoded(rw, sqlNewDigest, k.id, &kd); err != nil {
			return fmt.Errorf("child %s: %w", k.id, err)
		}
	}
	return nil
}

func putEncoded(rw rowWriter, query, id string, d *runtime.Digest) error {
	data, err := marshal(d)
	if err == nil {
		_, err = putDigest(rw, query, id, d, data)
	}
	if err != nil {
		return fmt.Errorf("writing its digest: %w", err)
	}
	return nil
}

// decodeState reads a journal record's state: JSON, or the binary codec.
func decodeState(b []byte) (runtime.ThreadState, error) {
	var st runtime.ThreadState
	if len(b) > 0 && b[0] == '{' {
		err := json.Unmarshal(b, &st)
		return st, err
	}
	return readState(b)
}

// fillDigests is migration v9's step in Go: the digest of every stored
// thread, from its state and items, a batch of threads at a time.
func fillDigests(ctx context.Context, tx *sql.Tx) error {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return err
	}
	defer dec.Close()
	rw := txWriter(ctx, tx)
	rw.skipTitles = true // the schema is at v9 here: no title index yet
	type row struct {
		id            string
		state, frozen []byte
		frozenLen     int
	}
	for after := ""; ; {
		rows, err := tx.QueryContext(ctx, `SELECT id, state, frozen, frozen_len FROM threads WHERE id > ? ORDER BY id LIMIT 500`, after)
		if err != nil {
			return err
		}
		var batch []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.state, &r.frozen, &r.frozenLen); err != nil {
				rows.Close()
				return err
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		for _, r := range batch {
			var st runtime.ThreadState
			if err := json.Unmarshal(r.state, &st); err != nil {
				return fmt.Errorf("thread %s: corrupt state: %w", r.id, err)
			}
			items, err := storedItems(ctx, tx, dec, r.id, &st, r.frozen, r.frozenLen)
			if err != nil {
				return err
			}
			d := runtime.DigestOf(&st, items)
			if err := putEncoded(rw, sqlPutDigest, r.id, &d); err != nil {
				return fmt.Errorf("thread %s: %w", r.id, err)
			}
		}
		after = batch[len(batch)-1].id
	}
}

// storedItems reads a stored thread's own items: its frozen frame, then
// its item rows.
func storedItems(ctx context.Context, tx *sql.Tx, dec *zstd.Decoder, id string, st *runtime.ThreadState, frozen []byte, frozenLen int) ([]runtime.Item, error) {
	var items []runtime.Item
	if len(frozen) > 0 {
		raw, err := dec.DecodeAll(frozen, nil)
		if err != nil {
			return nil, fmt.Errorf("thread %s: corrupt frozen history: %w", id, err)
		}
		if items, err = local.DecodeItems(nil, raw, id, st.Incarnation, 0); err != nil {
			return nil, fmt.Errorf("thread %s: frozen history: %w", id, err)
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT pos, data FROM items WHERE thread = ? AND pos >= ? ORDER BY pos`, id, frozenLen)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var pos int
		var data []byte
		if err := rows.Scan(&pos, &data); err != nil {
			return nil, err
		}
		if items, err = local.DecodeItems(items, data, id, st.Incarnation, pos); err != nil {
			return nil, fmt.Errorf("thread %s: item row at %d: %w", id, pos, err)
		}
	}
	return items, rows.Err()
}
