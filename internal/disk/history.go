package disk

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

const shardCount = 64

// headroom is spare capacity in a loaded view for the items a slice appends.
const headroom = 8

// History is the durable runtime.HistoryStore. See the package doc.
type History struct {
	d    *DB
	seed maphash.Seed
	sh   [shardCount]hshard
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	// ckptMu keeps checkpoints (and retirements) one at a time.
	ckptMu sync.Mutex
	// retirable: the journal segments up to this one are in the database
	// (a committed checkpoint), not yet synced; retired: removed up to here.
	retirable, retired uint64
	// roots counts the tree index's rows (trees.go).
	roots atomic.Int64
	// loads counts the threads loaded (from memory or the database).
	loads atomic.Int64
}

// Loads is how many times a thread was loaded (Load, LoadLeased): what
// the listings that read digests instead do not add to (listing.go).
func (h *History) Loads() int64 { return h.loads.Load() }

type hshard struct {
	mu  sync.Mutex
	hot map[string]*hotThread
	// busy holds the threads with a commit on its way through the journal
	// (and the children it creates): a second commit of one conflicts.
	busy map[string]struct{}
	// evictions counts threads dropped from hot: a read from the database
	// that raced with one may be stale and is not cached.
	evictions uint64
}

// hotThread is a thread in memory: everything the database and the journal
// hold of it. While a thread is in memory it is the authority (commits are
// checked against it); it leaves memory only once a checkpoint has copied
// it into the database.
type hotThread struct {
	state   runtime.ThreadState
	spawnAt int
	items   []runtime.Item // own items; immutable up to len
	touched int64
	// What the database holds (the journal may hold more).
	stored    bool  // the thread has a row
	storedVer int64 // its version
	storedLen int   // its items (frozen frame and rows)
	rows      int   // item rows beyond the frozen frame
	// lease is the LoadLeased whose slice may append past len(items).
	lease *leaseToken
	// inputs indexes the inputs of the items a compacted thread's loads
	// leave out (Consumed); shared by snapshots, used under the shard lock.
	inputs *local.InputIndex
}

// dirty says whether the journal holds commits the database does not.
func (ht *hotThread) dirty() bool { return !ht.stored || ht.storedVer != ht.state.Version }

func newHistory(d *DB) *History {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(goruntime.GOMAXPROCS(0)),
		zstd.WithLowerEncoderMem(true), zstd.WithZeroFrames(true))
	if err != nil {
		panic(fmt.Sprintf("disk: zstd encoder: %v", err)) // only on invalid options
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(2), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(fmt.Sprintf("disk: zstd decoder: %v", err))
	}
	h := &History{d: d, seed: maphash.MakeSeed(), enc: enc, dec: dec}
	for i := range h.sh {
		h.sh[i].hot = map[string]*hotThread{}
		h.sh[i].busy = map[string]struct{}{}
	}
	return h
}

func (h *History) shard(id string) *hshard {
	return &h.sh[maphash.String(h.seed, id)%shardCount]
}

// Load returns the thread's view in a new slice the caller owns.
func (h *History) Load(ctx context.Context, threadID string) (*runtime.Thread, error) {
	return h.load(ctx, threadID, false)
}

// load is Load, or, for a slice (forSlice), the view from the thread's
// latest compaction point on (State.ViewStart, Thread.Base).
func (h *History) load(ctx context.Context, threadID string, forSlice bool) (*runtime.Thread, error) {
	ht, err := h.get(ctx, threadID)
	if err != nil {
		return nil, err
	}
	if ht == nil {
		return &runtime.Thread{ID: threadID, State: runtime.ThreadState{Stack: []string{threadID}}}, nil
	}
	from := viewFrom(ht, forSlice)
	_, base := ht.inherits()
	ownFrom := max(0, from-base)
	size := max(0, base-from) + len(ht.items) - ownFrom + headroom
	var items []runtime.Item
	if p, off := ht.inherits(); p != "" && from < off {
		if items, err = h.view(ctx, p, from, off, size); err != nil {
			return nil, fmt.Errorf("disk: loading ancestors of %s: %w", threadID, err)
		}
	} else {
		items = make([]runtime.Item, 0, size)
	}
	inherited := len(items)
	items = append(items, ht.items[ownFrom:]...)
	return &runtime.Thread{ID: threadID, State: ht.state.Clone(), Items: items, Inherited: inherited, Base: from}, nil
}

