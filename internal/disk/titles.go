package disk

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The title index (schema v11): GET /threads?q=TEXT looks for TEXT in
// every root's title, any case, as the memory store does
// (strings.Contains of both strings.ToLower'd). Before this version that
// read every roots row (1.7 s at a million roots). root_titles is an FTS5
// table with the trigram tokenizer over each root's title lower-cased by
// Go (so that the folding is the memory store's, not SQLite's: the
// tokenizer is case-sensitive and folds nothing), contentless (the title
// is already in roots) except for the root's ID (contentless_unindexed),
// and detail=none (no positions: the smallest index; a query is the AND
// of its trigrams, which selects every title that contains it and maybe a
// few more, and the roots row's title is then checked exactly). Each
// roots row keeps the rowid of its title's entry (title_row, 0 for none)
// so that a new title replaces the old entry.
//
// The index is written where a root's title is (putDigest): by each
// checkpoint, by the journal's replay, and by the migration for the roots
// an older version stored (fillTitles), so a kill -9 loses none of it
// (TestTitlesAfterAKill). A piece shorter than a trigram (1 or 2
// characters) has no trigram to look up, and one the index finds in more
// than titleCandidatesMax titles is cheaper to scan for: both read every
// roots row, in activity order, as before.

const (
	sqlTitleAdd    = `INSERT INTO root_titles (id, title) VALUES (?, ?)`
	sqlTitleRowid  = `SELECT last_insert_rowid()`
	sqlTitleDelete = `DELETE FROM root_titles WHERE rowid = ?`
	sqlTitleRow    = `UPDATE roots SET title_row = ? WHERE id = ?`
)

// titleTrigrams is the piece of a title as the index's terms: its
// distinct trigrams, each a quoted FTS5 string, none for a piece under
// three characters.
func titleTrigrams(piece string) []string {
	rs := []rune(piece)
	seen := map[string]bool{}
	var terms []string
	for i := 0; i+3 <= len(rs); i++ {
		tri := string(rs[i : i+3])
		if seen[tri] {
			continue
		}
		seen[tri] = true
		terms = append(terms, `"`+strings.ReplaceAll(tri, `"`, `""`)+`"`)
	}
	return terms
}

const (
	// titleCandidatesMax is how many roots a piece may find in the index
	// and still be answered from it: a piece in more titles than that (a
	// word every title has) is answered by the scan of the roots in
	// activity order, which reads them in order and sorts nothing, where
	// the index would read each by its key and sort them all (2.3-2.9 s
	// against 1.0-1.3 s at 100,000 roots for a piece in every title).
	titleCandidatesMax = 2000
	sqlTitleFind       = `SELECT id FROM root_titles WHERE root_titles MATCH ? LIMIT ?`
	// sqlRootsOf reads some roots by ID; %s is their placeholders, then
	// RootFilter.where's condition.
	sqlRootsOf   = `SELECT id, activity, title FROM roots WHERE id IN (%s) AND %s`
	rootsOfBatch = 500
)

// titleCandidates is the roots whose title entry has every trigram of
// terms (a superset of those whose title holds the piece: a title that
// contains it has each of its trigrams; the caller checks each), or
// broad when there are more than titleCandidatesMax.
func (h *History) titleCandidates(ctx context.Context, terms []string) (ids []string, broad bool, err error) {
	rows, err := h.d.rdb.QueryContext(ctx, sqlTitleFind, strings.Join(terms, " AND "), titleCandidatesMax+1)
	if err != nil {
		return nil, false, fmt.Errorf("disk: searching the title index: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, false, fmt.Errorf("disk: searching the title index: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("disk: searching the title index: %w", err)
	}
	if len(ids) > titleCandidatesMax {
		return nil, true, nil
	}
	return ids, false, nil
}

// rootsByTitle is RootsWhere for a filter whose title piece found ids in
// the index: their roots rows (by primary key, those f's other
// conditions select), newest first, checked and placed by keep.
func (h *History) rootsByTitle(ctx context.Context, f RootFilter, ids []string, keep func(*Root, string) (bool, bool), limit int) ([]Root, int, error) {
	where, args := f.where()
	type row struct {
		r     Root
		title string
	}
	var found []row
	for len(ids) > 0 {
		batch := ids[:min(len(ids), rootsOfBatch)]
		ids = ids[len(batch):]
		q := fmt.Sprintf(sqlRootsOf, strings.TrimSuffix(strings.Repeat("?,", len(batch)), ","), where)
		qargs := make([]any, 0, len(batch)+len(args))
		for _, id := range batch {
			qargs = append(qargs, id)
		}
		rows, err := h.d.rdb.QueryContext(ctx, q, append(qargs, args...)...)
		if err != nil {
			return nil, 0, fmt.Errorf("disk: listing root threads by title: %w", err)
		}
		for rows.Next() {
			var x row
			var at int64
			if err := rows.Scan(&x.r.ID, &at, &x.title); err != nil {
				rows.Close()
				return nil, 0, fmt.Errorf("disk: listing root threads by title: %w", err)
			}
			x.r.Activity = runtime.Stamp(at)
			found = append(found, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, fmt.Errorf("disk: listing root threads by title: %w", err)
		}
	}
	slices.SortFunc(found, func(a, b row) int { // the listing's order: newest first, then by ID
		if a.r.Activity != b.r.Activity {
			return cmp.Compare(b.r.Activity, a.r.Activity)
		}
		return strings.Compare(a.r.ID, b.r.ID)
	})
	var out []Root
	n := 0
	for i := range found {
		match, page := keep(&found[i].r, found[i].title)
		if !match {
			continue
		}
		n++
		if page && len(out) < limit {
			out = append(out, found[i].r)
		}
	}
	return out, n, nil
}

// setTitle points root id's title entry at title: it removes the old
// entry (oldRow, 0 for none), adds title's (none for an empty title) and
// records its rowid in the roots row.
func setTitle(rw rowWriter, id string, oldRow int64, title string) error {
	if oldRow != 0 {
		if _, err := rw.exec(sqlTitleDelete, oldRow); err != nil {
			return fmt.Errorf("removing the title index entry of root %s: %w", id, err)
		}
	}
	var row int64
	if title != "" {
		if _, err := rw.exec(sqlTitleAdd, id, strings.ToLower(title)); err != nil {
			return fmt.Errorf("indexing the title of root %s: %w", id, err)
		}
		if err := rw.queryRow(sqlTitleRowid).Scan(&row); err != nil {
			return fmt.Errorf("indexing the title of root %s: %w", id, err)
		}
	}
	if row == oldRow {
		return nil
	}
	if _, err := rw.exec(sqlTitleRow, row, id); err != nil {
		return fmt.Errorf("recording the title index entry of root %s: %w", id, err)
	}
	return nil
}

// fillTitles is migration v11's step in Go: the title entry of every root
// an older version stored, a batch of roots at a time.
func fillTitles(ctx context.Context, tx *sql.Tx) error {
	rw := txWriter(ctx, tx)
	for after := ""; ; {
		rows, err := tx.QueryContext(ctx, `SELECT id, title FROM roots WHERE id > ? AND title != '' ORDER BY id LIMIT 1000`, after)
		if err != nil {
			return err
		}
		var ids, titles []string
		for rows.Next() {
			var id, title string
			if err := rows.Scan(&id, &title); err != nil {
				rows.Close()
				return err
			}
			ids, titles = append(ids, id), append(titles, title)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		for i, id := range ids {
			if err := setTitle(rw, id, 0, titles[i]); err != nil {
				return err
			}
		}
		after = ids[len(ids)-1]
	}
}
