package disk

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
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
// characters) has no trigram to look up and still reads every roots row.

const (
	sqlTitleAdd    = `INSERT INTO root_titles (id, title) VALUES (?, ?)`
	sqlTitleRowid  = `SELECT last_insert_rowid()`
	sqlTitleDelete = `DELETE FROM root_titles WHERE rowid = ?`
	sqlTitleRow    = `UPDATE roots SET title_row = ? WHERE id = ?`
	// The FTS table drives the join (CROSS JOIN keeps it first); each hit
	// reads its roots row by primary key. %s is RootFilter.where's
	// condition, on roots' own columns.
	sqlRootsByTitle = `SELECT r.id, r.activity, r.title FROM root_titles t CROSS JOIN roots r ON r.id = t.id
		WHERE root_titles MATCH ? AND %s ORDER BY r.activity DESC, r.id`
)

// titleTrigrams is the piece of a title as the index's query: the AND of
// its distinct trigrams (each a quoted FTS5 string), and whether it has
// any (a piece under three characters has none).
func titleTrigrams(piece string) (string, bool) {
	rs := []rune(piece)
	if len(rs) < 3 {
		return "", false
	}
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
	return strings.Join(terms, " AND "), true
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

// rootsByTitle is RootsWhere's query for a filter with a title piece of
// three characters or more: the roots whose title entry has each of its
// trigrams, checked against the piece by keep.
func (h *History) rootsByTitle(ctx context.Context, f RootFilter, match string, keep func(*Root, string) (bool, bool), limit int) ([]Root, int, error) {
	where, args := f.where()
	return h.scanRoots(ctx, fmt.Sprintf(sqlRootsByTitle, where), append([]any{match}, args...), keep, limit)
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