// viewFrom is where a load of ht starts: 0, or for a slice its view start
// when that lies within its view.
func viewFrom(ht *hotThread, forSlice bool) int {
	if _, base := ht.inherits(); forSlice && ht.state.ViewStart > 0 && ht.state.ViewStart <= base+len(ht.items) {
		return ht.state.ViewStart
	}
	return 0
}

// inherits is the thread ht's view inherits from ("" for a root) and the
// view position its own items start at: its spawn point for a child, its
// fork point for a fork (runtime.ThreadState.Inherits), 0 for a root.
func (ht *hotThread) inherits() (string, int) { return ht.state.Inherits(ht.spawnAt) }

// leaseToken identifies one LoadLeased.
type leaseToken struct{}

// LoadLeased is Load for the slice that will write the thread
// (runtime.LeaseLoader): a root thread in memory that no other slice
// borrows gets the stored items themselves, with room to append in place,
// instead of a copy. Its commit then keeps those very slots. It loads the
// model's view only: from the thread's latest compaction point on
// (State.ViewStart, Thread.Base), the ancestors' items included.
func (h *History) LoadLeased(ctx context.Context, threadID string) (*runtime.Thread, error) {
	if _, err := h.get(ctx, threadID); err != nil { // into memory if it is on disk
		return nil, err
	}
	sh := h.shard(threadID)
	sh.mu.Lock()
	ht := sh.hot[threadID]
	if ht == nil || ht.state.Parent != "" || ht.state.Fork != nil || ht.lease != nil {
		sh.mu.Unlock()
		return h.load(ctx, threadID, true)
	}
	if cap(ht.items)-len(ht.items) < headroom {
		ht.items = slices.Grow(ht.items, max(headroom, len(ht.items)))
	}
	tok := &leaseToken{}
	ht.lease = tok
	from := viewFrom(ht, true)
	th := &runtime.Thread{ID: threadID, State: ht.state.Clone(), Items: ht.items[from:], Base: from, Lease: tok}
	sh.mu.Unlock()
	return th, nil
}

// Release ends a lease of LoadLeased.
// CommitsWaitForDisk reports that Commit waits for the journal's fsync
// (unless Options.NoSync): the embedded system then runs more slices at once
// (local.DiskWaiter), so that more commits share each sync.
func (h *History) CommitsWaitForDisk() bool { return !h.d.opts.NoSync }

func (h *History) Release(threadID string, lease any) {
	sh := h.shard(threadID)
	sh.mu.Lock()
	if ht := sh.hot[threadID]; ht != nil && ht.lease != nil && ht.lease == lease {
		ht.lease = nil
	}
	sh.mu.Unlock()
}

var _ runtime.LeaseLoader = (*History)(nil)

// get returns a snapshot of the thread (nil when it was never written),
// from memory or else from the database. The snapshot's items must not be
// modified.
func (h *History) get(ctx context.Context, id string) (*hotThread, error) {
	h.loads.Add(1)
	sh := h.shard(id)
	sh.mu.Lock()
	if ht := sh.hot[id]; ht != nil {
		snap := *ht
		sh.mu.Unlock()
		return &snap, nil
	}
	ev := sh.evictions
	sh.mu.Unlock()
	ht, err := h.read(ctx, id)
	if err != nil || ht == nil {
		return nil, err
	}
	ht.touched = h.d.opts.Now().UnixNano()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if cur := sh.hot[id]; cur != nil {
		snap := *cur // loaded or committed meanwhile: memory is the authority
		return &snap, nil
	}
	if sh.evictions == ev {
		sh.hot[id] = ht
	}
	snap := *ht
	return &snap, nil
}

