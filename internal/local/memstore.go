package local

import (
	"context"
	"fmt"
	"hash/maphash"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

const shardCount = 64

// viewHeadroom is spare capacity in a loaded view for the items a slice
// appends, so the engine does not copy the view to grow it.
const viewHeadroom = 8

// fourfoldItems is the length up to which a hot thread's items array grows
// fourfold instead of twofold (1,024 items are about 150 KiB).
const fourfoldItems = 1024

// HistoryStore is the in-memory runtime.HistoryStore of the embedded system.
//
// Threads are kept in two tiers. A hot thread (one that committed recently)
// keeps its state and its history as decoded items: the slice that owns the
// thread borrows the stored items and appends in place (LoadLeased), and a
// commit is an append. FreezeIdle turns threads idle for a while cold: state
// and items are encoded compactly (derivable IDs left out), compressed into
// one zstd frame and packed into an arena of slabs; what remains of the
// thread is a record of a few dozen bytes. The next load or commit thaws the
// frame back, losslessly. Each byte is encoded and compressed once per idle
// period, not once per slice. The codec and the dictionary it learns are in
// dict.go.
type HistoryStore struct {
	arena  *arena
	seed   maphash.Seed
	shards [shardCount]shard
	codec  *coldCodec
	now    func() time.Time
}

type shard struct {
	mu      sync.Mutex
	threads map[string]*record
	// hot holds the records whose hot is set (and, briefly, some frozen
	// ones, which FreezeIdle drops).
	hot map[string]*record
}

// record is one thread: hot (hot != nil) or frozen (cold holds it all).
type record struct {
	hot     *hotRecord
	cold    frame
	rawLen  int32 // length of the encoded form when frozen
	shard   uint8
	touched int64 // unix nanoseconds of the last commit
}

type hotRecord struct {
	// lease is held by the one slice allowed to append to items in place
	// (beyond len, which no one else reads); nil when free. It is the
	// Thread that leased load returned (its Lease).
	lease *runtime.Thread
	// spare is the Thread of the last lease given back with Release, reused
	// by the next leased load: its holder does not use it after Release
	// (runtime.LeaseLoader). A revoked lease's Thread is never reused.
	spare   *runtime.Thread
	state   runtime.ThreadState
	spawnAt int            // how much of the parent's view a child inherits
	items   []runtime.Item // own items, immutable up to len
	// inputs indexes the inputs of the items a compacted thread's loads
	// leave out (Consumed).
	inputs InputIndex
}

// InputIndex indexes the input IDs of a thread's own items by their
// first own position, built as a compacted thread's slices ask whether
// the history their load left out consumed a message
// (runtime.ConsumedChecker), so that the check costs the same on day 300
// as on day 1. A thread that never compacts has none; a store drops it
// with the thread's hot form. Its keys are the items' own strings. The
// zero value is empty; it is not safe for concurrent use.
type InputIndex struct {
	at      map[string]int32
	indexed int
}

// Consumed reports, for each ID, whether one of items[:n] recorded it as
// its input, extending the index to them. items must be the thread's own
// items, the same on every call up to what the index holds.
func (x *InputIndex) Consumed(items []runtime.Item, n int, ids []string) []bool {
	n = min(n, len(items))
	if x.at == nil {
		x.at = make(map[string]int32, n)
	}
	for ; x.indexed < n; x.indexed++ {
		if in := items[x.indexed].Input; in != "" {
			if _, ok := x.at[in]; !ok {
				x.at[in] = int32(x.indexed)
			}
		}
	}
	seen := make([]bool, len(ids))
	for j, id := range ids {
		if at, ok := x.at[id]; ok && int(at) < n {
			seen[j] = true
		}
	}
	return seen
}

// NewHistoryStore returns an empty store.
func NewHistoryStore() *HistoryStore {
	s := &HistoryStore{arena: newArena(slabSize), seed: maphash.MakeSeed(), codec: newColdCodec(), now: time.Now}
	for i := range s.shards {
		s.shards[i].threads = map[string]*record{}
		s.shards[i].hot = map[string]*record{}
	}
	return s
}

func (s *HistoryStore) shardOf(id string) int {
	return int(maphash.String(s.seed, id) % shardCount)
}

// Load returns the thread's view: inherited items, then its own, in a new
// slice the caller owns.
func (s *HistoryStore) Load(ctx context.Context, threadID string) (*runtime.Thread, error) {
	return s.load(threadID, false)
}

// LoadLeased is Load for the slice that will write the thread: a root
// thread's stored items are lent to it, to append to in place, until it
// commits or calls Release, and its state is the stored one, not a deep
// copy (runtime.LeaseLoader). A second concurrent loader gets copies.
// It loads the model's view only: the items from the thread's latest
// compaction point on (State.ViewStart, Thread.Base), the ancestors' ones
// included.
func (s *HistoryStore) LoadLeased(ctx context.Context, threadID string) (*runtime.Thread, error) {
	return s.load(threadID, true)
}

func (s *HistoryStore) load(threadID string, lease bool) (*runtime.Thread, error) {
	sh := &s.shards[s.shardOf(threadID)]
	sh.mu.Lock()
	rec := sh.threads[threadID]
	if rec == nil {
		sh.mu.Unlock()
		return &runtime.Thread{ID: threadID, State: runtime.ThreadState{Stack: []string{threadID}}}, nil
	}
	if err := s.thaw(sh, threadID, rec); err != nil {
		sh.mu.Unlock()
		return nil, err
	}
	h := rec.hot
	own := h.items
	parent, spawnAt := h.state.Inherits(h.spawnAt)
	from := 0
	if vs := h.state.ViewStart; lease && vs > 0 && vs <= spawnAt+len(own) {
		from = vs
	}
	if lease && parent == "" && h.lease == nil {
		// The common case: hand the slice the stored items themselves,
		// with room to append in place, and the stored state, whose
		// slices the leaseholder changes copy-on-write only (see
		// runtime.LeaseLoader; keep clipped them). No copy.
		if cap(h.items)-len(h.items) < viewHeadroom {
			// Fourfold, not twofold, while the thread is short: a hot
			// thread's array is garbage once the thread freezes, so what
			// counts is the bytes allocated and copied on the way (a
			// third less), not the spare slots, which last only while the
			// thread is hot. Density benchmark (infinity, one core):
			// 9.1-9.5 -> 8.5-9.0 CPU-µs per completion, 3,379 -> 2,699
			// bytes allocated. A long thread doubles, so that its spare
			// slots stay at most its own size.
			extra := len(h.items)
			if extra < fourfoldItems {
				extra *= 3
			}
			h.items = slices.Grow(h.items, max(viewHeadroom, extra))
		}
		th := h.spare
		if th == nil {
			th = new(runtime.Thread)
		}
		*th = runtime.Thread{ID: threadID, State: h.state, Items: h.items[from:], Base: from, Lease: th}
		h.lease, h.spare = th, nil
		sh.mu.Unlock()
		return th, nil
	}
	state := h.state.Clone()
	sh.mu.Unlock()

	ownFrom := max(0, from-spawnAt)
	size := max(0, spawnAt-from) + len(own) - ownFrom + viewHeadroom
	var items []runtime.Item
	if parent != "" && from < spawnAt {
		var err error
		if items, err = s.view(parent, from, spawnAt, size); err != nil {
			return nil, fmt.Errorf("local: loading ancestors of %s: %w", threadID, err)
		}
	} else {
		items = make([]runtime.Item, 0, size)
	}
	inherited := len(items)
	items = append(items, own[ownFrom:]...)
	return &runtime.Thread{ID: threadID, State: state, Items: items, Inherited: inherited, Base: from}, nil
}

// view returns the items at positions [from, limit) of a thread's full
// view, in a new slice of capacity size (at least).
func (s *HistoryStore) view(threadID string, from, limit, size int) ([]runtime.Item, error) {
	sh := &s.shards[s.shardOf(threadID)]
	sh.mu.Lock()
	rec := sh.threads[threadID]
	if rec == nil {
		sh.mu.Unlock()
		return nil, fmt.Errorf("ancestor %s does not exist", threadID)
	}
	var own []runtime.Item
	var parent string
	var spawnAt int
	if h := rec.hot; h != nil {
		own = h.items
		parent, spawnAt = h.state.Inherits(h.spawnAt)
		sh.mu.Unlock()
	} else {
		// Read a frozen ancestor without thawing it: it is not being written.
		cold, rawLen := rec.cold, rec.rawLen
		sh.mu.Unlock()
		st, at, items, err := s.decodeFrame(threadID, cold, rawLen)
		if err != nil {
			return nil, err
		}
		own = items
		parent, spawnAt = st.Inherits(at)
	}
	var items []runtime.Item
	if parent != "" && from < min(limit, spawnAt) {
		var err error
		if items, err = s.view(parent, from, min(limit, spawnAt), size); err != nil {
			return nil, err
		}
	} else {
		items = make([]runtime.Item, 0, max(size, limit-from))
	}
	if lo, hi := max(0, from-spawnAt), min(len(own), limit-spawnAt); lo < hi {
		items = append(items, own[lo:hi]...)
	}
	return items, nil
}

func (s *HistoryStore) decodeFrame(id string, f frame, rawLen int32) (runtime.ThreadState, int, []runtime.Item, error) {
	raw, err := s.codec.decode(f.bytes(), make([]byte, 0, rawLen))
	if err != nil {
		return runtime.ThreadState{}, 0, nil, fmt.Errorf("local: thawing thread %s: %w", id, err)
	}
	st, spawnAt, items, err := decodeFrozen(raw, id)
	if err != nil {
		return st, 0, nil, fmt.Errorf("local: thread %s: %w", id, err)
	}
	return st, spawnAt, items, nil
}

// thaw turns a frozen record hot again. Callers hold the shard lock.
func (s *HistoryStore) thaw(sh *shard, id string, rec *record) error {
	if rec.hot != nil {
		return nil
	}
	st, spawnAt, items, err := s.decodeFrame(id, rec.cold, rec.rawLen)
	if err != nil {
		return err
	}
	s.arena.free(rec.cold)
	rec.hot = &hotRecord{state: st, spawnAt: spawnAt, items: items}
	rec.cold, rec.rawLen = frame{}, 0
	sh.hot[id] = rec
	return nil
}

// Release ends the lease a load handed out.
func (s *HistoryStore) Release(threadID string, lease any) {
	sh := &s.shards[s.shardOf(threadID)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if rec := sh.threads[threadID]; rec != nil && rec.hot != nil && rec.hot.lease != nil && any(rec.hot.lease) == lease {
		rec.hot.lease, rec.hot.spare = nil, rec.hot.lease
	}
}

// Commit applies c atomically across the thread and the children it creates.
func (s *HistoryStore) Commit(ctx context.Context, c *runtime.Commit) error {
	if c.State.Version != c.Expected+1 {
		return fmt.Errorf("local: commit of %s: state version %d, expected %d", c.ThreadID, c.State.Version, c.Expected+1)
	}
	home := s.shardOf(c.ThreadID)
	var idxBuf [4]int
	idx := append(idxBuf[:0], home)
	for _, ch := range c.Children {
		idx = append(idx, s.shardOf(ch.ID))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range idx {
			s.shards[i].mu.Unlock()
		}
	}()
	sh := &s.shards[home]
	rec := sh.threads[c.ThreadID]
	if rec != nil {
		if err := s.thaw(sh, c.ThreadID, rec); err != nil {
			return err
		}
	}
	var version int64
	if rec != nil {
		version = rec.hot.state.Version
	}
	if version != c.Expected {
		return fmt.Errorf("local: thread %s is at version %d, commit expected %d: %w", c.ThreadID, version, c.Expected, runtime.ErrConflict)
	}
	for _, ch := range c.Children {
		if s.shards[s.shardOf(ch.ID)].threads[ch.ID] != nil {
			return fmt.Errorf("local: child thread %s already exists: %w", ch.ID, runtime.ErrConflict)
		}
	}
	var length int
	if rec != nil {
		length = rec.hot.state.Length
	}
	if length+len(c.Append) != c.State.Length {
		// Checked before a new thread's record exists: a refused first
		// commit leaves no empty thread behind.
		return fmt.Errorf("local: commit of %s: state length %d, want %d", c.ThreadID, c.State.Length, length+len(c.Append))
	}
	if rec == nil {
		rec = &record{hot: &hotRecord{}, shard: uint8(home)}
		sh.threads[c.ThreadID] = rec
		sh.hot[c.ThreadID] = rec // a record with hot set is in sh.hot (thaw puts it back)
	}
	h := rec.hot
	switch n := len(h.items); {
	case len(c.Append) > 0 && cap(h.items) > n && &h.items[:n+1][n] == &c.Append[0] && (h.lease == nil || c.Lease == h.lease):
		// The leased view appended these very slots: nothing to copy.
		h.items = h.items[:n+len(c.Append)]
	case h.lease == nil || c.Lease == h.lease:
		// No lease, or the committer holds it: its view already holds
		// these items in the slots past len (or nobody writes there).
		h.items = append(h.items, c.Append...)
	default:
		// Another slice holds the lease and may be writing past len:
		// move to a new array and revoke the lease.
		h.items = append(h.items[:len(h.items):len(h.items)], c.Append...)
		h.lease = nil
	}
	h.state = KeepState(c.State)
	now := s.now().UnixNano()
	rec.touched = now
	for _, ch := range c.Children {
		csh := &s.shards[s.shardOf(ch.ID)]
		crec := &record{hot: &hotRecord{state: KeepState(ch.State), spawnAt: ch.SpawnAt}, touched: now, shard: uint8(s.shardOf(ch.ID))}
		csh.threads[ch.ID] = crec
		csh.hot[ch.ID] = crec
	}
	return nil
}

// KeepState returns a committed state as a store keeps it: without a copy
// (runtime.Commit allows that), but with every slice's capacity clipped so
// that nothing appended to the committer's slices can land in the store's.
// Loads hand out deep copies, leased loads the kept state itself.
func KeepState(st runtime.ThreadState) runtime.ThreadState {
	st.Stack = slices.Clip(st.Stack)
	st.Outbox = slices.Clip(st.Outbox)
	st.Deferred = slices.Clip(st.Deferred)
	st.Subscriptions = slices.Clip(st.Subscriptions)
	st.Children = slices.Clip(st.Children)
	st.Open = slices.Clip(st.Open)
	return st
}

// FreezeIdle freezes every hot thread that has not committed for at least
// idle, or is a closed child (runtime.ThreadState.Archivable), and is not
// lent to a slice. It returns how many threads it froze.
// Encoding and compression run outside the shard locks, on every core
// (GOMAXPROCS workers, each taking whole shards); a thread that commits
// meanwhile stays hot.
func (s *HistoryStore) FreezeIdle(idle time.Duration) int {
	cutoff := s.now().Add(-idle).UnixNano()
	workers := min(goruntime.GOMAXPROCS(0), shardCount)
	var next, frozen atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var f freezer
			for i := int(next.Add(1) - 1); i < shardCount; i = int(next.Add(1) - 1) {
				frozen.Add(int64(f.freezeShard(s, &s.shards[i], cutoff)))
			}
		}()
	}
	wg.Wait()
	s.compact()
	return int(frozen.Load())
}

