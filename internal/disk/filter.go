package disk

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
)

// idFilter is a Bloom filter of the thread IDs the database holds, so that
// looking up a thread that was never written (every new thread, twice: its
// first load and its first commit) costs no query. A false "maybe" costs
// the query it saves otherwise; it never says "no" for a stored thread.
// It doubles (rebuilt from the table) when it holds more IDs than it was
// sized for, keeping false positives near 1%.
type idFilter struct {
	mu   sync.RWMutex
	seed maphash.Seed
	bits []uint64
	n    int // IDs added
	cap  int // IDs it was sized for
	// filling: not yet filled from the table (Open fills it on a goroutine
	// of its own, a scan of every thread ID); until then it says "maybe"
	// for every ID.
	filling bool
	filled  chan struct{} // closed when fill returns (Open's filter)
}

const (
	filterBitsPerID = 10
	filterHashes    = 7
	filterMinIDs    = 1 << 14
)

func newIDFilter(capacity int) *idFilter {
	f := &idFilter{seed: maphash.MakeSeed()}
	f.reset(max(capacity, filterMinIDs))
	return f
}

func (f *idFilter) reset(capacity int) {
	f.cap, f.n = capacity, 0
	f.bits = make([]uint64, (capacity*filterBitsPerID+63)/64)
}

// positions calls fn with each bit of id (double hashing).
func (f *idFilter) positions(id string, fn func(i uint64) bool) bool {
	h := maphash.String(f.seed, id)
	h1, h2 := h&0xffffffff, h>>32|1
	m := uint64(len(f.bits) * 64)
	for k := range uint64(filterHashes) {
		if !fn((h1 + k*h2) % m) {
			return false
		}
	}
	return true
}

// mayHave reports false only for IDs never added.
func (f *idFilter) mayHave(id string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.filling {
		return true
	}
	return f.positions(id, func(i uint64) bool { return f.bits[i/64]&(1<<(i%64)) != 0 })
}

// add records ids; it reports whether the filter is now over capacity and
// should be rebuilt larger.
func (f *idFilter) add(ids ...string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		f.positions(id, func(i uint64) bool { f.bits[i/64] |= 1 << (i % 64); return true })
	}
	f.n += len(ids)
	return f.n > f.cap
}

// fill fills a filter made filling (Open) from the table, holding off the
// checkpoints, the only writers of new thread rows, while it reads: at a
// million threads the scan takes seconds, which Open no longer waits for.
// If it fails the filter stays filling: correct, one query per new thread.
func (f *idFilter) fill(ctx context.Context, d *DB, h *History) {
	defer close(f.filled)
	h.ckptMu.Lock()
	defer h.ckptMu.Unlock()
	f.mu.RLock()
	done := !f.filling // a checkpoint's rebuild got there first
	f.mu.RUnlock()
	if done {
		return
	}
	if err := f.rebuild(ctx, d, nil); err != nil && ctx.Err() == nil {
		d.opts.Logger.Warn("filling the thread filter failed; new threads cost a query each", "error", err)
	}
}

// rebuild refills the filter from the threads table, sized for twice what
// it holds (ids must include whatever is being written meanwhile: the
// caller holds off writers of new thread rows, see checkpoint).
func (f *idFilter) rebuild(ctx context.Context, d *DB, pending []string) error {
	var count int
	if err := d.rdb.QueryRowContext(ctx, `SELECT count(*) FROM threads`).Scan(&count); err != nil {
		return fmt.Errorf("disk: sizing the thread filter: %w", err)
	}
	rows, err := d.rdb.QueryContext(ctx, `SELECT id FROM threads`)
	if err != nil {
		return fmt.Errorf("disk: filling the thread filter: %w", err)
	}
	defer rows.Close()
	fresh := &idFilter{seed: f.seed}
	fresh.reset(max(2*(count+len(pending)), filterMinIDs))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("disk: filling the thread filter: %w", err)
		}
		fresh.add(id)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("disk: filling the thread filter: %w", err)
	}
	fresh.add(pending...)
	f.mu.Lock()
	f.bits, f.n, f.cap, f.filling = fresh.bits, fresh.n, fresh.cap, false
	f.mu.Unlock()
	return nil
}