// read loads a thread from the database: one prepared query when the
// thread is not there (a new thread) or its history is all in its frozen
// frame (an idle thread), else one read transaction for its row and its
// item rows together.
func (h *History) read(ctx context.Context, id string) (*hotThread, error) {
	if !h.d.ids.mayHave(id) {
		return nil, nil // never written: no query
	}
	var state, frozen []byte
	var frozenLen, length int
	ht := &hotThread{stored: true}
	err := h.d.qThread.QueryRowContext(ctx, id).Scan(&ht.spawnAt, &ht.storedVer, &length, &state, &frozen, &frozenLen)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("disk: loading thread %s: %w", id, err)
	case length == frozenLen:
		return h.decode(ht, id, state, frozen, frozenLen, nil)
	}
	tx, err := h.d.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("disk: loading thread %s: %w", id, err)
	}
	defer tx.Rollback()
	err = tx.StmtContext(ctx, h.d.qThread).QueryRowContext(ctx, id).Scan(&ht.spawnAt, &ht.storedVer, &length, &state, &frozen, &frozenLen)
	if err != nil {
		return nil, fmt.Errorf("disk: loading thread %s: %w", id, err)
	}
	return h.decode(ht, id, state, frozen, frozenLen, tx)
}

// decode fills ht from its row, and from its item rows read through tx
// (nil when the frame holds every item).
func (h *History) decode(ht *hotThread, id string, state, frozen []byte, frozenLen int, tx *sql.Tx) (*hotThread, error) {
	ctx := context.Background()
	if err := json.Unmarshal(state, &ht.state); err != nil {
		return nil, fmt.Errorf("disk: thread %s: corrupt state: %w", id, err)
	}
	ht.items = make([]runtime.Item, 0, ht.state.Length+headroom)
	if len(frozen) > 0 {
		raw, err := h.dec.DecodeAll(frozen, nil)
		if err != nil {
			return nil, fmt.Errorf("disk: thread %s: corrupt frozen history: %w", id, err)
		}
		if ht.items, err = local.DecodeItems(ht.items, raw, id, ht.state.Incarnation, 0); err != nil || len(ht.items) != frozenLen {
			return nil, fmt.Errorf("disk: thread %s: frozen history has %d items, want %d: %v", id, len(ht.items), frozenLen, err)
		}
	}
	if tx == nil {
		return h.check(ht, id)
	}
	rows, err := tx.QueryContext(ctx, `SELECT pos, data FROM items WHERE thread = ? AND pos >= ? ORDER BY pos`, id, frozenLen)
	if err != nil {
		return nil, fmt.Errorf("disk: loading the items of %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var pos int
		var data []byte
		if err := rows.Scan(&pos, &data); err != nil {
			return nil, fmt.Errorf("disk: loading the items of %s: %w", id, err)
		}
		if pos != len(ht.items) {
			return nil, fmt.Errorf("disk: thread %s: item row at %d, want %d", id, pos, len(ht.items))
		}
		if ht.items, err = local.DecodeItems(ht.items, data, id, ht.state.Incarnation, pos); err != nil {
			return nil, fmt.Errorf("disk: thread %s: item row at %d: %w", id, pos, err)
		}
		ht.rows++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("disk: loading the items of %s: %w", id, err)
	}
	return h.check(ht, id)
}

// check compares what was read with what the state says.
func (h *History) check(ht *hotThread, id string) (*hotThread, error) {
	if len(ht.items) != ht.state.Length || ht.state.Version != ht.storedVer {
		return nil, fmt.Errorf("disk: thread %s: %d items stored at version %d, state says %d at %d", id, len(ht.items), ht.storedVer, ht.state.Length, ht.state.Version)
	}
	ht.storedLen = len(ht.items)
	return ht, nil
}

// view returns the first limit items of a thread's full view, in a new
// slice with room for extra more.
func (h *History) view(ctx context.Context, id string, from, limit, size int) ([]runtime.Item, error) {
	ht, err := h.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if ht == nil {
		return nil, fmt.Errorf("ancestor %s does not exist", id)
	}
	var items []runtime.Item
	if p, off := ht.inherits(); p != "" && from < min(limit, off) {
		if items, err = h.view(ctx, p, from, min(limit, off), size); err != nil {
			return nil, err
		}
	} else {
		items = make([]runtime.Item, 0, max(size, limit-from))
	}
	_, base := ht.inherits()
	if lo, hi := max(0, from-base), min(len(ht.items), limit-base); lo < hi {
		items = append(items, ht.items[lo:hi]...)
	}
	return items, nil
}

// Consumed implements runtime.ConsumedChecker: whether the thread's own
// items before view position before recorded each ID as their input (the
// part of history a slice's load leaves out), through the thread's index
// of inputs while it is in memory.
func (h *History) Consumed(ctx context.Context, threadID string, before int, ids []string) ([]bool, error) {
	snap, err := h.get(ctx, threadID) // into memory if it is on disk
	if err != nil || snap == nil {
		return make([]bool, len(ids)), err
	}
	sh := h.shard(threadID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ht := sh.hot[threadID]
	if ht == nil { // evicted meanwhile: index the snapshot for this call
		ht = snap
		ht.inputs = nil
	}
	if ht.inputs == nil {
		ht.inputs = new(local.InputIndex)
	}
	_, base := ht.inherits()
	return ht.inputs.Consumed(ht.items, max(0, before-base), ids), nil
}

// attention says what recovery must do for a thread in this state: 1, run
// a slice (it has an outbox to send or a call to dispatch); 2, check its
// dispatched call (PendingCalls); 0, nothing: no such work, or a
// dispatched call of a built-in tool, whose end is durable by itself (a
// sleep's wake-up is a timer row, a thread tool's result comes through
// the inbox or an outbox), so that a million sleeping agents are not read
// at each start.
func attention(st *runtime.ThreadState) int {
	switch {
	case len(st.Outbox) > 0 || (st.Pending != nil && !st.Pending.Dispatched):
		return 1
	case st.Pending != nil && !builtinTools()[st.Pending.Name]:
		return 2
	}
	return 0
}

// builtinTools are the names of the runtime's own tools (the thread and
// sleep tools), which serve's recovery has nothing to check for.
var builtinTools = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, e := range append(runtime.ThreadTools(), runtime.SleepTools(nil, nil)...) {
		names[e.Spec.Name] = true
	}
	return names
})

