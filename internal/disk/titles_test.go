package disk

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// titleCases are root titles (a root's first user message) and the
// pieces looked for in them: any case, non-ASCII, quotes (FTS5's own
// syntax), a trigram repeated, pieces under three characters (no
// trigram: the scan), and one that has every trigram of a title but in
// another order (the index's AND of trigrams finds it; the exact check
// must not keep it).
var titleCases = struct {
	titles map[string]string
	pieces []string
}{
	titles: map[string]string{
		"r1": "Plan the TRIP to Zürich",
		"r2": `say "hello" AND then NEAR me`,
		"r3": "aaaaaa banana",
		"r4": "ÉCOLE élève Straße",
		"r5": "abcd bcda",
		"r6": "agent-0000042 wakes",
		"r7": "agent-0000420 sleeps",
	},
	pieces: []string{"trip", "zürich", "ZÜRICH", "plan the", `"hello"`, `" and`, "near", "aaaa", "nana",
		"école", "élève", "straße", "cdab", "abcd", "bcda", "0000042", "agent-00004", "ag", "é", "nothing here", "z"},
}

// want is what the memory store answers for piece over titles: the IDs
// whose title contains it, any case (internal/server's filter).
func wantTitles(titles map[string]string, piece string) []string {
	var out []string
	for id, title := range titles {
		if strings.Contains(strings.ToLower(title), strings.ToLower(piece)) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func rootsWithTitle(t *testing.T, h *History, piece string) ([]string, int) {
	t.Helper()
	page, n, err := h.RootsWhere(context.Background(), RootFilter{Title: strings.ToLower(piece)}, 0, "", 100)
	if err != nil {
		t.Fatalf("roots with title %q: %v", piece, err)
	}
	var out []string
	for _, r := range page {
		out = append(out, r.ID)
	}
	slices.Sort(out)
	return out, n
}

// checkTitleIndex compares the title index with the roots rows: one entry
// for each root with a title, the one its title_row names, holding its ID.
func checkTitleIndex(t *testing.T, d *DB) {
	t.Helper()
	read := func(q string) string {
		rows, err := d.rdb.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var row int64
			var id string
			if err := rows.Scan(&row, &id); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d=%s", row, id))
		}
		return strings.Join(out, " ")
	}
	entries := read(`SELECT rowid, id FROM root_titles ORDER BY rowid`)
	roots := read(`SELECT title_row, id FROM roots WHERE title != '' ORDER BY title_row`)
	if entries != roots || entries == "" {
		t.Fatalf("title index entries %q, the roots rows with a title %q", entries, roots)
	}
}

// TestTitleIndexAnswersAsTheMemoryStore: GET /threads?q= on the sqlite
// store (the title index, or the scan under three characters) selects
// exactly the roots the memory store's filter does, with the same total.
func TestTitleIndexAnswersAsTheMemoryStore(t *testing.T) {
	d := openUnmanaged(t, t.TempDir())
	defer d.Close()
	h := d.History()
	at := runtime.Stamp(100)
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range titleCases.titles {
			if !yield(id) {
				return
			}
		}
	}) {
		at++
		commitWith(t, h, id, func(*runtime.ThreadState) {}, []runtime.Item{{Kind: runtime.ItemUser, At: at, Text: titleCases.titles[id]}})
	}
	if err := d.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkTitleIndex(t, d)
	for _, piece := range titleCases.pieces {
		got, n := rootsWithTitle(t, h, piece)
		if want := wantTitles(titleCases.titles, piece); !slices.Equal(got, want) || n != len(want) {
			t.Errorf("q=%q: %v (total %d), want %v", piece, got, n, want)
		}
	}
}

// TestTitlesAfterAKill: roots whose titles only the journal held at a
// SIGKILL are in the title index after the replay, as are those a
// checkpoint wrote, and a root given a title after it was first indexed
// without one (its tree index row came first) is found by it.
func TestTitlesAfterAKill(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	d := openUnmanaged(t, dir)
	h := d.History()
	user := func(at runtime.Stamp, text string) runtime.Item {
		return runtime.Item{Kind: runtime.ItemUser, At: at, Text: text}
	}
	commitWith(t, h, "a", func(*runtime.ThreadState) {}, []runtime.Item{user(100, "Checkpointed Title")})
	commitWith(t, h, "u", func(*runtime.ThreadState) {}, []runtime.Item{{Kind: runtime.ItemAssistant, At: 110, Text: "no user item yet"}})
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	// Only in the journal from here on.
	commitWith(t, h, "b", func(*runtime.ThreadState) {}, []runtime.Item{user(200, "Journal-only Title")})
	commitWith(t, h, "u", func(*runtime.ThreadState) {}, []runtime.Item{user(300, "a late TITLE")})
	kill(t, d)

	d = openUnmanaged(t, dir) // replays the journal
	defer d.Close()
	h = d.History()
	checkTitleIndex(t, d)
	for piece, want := range map[string]string{"checkpointed": "a", "journal-only": "b", "late title": "u", " title": "a b u"} {
		got, n := rootsWithTitle(t, h, piece)
		if strings.Join(got, " ") != want || n != len(got) {
			t.Errorf("after the replay, q=%q: %v (total %d), want %s", piece, got, n, want)
		}
	}
}

