package local

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentslice/agentslice/internal/runtime"
)

const shardCount = 64

// viewHeadroom is spare capacity in a loaded view for the items a slice
// appends, so the engine does not copy the view to grow it.
const viewHeadroom = 8

// HistoryStore is the in-memory runtime.HistoryStore of the embedded system.
//
// Threads are kept in two tiers. A hot thread (one that committed recently)
// keeps its history as decoded items, so loading it is one copy of a slice
// header array and committing is an append. FreezeIdle encodes the history of
// threads idle for a while into a compact binary log and compresses it into
// one zstd frame; the next load or commit thaws the frame back into items,
// losslessly. Each byte is encoded and compressed once per idle period, not
// once per slice.
type HistoryStore struct {
	seed   maphash.Seed
	shards [shardCount]shard
	enc    *zstd.Encoder
	dec    *zstd.Decoder
	now    func() time.Time
}

type shard struct {
	mu      sync.Mutex
	threads map[string]*record
	hot     map[string]*record
}

type record struct {
	// lease is held by the one slice allowed to append to items in place
	// (beyond len, which no one else reads); nil when free.
	lease   *leaseToken
	state   runtime.ThreadState
	spawnAt int            // how much of the parent's view a child inherits
	items   []runtime.Item // hot: own items, immutable up to len
	cold    []byte         // frozen: zstd frame of the encoded items
	rawLen  int            // length of the encoded log when frozen
	touched time.Time
}

// NewHistoryStore returns an empty store.
func NewHistoryStore() *HistoryStore {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(4),
		zstd.WithLowerEncoderMem(true), zstd.WithZeroFrames(true))
	if err != nil {
		panic(fmt.Sprintf("local: zstd encoder: %v", err)) // only on invalid options
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(4), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(fmt.Sprintf("local: zstd decoder: %v", err))
	}
	s := &HistoryStore{seed: maphash.MakeSeed(), enc: enc, dec: dec, now: time.Now}
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
// commits or calls Release. A second concurrent loader gets a copy.
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
	state, own, parent, spawnAt := rec.state.Clone(), rec.items, rec.state.Parent, rec.spawnAt
	if lease && parent == "" && rec.lease == nil {
		// The common case: hand the slice the stored items themselves,
		// with room to append in place. No copy.
		if cap(rec.items)-len(rec.items) < viewHeadroom {
			rec.items = slices.Grow(rec.items, max(viewHeadroom, len(rec.items)))
		}
		tok := &leaseToken{}
		rec.lease = tok
		items := rec.items
		sh.mu.Unlock()
		return &runtime.Thread{ID: threadID, State: state, Items: items, Lease: tok}, nil
	}
	sh.mu.Unlock()

	var items []runtime.Item
	if parent != "" {
		var err error
		if items, err = s.view(parent, spawnAt, len(own)+viewHeadroom); err != nil {
			return nil, fmt.Errorf("local: loading ancestors of %s: %w", threadID, err)
		}
	} else {
		items = make([]runtime.Item, 0, len(own)+viewHeadroom)
	}
	inherited := len(items)
	items = append(items, own...)
	return &runtime.Thread{ID: threadID, State: state, Items: items, Inherited: inherited}, nil
}

// view returns the first limit items of a thread's full view, in a new
// slice with room for extra more.
func (s *HistoryStore) view(threadID string, limit, extra int) ([]runtime.Item, error) {
	sh := &s.shards[s.shardOf(threadID)]
	sh.mu.Lock()
	rec := sh.threads[threadID]
	if rec == nil {
		sh.mu.Unlock()
		return nil, fmt.Errorf("ancestor %s does not exist", threadID)
	}
	own, parent, spawnAt, cold := rec.items, rec.state.Parent, rec.spawnAt, rec.cold
	sh.mu.Unlock()
	if cold != nil {
		// Read a frozen ancestor without thawing it: it is not being written.
		var err error
		if own, err = s.decodeFrame(threadID, cold, -1); err != nil {
			return nil, err
		}
	}
	var items []runtime.Item
	if parent != "" {
		var err error
		if items, err = s.view(parent, spawnAt, limit+extra); err != nil {
			return nil, err
		}
	} else {
		items = make([]runtime.Item, 0, limit+extra)
	}
	if len(items) >= limit {
		return items[:limit], nil
	}
	return append(items, own[:min(len(own), limit-len(items))]...), nil
}

func (s *HistoryStore) decodeFrame(id string, frame []byte, sizeHint int) ([]runtime.Item, error) {
	var dst []byte
	if sizeHint > 0 {
		dst = make([]byte, 0, sizeHint)
	}
	log, err := s.dec.DecodeAll(frame, dst)
	if err != nil {
		return nil, fmt.Errorf("local: thawing thread %s: %w", id, err)
	}
	items, err := decodeItems(nil, log, -1)
	if err != nil {
		return nil, fmt.Errorf("local: thread %s: %w", id, err)
	}
	return items, nil
}

// leaseToken identifies one load's lease.
type leaseToken struct{ _ byte }