// Commit applies c atomically and durably: it is checked against the
// thread in memory (read from the database first if it is not there),
// written to the journal, and applied to memory once the journal has synced
// it (see the package doc on group commit).
func (h *History) Commit(ctx context.Context, cm *runtime.Commit) error {
	// A copy: the journal may apply the commit after Commit returned (ctx
	// ended while it waited), and the engine reuses its Commit.
	c := new(runtime.Commit)
	*c = *cm
	c.Inputs = nil // not kept; they alias the committing slice
	if c.State.Version != c.Expected+1 {
		return fmt.Errorf("disk: commit of %s: state version %d, expected %d", c.ThreadID, c.State.Version, c.Expected+1)
	}
	oldLen := c.State.Length - len(c.Append)
	prev, err := h.reserve(ctx, c, oldLen)
	if err != nil {
		return err
	}
	rec, pooled, err := h.encodeCommit(c, oldLen, keptChildren(prev, c.State.Children))
	if err != nil {
		h.release(c)
		return err
	}
	now := h.d.opts.Now().UnixNano()
	if c.SentOnly && len(c.Append) == 0 && len(c.Children) == 0 {
		// Applied now and written behind: the journal keeps the order,
		// so any later commit of the thread is durable only after this
		// one. Lost in a crash, the outbox is sent again (same IDs).
		// Queued whatever ctx says: a later commit's record must never
		// reach the journal without this one.
		h.apply(c, now)
		if err := h.d.j.submit(context.Background(), &jreq{rec: rec, pooled: pooled}); err != nil {
			h.d.opts.Logger.Warn("could not journal that an outbox was sent; it is sent again after a restart", "thread", c.ThreadID, "error", err)
		}
		return nil
	}
	return h.d.j.do(ctx, &jreq{rec: rec, pooled: pooled, after: func() { h.apply(c, now) }, fail: func() { h.release(c) }})
}