// TestTitlesMigrated: migration v11 indexes the titles of the roots a
// version 10 database holds.
func TestTitlesMigrated(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	h := d.History()
	commitWith(t, h, "a", func(*runtime.ThreadState) {}, []runtime.Item{{Kind: runtime.ItemUser, At: 100, Text: "the First one"}})
	commitWith(t, h, "b", func(*runtime.ThreadState) {}, []runtime.Item{{Kind: runtime.ItemUser, At: 200, Text: "the second ONE"}})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dir)
	for _, q := range []string{`DROP TABLE root_titles`, `DROP TABLE IF EXISTS root_titles_content`, `ALTER TABLE roots DROP COLUMN title_row`, `PRAGMA user_version = 10`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	d = openUnmanaged(t, dir)
	defer d.Close()
	checkTitleIndex(t, d)
	if got, n := rootsWithTitle(t, d.History(), " one"); strings.Join(got, " ") != "a b" || n != 2 {
		t.Fatalf("q=' one' after the migration: %v (total %d), want a b", got, n)
	}
}

// TestTitleQueryUsesTheIndex: a title filter is a search of the title
// index, then a read of each root it finds by its primary key (alone, or
// with a status or an agent), not a scan of the roots.
func TestTitleQueryUsesTheIndex(t *testing.T) {
	d := openUnmanaged(t, t.TempDir())
	defer d.Close()
	// FTS5's plan names its index "0:M<column>" for a MATCH (a bare "0:"
	// would be a scan of every entry)
	if got := queryPlan(t, d, sqlTitleFind); !strings.Contains(got, "VIRTUAL TABLE INDEX 0:M") {
		t.Errorf("%s\nplan: %s\nwant a MATCH of the title index", sqlTitleFind, got)
	}
	for _, f := range []RootFilter{{Title: "abc"}, {Title: "abc", Status: "idle"}, {Title: "abc", Agent: "a", AgentIsDefault: true}} {
		where, _ := f.where()
		q := fmt.Sprintf(sqlRootsOf, "?,?,?", where)
		got := queryPlan(t, d, q)
		if !strings.Contains(got, "SEARCH roots USING PRIMARY KEY (id=?)") || strings.Contains(got, "SCAN") || strings.Contains(got, " threads") {
			t.Errorf("%+v: %s\nplan: %s\nwant each root by its key", f, q, got)
		}
	}
}

// TestTitleChangeReplacesItsEntry: a root whose title changes (a digest
// made again from other items, as after a compaction) keeps one entry, the
// new title's: the old one is removed, not left to match.
func TestTitleChangeReplacesItsEntry(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	d := openUnmanaged(t, dir)
	commitWith(t, d.History(), "a", func(*runtime.ThreadState) {}, []runtime.Item{{Kind: runtime.ItemUser, At: 100, Text: "First Title"}})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dir)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"Second Title", "", "Third Title"} {
		dg := runtime.Digest{Title: title, Titled: title != ""}
		if err := putEncoded(txWriter(ctx, tx), sqlPutDigest, "a", &dg); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	d = openUnmanaged(t, dir)
	defer d.Close()
	checkTitleIndex(t, d)
	var entries int
	if err := d.rdb.QueryRow(`SELECT count(*) FROM root_titles`).Scan(&entries); err != nil || entries != 1 {
		t.Fatalf("%d title entries (%v), want 1", entries, err)
	}
	for piece, want := range map[string]string{"first": "", "second": "", "third": "a"} {
		if got, _ := rootsWithTitle(t, d.History(), piece); strings.Join(got, " ") != want {
			t.Errorf("q=%q: %v, want %q", piece, got, want)
		}
	}
}

// TestTitleCandidatesOrTheScan: a piece the index finds in more titles
// than titleCandidatesMax is answered by the scan, one in fewer by the
// index, and RootsWhere answers both exactly, with their totals.
func TestTitleCandidatesOrTheScan(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	defer d.Close()
	db := rawDB(t, dir)
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	n := titleCandidatesMax + 200
	for i := range n { // straight into the index and the roots rows: faster than n commits
		id := fmt.Sprintf("r%05d", i)
		title := fmt.Sprintf("agent-%07d", i)
		if _, err := tx.Exec(`INSERT INTO roots (id, activity, title) VALUES (?, ?, ?)`, id, i, title); err != nil {
			t.Fatal(err)
		}
		if err := setTitle(txWriter(context.Background(), tx), id, 0, title); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	checkTitleIndex(t, d)
	ctx := context.Background()
	for piece, want := range map[string]struct {
		broad bool
		total int
	}{
		"agent-0000042": {false, 1},
		"agent-00001":   {false, 100},
		"agent-000xyz":  {false, 0},
		"agent-00":      {true, n},
		"nt-0001":       {false, 1000},
	} {
		ids, broad, err := d.History().titleCandidates(ctx, titleTrigrams(piece))
		if err != nil {
			t.Fatal(err)
		}
		if broad != want.broad || (!broad && len(ids) < want.total) {
			t.Errorf("candidates for %q: %d, broad %v; want broad %v", piece, len(ids), broad, want.broad)
		}
		page, total, err := d.History().RootsWhere(ctx, RootFilter{Title: piece}, 0, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		if total != want.total || len(page) != min(50, want.total) {
			t.Errorf("q=%q: %d of %d, want %d", piece, len(page), total, want.total)
		}
		for i := 1; i < len(page); i++ {
			if page[i-1].Activity < page[i].Activity {
				t.Fatalf("q=%q: page not newest first: %v", piece, page)
			}
		}
	}
}
