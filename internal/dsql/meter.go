package dsql

// Meter, set in Options, is told the rows each load read and each commit
// wrote, as the size of each row: what Aurora DSQL bills reads and writes
// by (its DPUs are computed from bytes read and written per transaction;
// internal/cost applies the formulas, docs/cost.md). A row's size is the
// sum of its columns' values as stored: a TEXT column its bytes, a BIGINT
// 8, an INTEGER 4, a SMALLINT 2. DSQL's own row format is not documented,
// so this is the logical size; the storage load test checks it against
// what PostgreSQL stores. Keys of inherited items are counted at the
// reading thread's ID length.
//
// The store calls Meter after a load's query or a commit's batch
// succeeded (a retried try is not counted twice), from the calling
// goroutine; an implementation used by concurrent slices must be safe for
// concurrent use. A nil Meter costs nothing.
type Meter interface {
	// Read is told the size of each row one load read.
	Read(threadID string, rows []int)
	// Wrote is told the size of each row one commit wrote: the thread
	// row, the item rows, each new child's row and ancestor rows, and the
	// threads_parent_idx entry of each thread row inserted.
	Wrote(threadID string, rows []int)
}

// Sizes of the fixed-width columns, for Meter.
const (
	// threadRowFixed: depth INTEGER, spawn_at, version, length BIGINT,
	// format SMALLINT.
	threadRowFixed = 4 + 3*8 + 2
	// itemRowFixed: pos BIGINT, chunk INTEGER, format SMALLINT.
	itemRowFixed = 8 + 4 + 2
	// ancestorRowFixed: depth INTEGER, view_cut, base BIGINT.
	ancestorRowFixed = 4 + 2*8
)

func threadRowSize(id, parent string, state int) int {
	return len(id) + len(parent) + threadRowFixed + state
}

func itemRowSize(threadID string, body int) int { return len(threadID) + itemRowFixed + body }

// wroteRows lists the sizes of the rows w writes, for Meter.
func (w *write) wroteRows() []int {
	c := w.c
	rows := make([]int, 0, 2+len(w.items)+3*len(w.kids))
	rows = append(rows, threadRowSize(c.ThreadID, c.State.Parent, len(w.state)))
	if c.Expected == 0 {
		rows = append(rows, len(c.State.Parent)+len(c.ThreadID)) // threads_parent_idx
	}
	for _, it := range w.items {
		rows = append(rows, itemRowSize(c.ThreadID, len(it.body)))
	}
	for _, k := range w.kids {
		rows = append(rows, threadRowSize(k.id, c.ThreadID, len(k.state)), len(c.ThreadID)+len(k.id))
		ancestors := c.State.Stack // the parent's stack is the child's ancestry
		if len(ancestors) == 0 {
			ancestors = []string{c.ThreadID}
		}
		for _, a := range ancestors {
			rows = append(rows, len(k.id)+ancestorRowFixed+len(a))
		}
	}
	return rows
}
