package dsql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Limits keep a commit within what DSQL accepts in one transaction. The
// defaults leave headroom under DSQL's documented limits.
type Limits struct {
	// MaxRows is the most rows one commit may write (DSQL: 3,000).
	MaxRows int
	// MaxBytes is the most bytes one commit may write, counted as the
	// encoded bodies and states plus keys and a per-row overhead (DSQL: 10 MiB).
	MaxBytes int
	// ChunkBytes is the largest item body stored in one row; a larger item is
	// split across rows (DSQL: 1 MiB per non-key column).
	ChunkBytes int
	// MaxStateBytes is the largest encoded thread state (DSQL: 1 MiB per
	// column; the state is not split).
	MaxStateBytes int
	// MaxLoadBytes is the most bytes one load may read (the bodies and
	// states of its rows plus rowOverhead each). DSQL bounds the memory of
	// one query, and a thread's view grows with its age until it is
	// compacted: past this bound Load stops reading and fails with a
	// *LoadTooLargeError naming the thread, instead of the query failing
	// somewhere on the server or the function running out of memory.
	MaxLoadBytes int
}

// The default limits.
const (
	DefaultMaxRows       = 3000
	DefaultMaxBytes      = 10<<20 - 512<<10
	DefaultChunkBytes    = 1<<20 - 64<<10
	DefaultMaxStateBytes = 1<<20 - 64<<10
	DefaultMaxLoadBytes  = 32 << 20
	rowOverhead          = 48 // bytes counted per row for keys and columns besides the payload
)

