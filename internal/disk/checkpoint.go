package disk

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// A checkpoint copies into the database what the journal holds and deletes
// the journal segments it covered:
//
//  1. On the journal's goroutine, between two group commits, the open
//     segment is closed and a new one started, and memory is read: every
//     thread whose commits the database lacks, and the inbox changes since
//     the last checkpoint. Memory then reflects exactly the closed
//     segments, so this is a consistent cut (a parent's commit and the
//     children it created are both in it or both not).
//  2. Off that goroutine, states are encoded, and the history of each thread
//     that leaves memory is merged into one zstd frame (one worker per core,
//     a chunk of entries at a time).
//  3. One transaction writes it all to the database, each chunk as soon as
//     it is encoded (so zstd and SQLite overlap; the transaction, and with
//     it the other writers of the database, waits for the last chunk).
//  4. Memory records what the database now holds; threads idle since the
//     cut-off leave memory; the closed segments are deleted.
//
// A crash anywhere leaves the segments, which Open replays (a record the
// database already has is skipped). Commits go on during 2–4, into the new
// segment.

// ckptEntry is one thread as the cut saw it.
type ckptEntry struct {
	id      string
	ht      *hotThread // identity, to recognise it when settling
	state   runtime.ThreadState
	spawnAt int
	items   []runtime.Item // immutable up to len
	evict   bool
	// What the database held at the cut.
	stored    bool
	storedLen int
	rows      int

	// Encoded in step 2.
	stateJSON  []byte
	frame      []byte // evict: all items; else nil
	tail       []byte // not evict: items [storedLen, len) as one row
	digest     runtime.Digest
	digestJSON []byte
	err        error
}

// FreezeIdle checkpoints and drops from memory every thread that has not
// committed or loaded for at least idle, and every closed child
// (runtime.ThreadState.Archivable); on disk each such thread's history
// becomes one compressed frame. It returns how many threads it dropped.
func (h *History) FreezeIdle(idle time.Duration) int {
	n, err := h.checkpoint(context.Background(), true, h.d.opts.Now().Add(-idle).UnixNano())
	if err != nil {
		h.d.opts.Logger.Warn("checkpoint failed; the journal keeps what it did not copy", "error", err)
	}
	return n
}

// checkpoint runs one checkpoint (see above). With evict, threads touched
// at or before cutoff leave memory. It returns how many left.
func (h *History) checkpoint(ctx context.Context, evict bool, cutoff int64) (int, error) {
	h.ckptMu.Lock()
	defer h.ckptMu.Unlock()
	var (
		snap   []ckptEntry
		inbox  inboxBatch
		closed uint64
	)
	err := h.d.j.do(ctx, &jreq{cut: func(seg uint64) {
		closed = seg
		snap = h.cut(evict, cutoff)
		inbox = h.d.inbox.cut()
	}})
	if err != nil {
		return 0, fmt.Errorf("disk: checkpoint: %w", err)
	}
	// New rows go into the thread filter before they exist, so that no
	// read after the commit skips them.
	var fresh []string
	for i := range snap {
		if !snap[i].stored {
			fresh = append(fresh, snap[i].id)
		}
	}
	grow := h.d.ids.add(fresh...)
	if len(snap) > 0 || !inbox.empty() {
		enc := h.startEncoding(snap)
		roots := 0 // root rows the transaction creates
		err = h.d.w.do(ctx, &wreq{atomic: true, lazy: true, fn: func(w *wconn) error {
			roots = 0
			for i := range enc.ready {
				chunk, err := enc.wait(i)
				if err != nil {
					return err
				}
				if err := writeEntries(w, chunk); err != nil {
					return err
				}
				n, err := writeRoots(w, chunk)
				if err != nil {
					return err
				}
				roots += n
				if n, err = writeDigests(w, chunk); err != nil {
					return err
				}
				roots += n
			}
			return writeInbox(w, inbox)
		}})
		enc.wg.Wait() // a failed transaction may leave workers encoding
		if err != nil {
			h.d.inbox.failed(inbox)
			return 0, fmt.Errorf("disk: checkpoint: %w", err)
		}
		h.roots.Add(int64(roots))
	}
	if grow {
		// No other writer of thread rows runs meanwhile (checkpoints are
		// one at a time), so the table is complete.
		if err := h.d.ids.rebuild(ctx, h.d, nil); err != nil {
			return 0, err // the old filter stays: over capacity, still correct
		}
	}
	dropped := h.settle(snap, evict, cutoff)
	h.retirable = max(h.retirable, closed)
	if h.d.opts.NoSync {
		h.retire() // nothing to sync
	}
	h.d.askWALCopy() // which syncs, retires the segments, then copies the WAL
	return dropped, nil
}