// reserve checks c against the thread in memory and marks the thread (and
// the children c creates) busy until the journal has answered. It returns
// the children of the thread's state before c (immutable up to their
// length).
func (h *History) reserve(ctx context.Context, c *runtime.Commit, oldLen int) ([]string, error) {
	id := c.ThreadID
	sh := h.shard(id)
	var prev []string
	for {
		// The loop goes round again whenever the thread came into memory
		// or left it while it was read; a commit whose context ends meanwhile
		// stops here with ctx.Err() instead of looking once more.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sh.mu.Lock()
		if _, ok := sh.busy[id]; ok {
			sh.mu.Unlock()
			return nil, fmt.Errorf("disk: thread %s has another commit in flight: %w", id, runtime.ErrConflict)
		}
		ht := sh.hot[id]
		ev := sh.evictions
		if ht == nil {
			sh.mu.Unlock()
			read, err := h.read(ctx, id)
			if err != nil {
				return nil, err
			}
			sh.mu.Lock()
			switch {
			case sh.hot[id] != nil || sh.evictions != ev:
				sh.mu.Unlock()
				continue // it came into memory, or left it, meanwhile: look again
			case read != nil:
				read.touched = h.d.opts.Now().UnixNano()
				sh.hot[id] = read
				sh.mu.Unlock()
				continue
			}
			// Never written: still locked, reserve it below.
		}
		var version int64
		length := 0
		if ht != nil {
			version, length, prev = ht.state.Version, ht.state.Length, ht.state.Children
		}
		switch {
		case version != c.Expected:
			sh.mu.Unlock()
			return nil, fmt.Errorf("disk: thread %s is at version %d, commit expected %d: %w", id, version, c.Expected, runtime.ErrConflict)
		case length != oldLen:
			sh.mu.Unlock()
			return nil, fmt.Errorf("disk: commit of %s: state length %d, want %d", id, c.State.Length, length+len(c.Append))
		}
		sh.busy[id] = struct{}{}
		sh.mu.Unlock()
		break
	}
	for i, k := range c.Children {
		if err := h.reserveChild(ctx, k.ID); err != nil {
			h.releaseIDs(id)
			for _, done := range c.Children[:i] {
				h.releaseIDs(done.ID)
			}
			return nil, err
		}
	}
	return prev, nil
}

// keptChildren is how many children of the previous state (prev) a
// commit's record may leave out of the new state's (children): all of
// them when they are its first ones, the usual case (a thread's children
// are only ever appended), else none.
func keptChildren(prev, children []string) int {
	if len(prev) == 0 || len(children) < len(prev) || !slices.Equal(prev, children[:len(prev)]) {
		return 0
	}
	return len(prev)
}

// reserveChild marks a thread c creates busy, if it does not exist yet.
func (h *History) reserveChild(ctx context.Context, id string) error {
	sh := h.shard(id)
	sh.mu.Lock()
	_, busy := sh.busy[id]
	if busy || sh.hot[id] != nil {
		sh.mu.Unlock()
		return fmt.Errorf("disk: child thread %s already exists: %w", id, runtime.ErrConflict)
	}
	sh.busy[id] = struct{}{}
	sh.mu.Unlock()
	// Threads leave memory only once the database has them: a child that
	// is neither in memory nor busy exists if and only if it has a row.
	if !h.d.ids.mayHave(id) {
		return nil
	}
	var one int
	err := h.d.rdb.QueryRowContext(ctx, `SELECT 1 FROM threads WHERE id = ?`, id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		h.releaseIDs(id)
		return fmt.Errorf("disk: looking up child thread %s: %w", id, err)
	}
	h.releaseIDs(id)
	return fmt.Errorf("disk: child thread %s already exists: %w", id, runtime.ErrConflict)
}