func (l Limits) withDefaults() Limits {
	if l.MaxRows <= 0 {
		l.MaxRows = DefaultMaxRows
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.ChunkBytes <= 0 {
		l.ChunkBytes = DefaultChunkBytes
	}
	l.ChunkBytes = max(l.ChunkBytes, utf8.UTFMax)
	if l.MaxStateBytes <= 0 {
		l.MaxStateBytes = DefaultMaxStateBytes
	}
	if l.MaxLoadBytes <= 0 {
		l.MaxLoadBytes = DefaultMaxLoadBytes
	}
	return l
}

// Options tune a Store. The zero value is right for DSQL.
type Options struct {
	Limits Limits
	Retry  RetryPolicy
	// Meter, if set, is told the size of the rows each load read and each
	// commit wrote (meter.go).
	Meter Meter
}

// Store is the runtime.HistoryStore on DSQL or PostgreSQL. It is safe for
// concurrent use; it keeps no state besides its pool.
type Store struct {
	db     DB
	limits Limits
	retry  RetryPolicy
	meter  Meter
}

var _ runtime.HistoryStore = (*Store)(nil)

// New returns a store over db (usually the process's *pgxpool.Pool). The
// schema must have been created by Migrate.
func New(db DB, opts Options) *Store {
	return &Store{db: db, limits: opts.Limits.withDefaults(), retry: opts.Retry.withDefaults(), meter: opts.Meter}
}

// Load returns the thread's view (inherited items up to the spawn points,
// then its own) and state, in one query. A thread never written loads as an
// empty root at version 0. A view larger than Limits.MaxLoadBytes, or one
// the database refuses to return for its size, fails with a
// *LoadTooLargeError (ErrLoadTooLarge, permanent).
func (s *Store) Load(ctx context.Context, threadID string) (*runtime.Thread, error) {
	th, _, err := s.load(ctx, threadID, false, nil)
	return th, err
}

// LoadView is Load for a slice (runtime.ViewLoader): the view from the
// thread's latest compaction point on (State.ViewStart, Thread.Base), the
// ancestors' items included, when every own item it leaves out records
// its input (all but those of threads written before migration 5); else
// the whole view.
func (s *Store) LoadView(ctx context.Context, threadID string) (*runtime.Thread, error) {
	th, _, err := s.load(ctx, threadID, true, nil)
	return th, err
}

// LoadViewFor is LoadView that also answers, in the same query, which of
// inputs an own item it left out consumed (runtime.InputViewLoader).
func (s *Store) LoadViewFor(ctx context.Context, threadID string, inputs []string) (*runtime.Thread, []bool, error) {
	return s.load(ctx, threadID, true, inputs)
}

var (
	_ runtime.ViewLoader      = (*Store)(nil)
	_ runtime.InputViewLoader = (*Store)(nil)
)

func (s *Store) load(ctx context.Context, threadID string, forSlice bool, inputs []string) (*runtime.Thread, []bool, error) {
	if err := checkID("threadID", threadID); err != nil {
		return nil, nil, fmt.Errorf("dsql: loading thread: %w", err)
	}
	var th *runtime.Thread
	var consumed []bool
	var read *[]int
	err := s.retry.run(ctx, threadID, func() (bool, error) {
		var err error
		if s.meter != nil {
			read = new([]int) // a retried try starts over
		}
		th, consumed, err = s.loadOnce(ctx, threadID, forSlice, inputs, read)
		return retryable(err)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("dsql: loading thread %s: %w", threadID, err)
	}
	if s.meter != nil {
		s.meter.Read(threadID, *read)
	}
	return th, consumed, nil
}

// viewRow is one row of loadSQL.
type viewRow struct {
	part, depth int32
	pos         int64
	chunk       int32
	format      int16
	body        []byte
}

func (r *viewRow) sameItem(o *viewRow) bool {
	return r.part == o.part && r.depth == o.depth && r.pos == o.pos
}

func compareRows(a, b viewRow) int {
	switch {
	case a.part != b.part:
		return int(a.part - b.part)
	case a.depth != b.depth:
		return int(a.depth - b.depth)
	case a.pos != b.pos:
		if a.pos < b.pos {
			return -1
		}
		return 1
	}
	return int(a.chunk - b.chunk)
}

// loadOnce runs the load query once. With read non-nil, it appends the
// size of each row read (Meter).
func (s *Store) loadOnce(ctx context.Context, threadID string, forSlice bool, inputs []string, read *[]int) (*runtime.Thread, []bool, error) {
	var asked []string // NULL when none: the consumed part then reads nothing
	if len(inputs) > 0 {
		asked = inputs
	}
	rows, err := s.db.Query(ctx, loadSQL, threadID, forSlice, asked)
	if err != nil {
		return nil, nil, classifyLoad(threadID, err)
	}
	defer rows.Close()
	loaded := 0
	consumed := make([]bool, len(inputs))
	var (
		found                          bool
		version, length, spawnAt, base int64
		stateFormat                    int16
		stateBody                      string
		view                           []viewRow
		part, depth, chunk             int32
		pos, v1, v2, v3                int64
		format                         int16
	)
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw) != 9 {
			return nil, nil, fmt.Errorf("load query returned %d columns, want 9", len(raw))
		}
		if loaded += len(raw[8]) + rowOverhead; loaded > s.limits.MaxLoadBytes {
			return nil, nil, runtime.Permanent(&LoadTooLargeError{ThreadID: threadID, Loaded: loaded, Limit: s.limits.MaxLoadBytes})
		}
		// Scan the numeric columns; take the body as raw bytes, copied once
		// (a nil destination skips a column).
		if err := rows.Scan(&part, &depth, &pos, &chunk, &v1, &v2, &v3, &format, nil); err != nil {
			return nil, nil, fmt.Errorf("reading load row: %w", err)
		}
		switch part {
		case 0:
			found = true
			version, length, spawnAt, stateFormat, base = v1, v2, v3, format, pos
			stateBody = string(raw[8])
			continue
		case 3:
			for i, id := range inputs {
				if id == string(raw[8]) {
					consumed[i] = true
				}
			}
			continue
		}
		view = append(view, viewRow{part: part, depth: depth, pos: pos, chunk: chunk, format: format,
			body: append([]byte(nil), raw[8]...)})
		if read != nil {
			*read = append(*read, itemRowSize(threadID, len(raw[8])))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, classifyLoad(threadID, err)
	}
	if !found {
		if len(view) > 0 {
			return nil, nil, fmt.Errorf("items exist but the thread row does not")
		}
		return &runtime.Thread{ID: threadID, State: runtime.ThreadState{Stack: []string{threadID}}}, consumed, nil
	}
	st, err := decodeState(stateFormat, stateBody)
	if err != nil {
		return nil, nil, err
	}
	st.Version, st.Length = version, int(length)
	if read != nil {
		*read = append(*read, threadRowSize(threadID, st.Parent, len(stateBody)))
		if len(st.Stack) > 1 { // thread_ancestors: one row per ancestor
			for _, a := range st.Stack[:len(st.Stack)-1] {
				*read = append(*read, len(threadID)+ancestorRowFixed+len(a))
			}
		}
	}
	if !slices.IsSortedFunc(view, compareRows) {
		slices.SortFunc(view, compareRows)
	}
	wantInherited, leftOut := max(0, spawnAt-base), max(0, base-spawnAt)
	items := make([]runtime.Item, 0, int(wantInherited)+int(length-leftOut))
	inherited := 0
	var buf []byte
	for i := 0; i < len(view); {
		r := &view[i]
		body := r.body
		j := i + 1
		if j < len(view) && view[j].sameItem(r) { // a chunked item
			buf = append(buf[:0], r.body...)
			for ; j < len(view) && view[j].sameItem(r); j++ {
				if view[j].chunk != view[j-1].chunk+1 {
					return nil, nil, fmt.Errorf("item %d of part %d/%d: chunk %d follows chunk %d", r.pos, r.part, r.depth, view[j].chunk, view[j-1].chunk)
				}
				buf = append(buf, view[j].body...)
			}
			body = buf
		}
		if r.chunk != 0 {
			return nil, nil, fmt.Errorf("item %d of part %d/%d starts at chunk %d", r.pos, r.part, r.depth, r.chunk)
		}
		it, err := decodeItem(r.format, body)
		if err != nil {
			return nil, nil, fmt.Errorf("item %d of part %d/%d: %w", r.pos, r.part, r.depth, err)
		}
		items = append(items, it)
		if r.part == 1 {
			inherited++
		}
		i = j
	}
	if int64(inherited) != wantInherited {
		return nil, nil, fmt.Errorf("the thread inherits %d items from %d on but its ancestors hold %d of them", spawnAt, base, inherited)
	}
	if own := len(items) - inherited; int64(own) != length-leftOut {
		return nil, nil, fmt.Errorf("the thread has length %d, %d loaded, but %d own items", length, length-leftOut, own)
	}
	return &runtime.Thread{ID: threadID, State: st, Items: items, Inherited: inherited, Base: int(base)}, consumed, nil
}

// Commit applies c in one transaction sent as one batch (see the package
// doc). It fails with a *ConflictError (runtime.ErrConflict) when the stored
// version is not c.Expected or a child exists, with a *TooLargeError
// (ErrTooLarge, permanent) when c exceeds Limits, and with a plain error
// naming the field when c is malformed.
func (s *Store) Commit(ctx context.Context, c *runtime.Commit) error {
	w, err := s.plan(c)
	if err != nil {
		return err
	}
	err = s.retry.run(ctx, c.ThreadID, func() (bool, error) {
		b := &pgx.Batch{} // a batch is bound to a connection's prepared statements: build one per try
		w.queue(b)
		return classify(c.ThreadID, s.db.SendBatch(ctx, b).Close())
	})
	if err != nil {
		return fmt.Errorf("dsql: committing thread %s at version %d: %w", c.ThreadID, c.Expected, err)
	}
	if s.meter != nil {
		s.meter.Wrote(c.ThreadID, w.wroteRows())
	}
	return nil
}

// write is a validated, encoded commit.
type write struct {
	c      *runtime.Commit
	state  string
	items  []itemRow
	kids   []kidRow
	rows   int
	bytes  int
	oldLen int
}

type itemRow struct {
	pos   int64
	chunk int32
	body  string
	input *string // the first chunk's: the item's input
}

type kidRow struct {
	id, state string
	spawnAt   int64
	viewStart int
}

// plan validates c, encodes it and checks it against the limits.
func (s *Store) plan(c *runtime.Commit) (*write, error) {
	if c == nil {
		return nil, fmt.Errorf("dsql: commit is nil")
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("dsql: commit of thread %s: %s", c.ThreadID, fmt.Sprintf(format, args...))
	}
	if err := checkID("ThreadID", c.ThreadID); err != nil {
		return nil, fmt.Errorf("dsql: commit: %w", err)
	}
	switch {
	case c.Expected < 0:
		return nil, bad("Expected is %d, must not be negative", c.Expected)
	case c.State.Version != c.Expected+1:
		return nil, bad("State.Version is %d, must be Expected+1 = %d", c.State.Version, c.Expected+1)
	case c.State.Length < len(c.Append):
		return nil, bad("State.Length is %d, less than the %d appended items", c.State.Length, len(c.Append))
	}
	w := &write{c: c, oldLen: c.State.Length - len(c.Append)}
	var err error
	if w.state, err = encodeState(&c.State); err != nil {
		return nil, bad("encoding State: %v", err)
	}
	if len(w.state) > s.limits.MaxStateBytes {
		return nil, runtime.Permanent(&TooLargeError{ThreadID: c.ThreadID, What: "state bytes", Size: len(w.state), Limit: s.limits.MaxStateBytes,
			Detail: " (the state is one column; keep large payloads in history items)"})
	}
	w.rows, w.bytes = 1, len(w.state)+len(c.ThreadID)+rowOverhead
	for i := range c.Append {
		body, err := encodeItem(&c.Append[i])
		if err != nil {
			return nil, bad("Append[%d]: %v", i, err)
		}
		pos := int64(w.oldLen + i)
		for k, part := range splitChunks(body, s.limits.ChunkBytes) {
			row := itemRow{pos: pos, chunk: int32(k), body: part}
			if k == 0 {
				row.input = &c.Append[i].Input
				w.bytes += len(c.Append[i].Input)
			}
			w.items = append(w.items, row)
			w.rows++
			w.bytes += len(part) + len(c.ThreadID) + rowOverhead
		}
	}
	seen := map[string]bool{c.ThreadID: true}
	for i := range c.Children {
		ch := &c.Children[i]
		field := fmt.Sprintf("Children[%d]", i)
		if err := checkID(field+".ID", ch.ID); err != nil {
			return nil, bad("%v", err)
		}
		switch {
		case seen[ch.ID]:
			return nil, bad("%s.ID %q appears twice (or is the thread itself)", field, ch.ID)
		case ch.SpawnAt < 0:
			return nil, bad("%s.SpawnAt is %d, must not be negative", field, ch.SpawnAt)
		case ch.State.Version != 0 || ch.State.Length != 0:
			return nil, bad("%s.State has version %d and length %d; a new child has neither", field, ch.State.Version, ch.State.Length)
		}
		seen[ch.ID] = true
		st, err := encodeState(&ch.State)
		if err != nil {
			return nil, bad("encoding %s.State: %v", field, err)
		}
		if len(st) > s.limits.MaxStateBytes {
			return nil, runtime.Permanent(&TooLargeError{ThreadID: c.ThreadID, What: "child state bytes", Size: len(st), Limit: s.limits.MaxStateBytes})
		}
		w.kids = append(w.kids, kidRow{id: ch.ID, state: st, spawnAt: int64(ch.SpawnAt), viewStart: ch.State.ViewStart})
		// The child row plus one thread_ancestors row per ancestor: the
		// parent's stack is its ancestry (at least the parent itself).
		w.rows += 1 + max(len(c.State.Stack), 1)
		w.bytes += len(st) + len(ch.ID) + rowOverhead + max(len(c.State.Stack), 1)*(len(ch.ID)+rowOverhead+64)
	}
	if w.rows > s.limits.MaxRows {
		return nil, runtime.Permanent(&TooLargeError{ThreadID: c.ThreadID, What: "rows", Size: w.rows, Limit: s.limits.MaxRows})
	}
	if w.bytes > s.limits.MaxBytes {
		return nil, runtime.Permanent(&TooLargeError{ThreadID: c.ThreadID, What: "bytes", Size: w.bytes, Limit: s.limits.MaxBytes})
	}
	return w, nil
}

// queue adds the commit's statements to b: 2 + item rows + 2 per child.
func (w *write) queue(b *pgx.Batch) {
	c := w.c
	vs := int64(c.State.ViewStart)
	b.Queue(updateThreadSQL, c.ThreadID, c.Expected, int64(w.oldLen), c.State.Version, int64(c.State.Length), stateFormatJSON, w.state, vs)
	if f := c.State.Fork; c.Expected == 0 && f != nil {
		b.Queue(insertForkSQL, c.ThreadID, f.Thread, int64(f.At), c.State.Version, int64(c.State.Length), stateFormatJSON, w.state, vs)
		b.Queue(insertAncestorsSQL, c.ThreadID, f.Thread, int64(f.At))
	} else if c.Expected == 0 {
		b.Queue(insertRootSQL, c.ThreadID, c.State.Parent, c.State.Version, int64(c.State.Length), stateFormatJSON, w.state, vs)
	} else {
		b.Queue(guardSQL, c.ThreadID)
	}
	for _, it := range w.items {
		b.Queue(insertItemSQL, c.ThreadID, it.pos, it.chunk, itemFormatJSON, it.body, it.input)
	}
	for _, k := range w.kids {
		b.Queue(insertChildSQL, k.id, c.ThreadID, k.spawnAt, stateFormatJSON, k.state, int64(k.viewStart))
		b.Queue(insertAncestorsSQL, k.id, c.ThreadID, k.spawnAt)
	}
}

// checkID rejects IDs that cannot be keys: empty, too long for DSQL's 1 KiB
// primary keys (the runtime caps IDs at runtime.MaxIDLen), not UTF-8, or
// holding NUL (PostgreSQL TEXT cannot).
func checkID(field, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%s is empty", field)
	case len(id) > runtime.MaxIDLen:
		return fmt.Errorf("%s is %d bytes, more than %d", field, len(id), runtime.MaxIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%s %q is not valid UTF-8", field, id)
	case strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("%s %q contains a NUL byte", field, id)
	}
	return nil
}