// retire deletes the journal segments that committed checkpoints copied,
// once the database's WAL is synced: a checkpoint's transaction commits
// without an fsync of its own (lazy, about half its commit time), so until
// then a power failure could roll it back, and the segments are what would
// be replayed. It runs on the WAL copier's goroutine after each checkpoint,
// and at once from Close and Checkpoint. h.ckptMu must be held (a cut takes
// the spare segment that this may make).
func (h *History) retire() {
	upTo := h.retirable
	if upTo <= h.retired {
		return
	}
	if !h.d.opts.NoSync {
		if err := h.d.syncWAL(); err != nil {
			// Harmless: the segments stay, and the next Open replays them.
			h.d.opts.Logger.Warn("could not sync the database; its journal segments stay", "error", err)
			return
		}
	}
	if h.d.beforeRetire != nil {
		h.d.beforeRetire()
	}
	if err := removeSegments(h.d.dir, upTo); err != nil {
		// Harmless: the next Open replays them and finds nothing new.
		h.d.opts.Logger.Warn("could not remove checkpointed journal segments", "error", err)
		return
	}
	h.retired = upTo
}

// retireNow retires what committed checkpoints covered, without waiting
// for the WAL copier.
func (h *History) retireNow() {
	h.ckptMu.Lock()
	defer h.ckptMu.Unlock()
	h.retire()
}

// cut reads memory for a checkpoint (on the journal's goroutine).
func (h *History) cut(evict bool, cutoff int64) []ckptEntry {
	var snap []ckptEntry
	for i := range h.sh {
		sh := &h.sh[i]
		sh.mu.Lock()
		for id, ht := range sh.hot {
			_, busy := sh.busy[id]
			idle := evict && !busy && (ht.touched <= cutoff || ht.state.Archivable())
			if !ht.dirty() && !(idle && ht.rows > 0) {
				continue // nothing to write (an idle clean thread just leaves, in settle)
			}
			snap = append(snap, ckptEntry{id: id, ht: ht, state: ht.state, spawnAt: ht.spawnAt, items: ht.items,
				evict: idle, stored: ht.stored, storedLen: ht.storedLen, rows: ht.rows})
		}
		sh.mu.Unlock()
	}
	return snap
}

// encoding encodes a checkpoint's entries (states, and each leaving thread's
// frame) on one worker per core, a chunk at a time in order, while the
// database transaction writes the chunks already done: zstd and SQLite
// overlap instead of taking turns.
type encoding struct {
	snap  []ckptEntry
	ready []chan struct{} // closed when chunk i is encoded
	wg    sync.WaitGroup
}

// encodeChunk is how many entries a worker encodes before the transaction
// may write them: small enough that the writer starts early, large enough
// that handing chunks over costs nothing next to zstd.
const encodeChunk = 16

func (h *History) startEncoding(snap []ckptEntry) *encoding {
	e := &encoding{snap: snap, ready: make([]chan struct{}, (len(snap)+encodeChunk-1)/encodeChunk)}
	for i := range e.ready {
		e.ready[i] = make(chan struct{})
	}
	var next atomic.Int64
	for range min(goruntime.GOMAXPROCS(0), len(e.ready)) {
		e.wg.Add(1)
		go func() { // waited for by checkpoint (e.wg)
			defer e.wg.Done()
			var raw []byte
			for {
				c := int(next.Add(1) - 1)
				if c >= len(e.ready) {
					return
				}
				for i := c * encodeChunk; i < min(len(snap), (c+1)*encodeChunk); i++ {
					raw = h.encodeEntry(&snap[i], raw)
				}
				close(e.ready[c])
			}
		}()
	}
	return e
}