// freezer is one FreezeIdle worker's scratch space.
type freezer struct {
	scratch, raw []byte
	cands        []freezeCand
}

type freezeCand struct {
	id    string
	rec   *record
	h     *hotRecord
	st    runtime.ThreadState
	items []runtime.Item
}

func (f *freezer) freezeShard(s *HistoryStore, sh *shard, cutoff int64) int {
	frozen := 0
	sh.mu.Lock()
	f.cands = f.cands[:0]
	for id, rec := range sh.hot {
		h := rec.hot
		if h == nil {
			delete(sh.hot, id)
			continue
		}
		if (rec.touched > cutoff && !h.state.Archivable()) || h.lease != nil {
			continue
		}
		f.cands = append(f.cands, freezeCand{id, rec, h, h.state.Clone(), h.items})
	}
	sh.mu.Unlock()
	for i := range f.cands {
		c := &f.cands[i]
		var err error
		// The items up to the snapshot's length never change.
		if f.raw, err = encodeFrozen(f.raw[:0], c.id, &c.st, c.h.spawnAt, c.items); err != nil {
			continue // a state that does not encode stays hot
		}
		f.scratch = s.codec.encode(f.raw, f.scratch[:0])
		sh.mu.Lock()
		if c.rec.hot == c.h && c.h.state.Version == c.st.Version && c.h.lease == nil {
			c.rec.cold, c.rec.rawLen, c.rec.hot = s.arena.alloc(f.scratch, c.rec), int32(len(f.raw)), nil
			delete(sh.hot, c.id)
			frozen++
		}
		sh.mu.Unlock()
	}
	clear(f.cands) // drop references to thawed state and items
	return frozen
}

