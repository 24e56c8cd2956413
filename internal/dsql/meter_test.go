package dsql

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// recordingMeter keeps every row size it is told.
type recordingMeter struct {
	mu          sync.Mutex
	read, wrote map[string][][]int
}

func (m *recordingMeter) Read(thread string, rows []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.read[thread] = append(m.read[thread], slices.Clone(rows))
}

func (m *recordingMeter) Wrote(thread string, rows []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wrote[thread] = append(m.wrote[thread], slices.Clone(rows))
}

func sum(rows []int) int {
	n := 0
	for _, r := range rows {
		n += r
	}
	return n
}

// The meter's row sizes are what PostgreSQL stores: each commit's and
// each load's sizes against the same rows' octet lengths, read back.
func TestMeterCountsStoredRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newSchemaPool(t)
	m := &recordingMeter{read: map[string][][]int{}, wrote: map[string][][]int{}}
	s := New(pool, Options{Limits: Limits{ChunkBytes: 50}, Meter: m})
	items := []runtime.Item{
		item(runtime.ItemUser, strings.Repeat("héllo ✓ ", 20)), // split into chunks
		item(runtime.ItemAssistant, "short"),
	}
	c := rootCommit("m-root", 0, 0, items...)
	c.Children = []runtime.ChildThread{{ID: "m-kid", SpawnAt: 2, State: runtime.ThreadState{Parent: "m-root", Stack: []string{"m-root", "m-kid"}}}}
	mustCommit(t, s, c)
	if _, err := s.Load(ctx, "m-root"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "m-kid"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "m-nobody"); err != nil {
		t.Fatal(err)
	}
	q := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const threadRow = `SELECT octet_length(id) + octet_length(parent) + 30 + octet_length(state) FROM threads WHERE id = $1`
	const itemRows = `SELECT coalesce(sum(octet_length($2::text) + 14 + octet_length(body)), 0) FROM items WHERE thread_id = $1`
	nItems := q(`SELECT count(*) FROM items WHERE thread_id = 'm-root'`)
	if nItems <= len(items) {
		t.Fatalf("%d item rows for %d items: nothing was split", nItems, len(items))
	}
	// The commit: the root's row, its parent-index entry, its item rows,
	// the child's row, its index entry and one ancestor row.
	w := m.wrote["m-root"]
	if len(w) != 1 || len(w[0]) != 2+nItems+3 {
		t.Fatalf("wrote %v, want one commit of %d rows", w, 2+nItems+3)
	}
	want := q(threadRow, "m-root") + len("m-root") + q(itemRows, "m-root", "m-root") +
		q(threadRow, "m-kid") + len("m-root") + len("m-kid") + q(`SELECT octet_length(thread_id) + 20 + octet_length(ancestor_id) FROM thread_ancestors WHERE thread_id = 'm-kid'`)
	if got := sum(w[0]); got != want {
		t.Errorf("the commit wrote %d bytes by the meter, %d stored", got, want)
	}
	if r := m.read["m-root"]; len(r) != 1 || len(r[0]) != nItems+1 || sum(r[0]) != q(threadRow, "m-root")+q(itemRows, "m-root", "m-root") {
		t.Errorf("the root's load read %v, want its %d item rows and thread row as stored", r, nItems)
	}
	// The child reads the items it inherits (keys counted at its own ID),
	// its row and its ancestor row.
	inherited := q(itemRows, "m-root", "m-kid")
	if r := m.read["m-kid"]; len(r) != 1 || sum(r[0]) != inherited+q(threadRow, "m-kid")+len("m-kid")+20+len("m-root") {
		t.Errorf("the child's load read %v (sum %d), want %d", r, sum(r[0]), inherited+q(threadRow, "m-kid")+len("m-kid")+20+len("m-root"))
	}
	if r := m.read["m-nobody"]; len(r) != 1 || len(r[0]) != 0 {
		t.Errorf("a thread never written read %v, want one load of no rows", r)
	}
}