// Release ends the lease a load handed out.
func (s *HistoryStore) Release(threadID string, lease any) {
	sh := &s.shards[s.shardOf(threadID)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if rec := sh.threads[threadID]; rec != nil && rec.lease != nil && rec.lease == lease {
		rec.lease = nil
	}
}

// thaw turns a frozen record hot again. Callers hold the shard lock.
func (s *HistoryStore) thaw(sh *shard, id string, rec *record) error {
	if rec.cold == nil {
		return nil
	}
	items, err := s.decodeFrame(id, rec.cold, rec.rawLen)
	if err != nil {
		return err
	}
	rec.items, rec.cold = items, nil
	sh.hot[id] = rec
	return nil
}

// Commit applies c atomically across the thread and the children it creates.
func (s *HistoryStore) Commit(ctx context.Context, c *runtime.Commit) error {
	if c.State.Version != c.Expected+1 {
		return fmt.Errorf("local: commit of %s: state version %d, expected %d", c.ThreadID, c.State.Version, c.Expected+1)
	}
	idx := []int{s.shardOf(c.ThreadID)}
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
	sh := &s.shards[idx[slices.Index(idx, s.shardOf(c.ThreadID))]]
	rec := sh.threads[c.ThreadID]
	var version int64
	if rec != nil {
		version = rec.state.Version
	}
	if version != c.Expected {
		return fmt.Errorf("local: thread %s is at version %d, commit expected %d: %w", c.ThreadID, version, c.Expected, runtime.ErrConflict)
	}
	for _, ch := range c.Children {
		if s.shards[s.shardOf(ch.ID)].threads[ch.ID] != nil {
			return fmt.Errorf("local: child thread %s already exists: %w", ch.ID, runtime.ErrConflict)
		}
	}
	if rec == nil {
		rec = &record{}
		sh.threads[c.ThreadID] = rec
	} else if err := s.thaw(sh, c.ThreadID, rec); err != nil {
		return err
	}
	if rec.state.Length+len(c.Append) != c.State.Length {
		return fmt.Errorf("local: commit of %s: state length %d, want %d", c.ThreadID, c.State.Length, rec.state.Length+len(c.Append))
	}
	switch {
	case rec.lease == nil || c.Lease == rec.lease:
		// No lease, or the committer holds it: its view already holds
		// these items in the slots past len (or nobody writes there).
		rec.items = append(rec.items, c.Append...)
	default:
		// Another slice holds the lease and may be writing past len:
		// move to a new array and revoke the lease.
		rec.items = append(rec.items[:len(rec.items):len(rec.items)], c.Append...)
		rec.lease = nil
	}
	rec.state = c.State.Clone()
	now := s.now()
	rec.touched = now
	sh.hot[c.ThreadID] = rec
	for _, ch := range c.Children {
		csh := &s.shards[s.shardOf(ch.ID)]
		crec := &record{state: ch.State.Clone(), spawnAt: ch.SpawnAt, touched: now}
		csh.threads[ch.ID] = crec
		csh.hot[ch.ID] = crec
	}
	return nil
}

// FreezeIdle compresses the history of every hot thread that has not
// committed for at least idle. It returns how many threads it froze.
// Compression runs outside the shard locks; a thread that commits meanwhile
// stays hot.
func (s *HistoryStore) FreezeIdle(idle time.Duration) int {
	cutoff := s.now().Add(-idle)
	frozen := 0
	var scratch, log []byte
	type cand struct {
		id    string
		rec   *record
		items []runtime.Item
		ver   int64
	}
	var cands []cand
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		cands = cands[:0]
		for id, rec := range sh.hot {
			if rec.touched.After(cutoff) || rec.lease != nil {
				continue
			}
			if len(rec.items) == 0 {
				delete(sh.hot, id)
				continue
			}
			cands = append(cands, cand{id, rec, rec.items, rec.state.Version})
		}
		sh.mu.Unlock()
		for _, c := range cands {
			log = log[:0]
			for i := range c.items {
				log = appendItem(log, &c.items[i])
			}
			scratch = s.enc.EncodeAll(log, scratch[:0])
			frame := make([]byte, len(scratch))
			copy(frame, scratch)
			sh.mu.Lock()
			if c.rec.state.Version == c.ver && c.rec.cold == nil {
				c.rec.cold, c.rec.rawLen, c.rec.items = frame, len(log), nil
				delete(sh.hot, c.id)
				frozen++
			}
			sh.mu.Unlock()
		}
	}
	return frozen
}

// StoreStats describes what a HistoryStore holds.
type StoreStats struct {
	Threads   int
	Hot       int
	HotBytes  int // payload bytes of hot threads' items
	ColdBytes int // compressed bytes of frozen threads
	RawBytes  int // encoded bytes of frozen threads before compression, payload bytes of hot ones
}

// Stats counts threads and bytes.
func (s *HistoryStore) Stats() StoreStats {
	var st StoreStats
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		st.Threads += len(sh.threads)
		st.Hot += len(sh.hot)
		for _, rec := range sh.threads {
			if rec.cold != nil {
				st.ColdBytes += len(rec.cold)
				st.RawBytes += rec.rawLen
			} else {
				n := 0
				for i := range rec.items {
					n += rec.items[i].Size()
				}
				st.HotBytes += n
				st.RawBytes += n
			}
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