func (h *History) releaseIDs(ids ...string) {
	for _, id := range ids {
		sh := h.shard(id)
		sh.mu.Lock()
		delete(sh.busy, id)
		sh.mu.Unlock()
	}
}

// release undoes reserve (the journal did not take the commit).
func (h *History) release(c *runtime.Commit) {
	h.releaseIDs(c.ThreadID)
	for _, k := range c.Children {
		h.releaseIDs(k.ID)
	}
}

// encodeCommit frames c as a journal record whose state leaves out its
// first kept children (recCommitKept; 0 for none).
func (h *History) encodeCommit(c *runtime.Commit, oldLen, kept int) ([]byte, *[]byte, error) {
	sb, ib := getBuf(), getBuf()
	defer putBuf(sb)
	defer putBuf(ib)
	st := &c.State
	if kept > 0 {
		cp := c.State
		cp.Children = cp.Children[kept:]
		st = &cp
	}
	state, err := appendState(*sb, st)
	*sb = state
	if err != nil {
		return nil, nil, fmt.Errorf("disk: encoding the state of %s: %w", c.ThreadID, err)
	}
	r := commitRec{thread: c.ThreadID, parent: c.State.Parent, expected: c.Expected, version: int(c.State.Version),
		length: c.State.Length, oldLen: oldLen, state: state, attention: attention(&c.State), kept: kept}
	if len(c.Append) > 0 {
		n := 0
		for i := range c.Append {
			n += 16 + c.Append[i].Size()
		}
		r.items = local.AppendItems(slices.Grow(*ib, n), c.ThreadID, c.State.Incarnation, oldLen, c.Append)
		*ib = r.items
	}
	for _, ch := range c.Children {
		ks, err := marshal(&ch.State)
		if err != nil {
			return nil, nil, fmt.Errorf("disk: encoding the state of child %s: %w", ch.ID, err)
		}
		r.kids = append(r.kids, kidRec{id: ch.ID, parent: ch.State.Parent, spawnAt: ch.SpawnAt, version: int(ch.State.Version),
			length: ch.State.Length, attention: attention(&ch.State), state: ks})
	}
	rb := getBuf()
	rec := frame(*rb, r.size(), r.put)
	return rec, rb, nil
}

// apply puts a durable commit into memory (on the journal's goroutine;
// a SentOnly one before it is durable, see Commit).
func (h *History) apply(c *runtime.Commit, now int64) {
	sh := h.shard(c.ThreadID)
	sh.mu.Lock()
	delete(sh.busy, c.ThreadID)
	ht := sh.hot[c.ThreadID]
	if ht == nil { // a new thread: reserve found no row
		ht = &hotThread{}
		sh.hot[c.ThreadID] = ht
	}
	// Snapshots share the array but read only up to their own len; past
	// len writes only apply (under the shard lock) and the slice holding
	// the lease (LoadLeased), whose commit this is, or is not.
	switch n := len(ht.items); {
	case len(c.Append) > 0 && cap(ht.items) > n && &ht.items[:n+1][n] == &c.Append[0] && (ht.lease == nil || c.Lease == ht.lease):
		ht.items = ht.items[:n+len(c.Append)] // the leased view appended these very slots
	case ht.lease == nil || c.Lease == ht.lease:
		ht.items = append(ht.items, c.Append...)
	default:
		// Another slice holds the lease and may be writing past len: move
		// to a new array and revoke the lease.
		ht.items = append(ht.items[:n:n], c.Append...)
		ht.lease = nil
	}
	ht.state = local.KeepState(c.State) // runtime.Commit allows keeping it; loads clone

	ht.touched = now
	sh.mu.Unlock()
	for _, k := range c.Children {
		ksh := h.shard(k.ID)
		ksh.mu.Lock()
		delete(ksh.busy, k.ID)
		ksh.hot[k.ID] = &hotThread{state: local.KeepState(k.State), spawnAt: k.SpawnAt, touched: now}
		ksh.mu.Unlock()
	}
}