// wait returns chunk c once it is encoded, or the first entry's error.
func (e *encoding) wait(c int) ([]ckptEntry, error) {
	<-e.ready[c]
	chunk := e.snap[c*encodeChunk : min(len(e.snap), (c+1)*encodeChunk)]
	for i := range chunk {
		if chunk[i].err != nil {
			return nil, fmt.Errorf("encoding the state of %s: %w", chunk[i].id, chunk[i].err)
		}
	}
	return chunk, nil
}

// encodeEntry encodes one entry, using raw as scratch space, which it
// returns for the next.
func (h *History) encodeEntry(e *ckptEntry, raw []byte) []byte {
	if e.stateJSON, e.err = marshal(&e.state); e.err != nil {
		return raw
	}
	e.digest = runtime.DigestOf(&e.state, e.items)
	if e.digestJSON, e.err = marshal(&e.digest); e.err != nil {
		return raw
	}
	switch {
	case e.evict:
		raw = local.AppendItems(raw[:0], e.id, e.state.Incarnation, 0, e.items)
		e.frame = h.enc.EncodeAll(raw, nil)
	case len(e.items) > e.storedLen:
		e.tail = local.AppendItems(nil, e.id, e.state.Incarnation, e.storedLen, e.items[e.storedLen:])
	}
	return raw
}

func writeEntries(w *wconn, snap []ckptEntry) error {
	for i := range snap {
		e := &snap[i]
		st := &e.state
		var err error
		if e.evict {
			_, err = w.exec(`INSERT INTO threads (id, parent, spawn_at, version, length, state, attention, frozen, frozen_len)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET version = excluded.version, length = excluded.length, state = excluded.state,
					attention = excluded.attention, frozen = excluded.frozen, frozen_len = excluded.frozen_len`,
				e.id, st.Parent, e.spawnAt, st.Version, st.Length, e.stateJSON, attention(st), e.frame, len(e.items))
			if err == nil && e.rows > 0 {
				_, err = w.exec(`DELETE FROM items WHERE thread = ? AND pos < ?`, e.id, len(e.items))
			}
		} else {
			_, err = w.exec(sqlUpsertState, e.id, st.Parent, e.spawnAt, st.Version, st.Length, e.stateJSON, attention(st))
			if err == nil && e.tail != nil {
				_, err = w.exec(`INSERT INTO items (thread, pos, data) VALUES (?, ?, ?)`, e.id, e.storedLen, e.tail)
			}
		}
		if err != nil {
			return fmt.Errorf("writing thread %s: %w", e.id, err)
		}
	}
	return nil
}

// settle records in memory what the database now holds and drops the
// threads that leave memory.
func (h *History) settle(snap []ckptEntry, evict bool, cutoff int64) int {
	for i := range snap {
		e := &snap[i]
		sh := h.shard(e.id)
		sh.mu.Lock()
		if ht := sh.hot[e.id]; ht == e.ht {
			ht.stored, ht.storedVer, ht.storedLen = true, e.state.Version, len(e.items)
			switch {
			case e.evict:
				ht.rows = 0
			case e.tail != nil:
				ht.rows++
			}
		}
		sh.mu.Unlock()
	}
	if !evict {
		return 0
	}
	dropped := 0
	for i := range h.sh {
		sh := &h.sh[i]
		sh.mu.Lock()
		for id, ht := range sh.hot {
			if _, busy := sh.busy[id]; busy || ht.dirty() || ht.rows > 0 || (ht.touched > cutoff && !ht.state.Archivable()) {
				continue
			}
			delete(sh.hot, id)
			sh.evictions++
			dropped++
		}
		sh.mu.Unlock()
	}
	return dropped
}
