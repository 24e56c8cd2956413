package disk

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The tree index (schema v8): one row per root thread with the latest item
// time of its whole tree (roots.activity), and threads indexed by parent,
// so that a page of GET /threads reads its trees and nothing else. A
// checkpoint raises a root's activity with each thread of its tree it
// writes new items of (writeRoots), replay with each commit it applies
// (replayRoots); Roots checkpoints first, so that it answers for the
// journal too.

// The tree index's queries (each is an index search: TestQueriesUseTheirIndexes).
const (
	sqlRootsFirst = `SELECT id, activity FROM roots ORDER BY activity DESC, id LIMIT ?`
	sqlRootsAfter = `SELECT id, activity FROM roots WHERE activity <= ? AND NOT (activity = ? AND id <= ?)
		ORDER BY activity DESC, id LIMIT ?`
	// The parent index is partial (parent != ''): both steps say so.
	sqlDescendants = `WITH RECURSIVE below(id) AS (
			SELECT id FROM threads WHERE parent = ? AND parent != ''
			UNION ALL SELECT t.id FROM threads t JOIN below b ON t.parent = b.id AND t.parent != '')
		SELECT id FROM below`
)

// Root is a root thread of the tree index.
type Root struct {
	ID string
	// Activity is the latest item time anywhere in its tree (0 for a tree
	// stored before the index and not committed to since).
	Activity runtime.Stamp
}

// treeRoot is the root of st's tree: its stack's first entry, itself for
// a root; "" when the state says neither (a state without a stack).
func treeRoot(id string, st *runtime.ThreadState) string {
	switch {
	case len(st.Stack) > 0:
		return st.Stack[0]
	case st.Parent == "":
		return id
	}
	return ""
}

// latest is the latest item time of items.
func latest(items []runtime.Item) runtime.Stamp {
	var at runtime.Stamp
	for i := range items {
		at = max(at, items[i].At)
	}
	return at
}

// raiseRoot records that root's tree has an item at at; it reports whether
// the root's row is new.
func raiseRoot(exec func(string, ...any) (int64, error), root string, at runtime.Stamp) (bool, error) {
	n, err := exec(`UPDATE roots SET activity = max(activity, ?) WHERE id = ?`, int64(at), root)
	if err != nil || n > 0 {
		return false, err
	}
	if _, err = exec(`INSERT INTO roots (id, activity) VALUES (?, ?)`, root, int64(at)); err == nil {
		err = countRoot(exec, "", "", false, 1) // the row's defaults, until its digest comes
	}
	return err == nil, err
}

// writeRoots raises the roots of the entries that bring new items (or new
// threads); it returns how many root rows it created.
func writeRoots(w *wconn, snap []ckptEntry) (int, error) {
	added := 0
	for i := range snap {
		e := &snap[i]
		if e.stored && len(e.items) <= e.storedLen {
			continue
		}
		root := treeRoot(e.id, &e.state)
		if root == "" {
			continue
		}
		created, err := raiseRoot(w.exec, root, latest(e.items[min(e.storedLen, len(e.items)):]))
		if err != nil {
			return added, fmt.Errorf("indexing the tree of thread %s: %w", e.id, err)
		}
		if created {
			added++
		}
	}
	return added, nil
}

// replayRoots raises the root of a commit replay applies and advances
// the digests it changes.
func replayRoots(ctx context.Context, tx *replayTx, c *commitRec) error {
	st, items, err := commitContent(c)
	if err != nil {
		return fmt.Errorf("thread %s: indexing its tree: %w", c.thread, err)
	}
	if root := treeRoot(c.thread, &st); root != "" && c.items != nil {
		_, err = raiseRoot(func(q string, args ...any) (int64, error) {
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return 0, err
			}
			return res.RowsAffected()
		}, root, latest(items))
		if err != nil {
			return err
		}
	}
	return replayDigest(ctx, tx, c, &st, items)
}

// commitContent decodes what replay needs of a commit record for the tree
// index: the state and the new items.
func commitContent(c *commitRec) (runtime.ThreadState, []runtime.Item, error) {
	st, err := decodeState(c.state)
	if err != nil || c.items == nil {
		return st, nil, err
	}
	items, err := local.DecodeItems(nil, c.items, c.thread, st.Incarnation, c.oldLen)
	return st, items, err
}

// Roots returns up to limit root threads by their tree's latest activity,
// newest first (then by ID), after the root (afterAt, afterID) when
// afterID is set, and how many roots there are. When memory holds
// commits the database lacks it checkpoints first, like NeedAttention, so
// that they are counted. The query walks the index newest first (the
// parent index serves Descendants; both conditions say parent != ” so
// that SQLite may use the partial index).
func (h *History) Roots(ctx context.Context, afterAt runtime.Stamp, afterID string, limit int) ([]Root, int, error) {
	if h.unstored() {
		if _, err := h.checkpoint(ctx, false, 0); err != nil {
			return nil, 0, err
		}
	}
	q := sqlRootsFirst
	args := []any{limit}
	if afterID != "" {
		q = sqlRootsAfter
		args = []any{int64(afterAt), int64(afterAt), afterID, limit}
	}
	rows, err := h.d.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("disk: listing root threads: %w", err)
	}
	defer rows.Close()
	var out []Root
	for rows.Next() {
		var r Root
		var at int64
		if err := rows.Scan(&r.ID, &at); err != nil {
			return nil, 0, fmt.Errorf("disk: listing root threads: %w", err)
		}
		r.Activity = runtime.Stamp(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("disk: listing root threads: %w", err)
	}
	return out, int(h.roots.Load()), nil
}

// Descendants returns the IDs of every thread below root (its children,
// theirs, and so on), sorted, as the database holds them: call it after
// Roots, whose checkpoint brought the database up to date.
func (h *History) Descendants(ctx context.Context, root string) ([]string, error) {
	rows, err := h.d.rdb.QueryContext(ctx, sqlDescendants, root)
	if err != nil {
		return nil, fmt.Errorf("disk: listing the threads below %s: %w", root, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("disk: listing the threads below %s: %w", root, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("disk: listing the threads below %s: %w", root, err)
	}
	slices.Sort(ids)
	return ids, nil
}

// unstored reports whether memory holds a commit the database lacks.
func (h *History) unstored() bool {
	for i := range h.sh {
		sh := &h.sh[i]
		sh.mu.Lock()
		for _, ht := range sh.hot {
			if ht.dirty() {
				sh.mu.Unlock()
				return true
			}
		}
		sh.mu.Unlock()
	}
	return false
}

// countRoots reads how many roots the index holds (at Open): the sum of
// root_counts, not a count of a million rows.
func (d *DB) countRoots(ctx context.Context) (int64, error) {
	var n int64
	if err := d.rdb.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM root_counts`).Scan(&n); err != nil {
		return 0, fmt.Errorf("disk: counting root threads: %w", err)
	}
	return n, nil
}