// compact moves the frames out of slabs that thawing has left mostly empty,
// so idle memory stays close to what the frames need.
func (s *HistoryStore) compact() {
	for sl, owners := range s.arena.sparse() {
		for _, rec := range owners {
			sh := &s.shards[rec.shard]
			sh.mu.Lock()
			if rec.hot == nil && rec.cold.uses(sl) {
				old := rec.cold
				rec.cold = s.arena.alloc(old.bytes(), rec)
				s.arena.free(old)
			}
			sh.mu.Unlock()
		}
	}
}

// StoreStats describes what a HistoryStore holds.
type StoreStats struct {
	Threads   int
	Hot       int
	HotBytes  int // payload bytes of hot threads' items
	ColdBytes int // compressed bytes of frozen threads
	ArenaHeld int // bytes of slabs holding frozen frames (ColdBytes plus holes)
	RawBytes  int // encoded bytes of frozen threads before compression, payload bytes of hot ones
}

// Stats counts threads and bytes.
func (s *HistoryStore) Stats() StoreStats {
	var st StoreStats
	st.ArenaHeld, _ = s.arena.stats()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		st.Threads += len(sh.threads)
		for _, rec := range sh.threads {
			if rec.hot == nil {
				st.ColdBytes += rec.cold.len()
				st.RawBytes += int(rec.rawLen)
				continue
			}
			st.Hot++
			n := 0
			for i := range rec.hot.items {
				n += rec.hot.items[i].Size()
			}
			st.HotBytes += n
			st.RawBytes += n
		}
		sh.mu.Unlock()
	}
	return st
}

// Threads returns the IDs of all stored threads, sorted.
func (s *HistoryStore) Threads() []string {
	var ids []string
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for id := range sh.threads {
			ids = append(ids, id)
		}
		sh.mu.Unlock()
	}
	slices.Sort(ids)
	return ids
}

// Consumed implements runtime.ConsumedChecker: whether the thread's own
// items before view position before recorded each ID as their input (the
// part of history a leased load leaves out), through the thread's index
// of inputs (hotRecord.inputs).
func (s *HistoryStore) Consumed(ctx context.Context, threadID string, before int, ids []string) ([]bool, error) {
	sh := &s.shards[s.shardOf(threadID)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	rec := sh.threads[threadID]
	if rec == nil {
		return make([]bool, len(ids)), nil
	}
	if err := s.thaw(sh, threadID, rec); err != nil {
		return nil, err
	}
	h := rec.hot
	return h.inputs.Consumed(h.items, max(0, before-h.spawnAt), ids), nil
}