// Threads returns the IDs of all stored threads, sorted: those in the
// database and those only the journal holds yet.
func (h *History) Threads(ctx context.Context) ([]string, error) {
	var fresh []string
	for i := range h.sh {
		sh := &h.sh[i]
		sh.mu.Lock()
		for id, ht := range sh.hot {
			if !ht.stored {
				fresh = append(fresh, id)
			}
		}
		sh.mu.Unlock()
	}
	rows, err := h.d.rdb.QueryContext(ctx, `SELECT id FROM threads ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("disk: listing threads: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("disk: listing threads: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("disk: listing threads: %w", err)
	}
	if len(fresh) == 0 {
		return ids, nil
	}
	// A thread checkpointed since the scan above is in both lists.
	ids = append(ids, fresh...)
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// NeedAttention returns the threads whose state holds an unsent outbox or
// an undispatched call (recovery runs a slice for each). It checkpoints
// first, so that the database answers for every thread.
func (h *History) NeedAttention(ctx context.Context) ([]string, error) {
	if _, err := h.checkpoint(ctx, false, 0); err != nil {
		return nil, err
	}
	rows, err := h.d.rdb.QueryContext(ctx, sqlNeedAttention)
	if err != nil {
		return nil, fmt.Errorf("disk: listing threads to recover: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("disk: listing threads to recover: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// The recovery queries. The attention index is partial (attention > 0):
// SQLite uses it only for a query that says attention > 0 itself (it
// does not infer it from attention = 1), and without it each query read
// every thread's row (5 s at a million threads here).
const (
	sqlNeedAttention = `SELECT id FROM threads WHERE attention = 1 AND attention > 0 ORDER BY id`
	sqlPendingCalls  = `SELECT id, state FROM threads WHERE attention = 2 AND attention > 0 ORDER BY id`
)

// PendingCall is a thread's dispatched call that has no result yet.
type PendingCall struct {
	ThreadID string
	Call     runtime.PendingCall
}

// PendingCalls returns the dispatched calls still waiting for a result. It
// checkpoints first, like NeedAttention.
func (h *History) PendingCalls(ctx context.Context) ([]PendingCall, error) {
	if _, err := h.checkpoint(ctx, false, 0); err != nil {
		return nil, err
	}
	rows, err := h.d.rdb.QueryContext(ctx, sqlPendingCalls)
	if err != nil {
		return nil, fmt.Errorf("disk: listing pending calls: %w", err)
	}
	defer rows.Close()
	var out []PendingCall
	for rows.Next() {
		var id string
		var state []byte
		if err := rows.Scan(&id, &state); err != nil {
			return nil, fmt.Errorf("disk: listing pending calls: %w", err)
		}
		var st runtime.ThreadState
		if err := json.Unmarshal(state, &st); err != nil {
			return nil, fmt.Errorf("disk: thread %s: corrupt state: %w", id, err)
		}
		if st.Pending != nil {
			out = append(out, PendingCall{ThreadID: id, Call: *st.Pending})
		}
	}
	return out, rows.Err()
}

// Stats counts stored and cached threads.
func (h *History) Stats() local.StoreStats {
	var st local.StoreStats
	_ = h.d.rdb.QueryRow(`SELECT count(*) FROM threads`).Scan(&st.Threads)
	for i := range h.sh {
		sh := &h.sh[i]
		sh.mu.Lock()
		st.Hot += len(sh.hot)
		for _, ht := range sh.hot {
			if !ht.stored {
				st.Threads++ // only in the journal yet
			}
			for j := range ht.items {
				st.HotBytes += ht.items[j].Size()
			}
		}
		sh.mu.Unlock()
	}
	return st
}
