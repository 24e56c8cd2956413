package disk

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

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
}

type hshard struct {
	mu  sync.Mutex
	hot map[string]*hotThread
}

// hotThread is a thread's cached view of what is durable.
type hotThread struct {
	state   runtime.ThreadState
	spawnAt int
	items   []runtime.Item // own items; immutable up to len
	rows    int            // item rows on disk not yet merged into the frozen frame
	touched int64
}

func newHistory(d *DB) *History {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(2),
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
	}
	return h
}

func (h *History) shard(id string) *hshard {
	return &h.sh[maphash.String(h.seed, id)%shardCount]
}

// Load returns the thread's view in a new slice the caller owns.
func (h *History) Load(ctx context.Context, threadID string) (*runtime.Thread, error) {
	ht, err := h.get(ctx, threadID)
	if err != nil {
		return nil, err
	}
	if ht == nil {
		return &runtime.Thread{ID: threadID, State: runtime.ThreadState{Stack: []string{threadID}}}, nil
	}
	var items []runtime.Item
	if p := ht.state.Parent; p != "" {
		if items, err = h.view(ctx, p, ht.spawnAt, len(ht.items)+headroom); err != nil {
			return nil, fmt.Errorf("disk: loading ancestors of %s: %w", threadID, err)
		}
	} else {
		items = make([]runtime.Item, 0, len(ht.items)+headroom)
	}
	inherited := len(items)
	items = append(items, ht.items...)
	return &runtime.Thread{ID: threadID, State: ht.state.Clone(), Items: items, Inherited: inherited}, nil
}

// get returns a snapshot of the thread (nil when it was never written),
// from memory or else from the database. The snapshot's items must not be
// modified.
func (h *History) get(ctx context.Context, id string) (*hotThread, error) {
	sh := h.shard(id)
	sh.mu.Lock()
	if ht := sh.hot[id]; ht != nil {
		snap := *ht
		sh.mu.Unlock()
		return &snap, nil
	}
	sh.mu.Unlock()
	ht, err := h.read(ctx, id)
	if err != nil || ht == nil {
		return nil, err
	}
	ht.touched = h.d.opts.Now().UnixNano()
	sh.mu.Lock()
	if cur := sh.hot[id]; cur == nil || cur.state.Version < ht.state.Version {
		sh.hot[id] = ht
	}
	snap := *ht
	sh.mu.Unlock()
	return &snap, nil
}

// read loads a thread from the database in one read transaction.
func (h *History) read(ctx context.Context, id string) (*hotThread, error) {
	tx, err := h.d.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("disk: loading thread %s: %w", id, err)
	}
	defer tx.Rollback()
	var state, frozen []byte
	var frozenLen int
	ht := &hotThread{}
	err = tx.QueryRowContext(ctx, `SELECT spawn_at, state, frozen, frozen_len FROM threads WHERE id = ?`, id).
		Scan(&ht.spawnAt, &state, &frozen, &frozenLen)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("disk: loading thread %s: %w", id, err)
	}
	if err := json.Unmarshal(state, &ht.state); err != nil {
		return nil, fmt.Errorf("disk: thread %s: corrupt state: %w", id, err)
	}
	ht.items = make([]runtime.Item, 0, ht.state.Length+headroom)
	if len(frozen) > 0 {
		raw, err := h.dec.DecodeAll(frozen, nil)
		if err != nil {
			return nil, fmt.Errorf("disk: thread %s: corrupt frozen history: %w", id, err)
		}
		if ht.items, err = local.DecodeItems(ht.items, raw, id, 0); err != nil || len(ht.items) != frozenLen {
			return nil, fmt.Errorf("disk: thread %s: frozen history has %d items, want %d: %v", id, len(ht.items), frozenLen, err)
		}
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
		if ht.items, err = local.DecodeItems(ht.items, data, id, pos); err != nil {
			return nil, fmt.Errorf("disk: thread %s: item row at %d: %w", id, pos, err)
		}
		ht.rows++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("disk: loading the items of %s: %w", id, err)
	}
	if len(ht.items) != ht.state.Length {
		return nil, fmt.Errorf("disk: thread %s: %d items stored, state says %d", id, len(ht.items), ht.state.Length)
	}
	return ht, nil
}

// view returns the first limit items of a thread's full view, in a new
// slice with room for extra more.
func (h *History) view(ctx context.Context, id string, limit, extra int) ([]runtime.Item, error) {
	ht, err := h.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if ht == nil {
		return nil, fmt.Errorf("ancestor %s does not exist", id)
	}
	var items []runtime.Item
	if p := ht.state.Parent; p != "" {
		if items, err = h.view(ctx, p, ht.spawnAt, limit+extra); err != nil {
			return nil, err
		}
	} else {
		items = make([]runtime.Item, 0, limit+extra)
	}
	if len(items) >= limit {
		return items[:limit], nil
	}
	return append(items, ht.items[:min(len(ht.items), limit-len(items))]...), nil
}

// attention says what recovery must do for a thread in this state: 1, run
// a slice (it has an outbox to send or a call to dispatch); 2, check its
// dispatched call (PendingCalls); 0, nothing.
func attention(st *runtime.ThreadState) int {
	switch {
	case len(st.Outbox) > 0 || (st.Pending != nil && !st.Pending.Dispatched):
		return 1
	case st.Pending != nil:
		return 2
	}
	return 0
}

// Commit applies c atomically and durably (see the package doc on group
// commit).
func (h *History) Commit(ctx context.Context, c *runtime.Commit) error {
	if c.State.Version != c.Expected+1 {
		return fmt.Errorf("disk: commit of %s: state version %d, expected %d", c.ThreadID, c.State.Version, c.Expected+1)
	}
	state, err := json.Marshal(&c.State)
	if err != nil {
		return fmt.Errorf("disk: encoding the state of %s: %w", c.ThreadID, err)
	}
	oldLen := c.State.Length - len(c.Append)
	var data []byte
	if len(c.Append) > 0 {
		data = local.AppendItems(nil, c.ThreadID, oldLen, c.Append)
	}
	type kid struct {
		ch    runtime.ChildThread
		state []byte
	}
	kids := make([]kid, len(c.Children))
	for i, ch := range c.Children {
		if kids[i].state, err = json.Marshal(&ch.State); err != nil {
			return fmt.Errorf("disk: encoding the state of child %s: %w", ch.ID, err)
		}
		kids[i].ch = ch
	}
	now := h.d.opts.Now().UnixNano()
	att := attention(&c.State)
	fn := func(w *wconn) error {
		var n int64
		var err error
		if c.Expected == 0 {
			// A child's row exists at version 0 from its parent's commit.
			n, err = w.exec(`INSERT INTO threads (id, parent, spawn_at, version, length, state, attention) VALUES (?, ?, 0, ?, ?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET version = excluded.version, length = excluded.length, state = excluded.state,
					attention = excluded.attention
				WHERE threads.version = 0 AND threads.length = ?`, c.ThreadID, c.State.Parent, c.State.Version, c.State.Length, state, att, oldLen)
		} else {
			n, err = w.exec(`UPDATE threads SET version = ?, length = ?, state = ?, attention = ? WHERE id = ? AND version = ? AND length = ?`,
				c.State.Version, c.State.Length, state, att, c.ThreadID, c.Expected, oldLen)
		}
		if err != nil {
			return fmt.Errorf("disk: committing thread %s: %w", c.ThreadID, err)
		}
		if n == 0 {
			return h.whyNot(w, c, oldLen)
		}
		if data != nil {
			if _, err := w.exec(`INSERT INTO items (thread, pos, data) VALUES (?, ?, ?)`, c.ThreadID, oldLen, data); err != nil {
				return fmt.Errorf("disk: appending to thread %s: %w", c.ThreadID, err)
			}
		}
		for _, k := range kids {
			n, err := w.exec(`INSERT INTO threads (id, parent, spawn_at, version, length, state, attention) VALUES (?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (id) DO NOTHING`, k.ch.ID, k.ch.State.Parent, k.ch.SpawnAt, k.ch.State.Version, k.ch.State.Length, k.state, attention(&k.ch.State))
			if err != nil {
				return fmt.Errorf("disk: creating child thread %s: %w", k.ch.ID, err)
			}
			if n == 0 {
				return fmt.Errorf("disk: child thread %s already exists: %w", k.ch.ID, runtime.ErrConflict)
			}
		}
		return nil
	}
	after := func() {
		sh := h.shard(c.ThreadID)
		sh.mu.Lock()
		switch ht := sh.hot[c.ThreadID]; {
		case ht != nil && ht.state.Version == c.Expected:
			// Items up to len are shared with earlier snapshots: never
			// write past len of a shared array.
			ht.items = append(ht.items[:len(ht.items):len(ht.items)], c.Append...)
			ht.state = c.State.Clone()
			ht.touched = now
			if len(c.Append) > 0 {
				ht.rows++
			}
		case ht == nil && c.Expected == 0 && c.State.Parent == "":
			sh.hot[c.ThreadID] = &hotThread{state: c.State.Clone(), items: slices.Clone(c.Append), rows: min(1, len(c.Append)), touched: now}
		default:
			delete(sh.hot, c.ThreadID) // stale or unknown: the next load reads the database
		}
		sh.mu.Unlock()
		for _, k := range kids {
			ksh := h.shard(k.ch.ID)
			ksh.mu.Lock()
			ksh.hot[k.ch.ID] = &hotThread{state: k.ch.State.Clone(), spawnAt: k.ch.SpawnAt, touched: now}
			ksh.mu.Unlock()
		}
	}
	// Without children the UPDATE/INSERT of the thread is the only
	// statement that can fail for a conflict, and it runs first: only a
	// commit that creates children needs a savepoint to undo its own
	// statements.
	err = h.d.w.do(ctx, &wreq{fn: fn, after: after, atomic: len(c.Children) > 0})
	if errors.Is(err, runtime.ErrConflict) {
		sh := h.shard(c.ThreadID)
		sh.mu.Lock()
		delete(sh.hot, c.ThreadID) // the cache may be what was stale
		sh.mu.Unlock()
	}
	return err
}

// whyNot explains a commit that matched no row.
func (h *History) whyNot(w *wconn, c *runtime.Commit, oldLen int) error {
	var version int64
	var length int
	err := w.queryRow(`SELECT version, length FROM threads WHERE id = ?`, c.ThreadID).Scan(&version, &length)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("disk: committing thread %s: %w", c.ThreadID, err)
	}
	if version == c.Expected && length != oldLen {
		return fmt.Errorf("disk: commit of %s: state length %d, want %d", c.ThreadID, c.State.Length, length+len(c.Append))
	}
	return fmt.Errorf("disk: thread %s is at version %d, commit expected %d: %w", c.ThreadID, version, c.Expected, runtime.ErrConflict)
}

// FreezeIdle drops from memory every thread that has not committed or
// loaded for at least idle and, on disk, merges each such thread's item rows
// into its one compressed frame. It returns how many threads it dropped.
func (h *History) FreezeIdle(idle time.Duration) int {
	cutoff := h.d.opts.Now().Add(-idle).UnixNano()
	dropped := 0
	type cand struct {
		id string
		ht *hotThread
	}
	var cands []cand
	for i := range h.sh {
		sh := &h.sh[i]
		sh.mu.Lock()
		for id, ht := range sh.hot {
			if ht.touched > cutoff {
				continue
			}
			delete(sh.hot, id)
			dropped++
			if ht.rows > 0 {
				cands = append(cands, cand{id, ht})
			}
		}
		sh.mu.Unlock()
	}
	var raw []byte
	for _, c := range cands {
		n := len(c.ht.items)
		raw = local.AppendItems(raw[:0], c.id, 0, c.ht.items)
		frame := h.enc.EncodeAll(raw, nil)
		id := c.id
		// Items are immutable up to n: this is right whatever committed
		// since. Not waited for: it is an optimisation, and a crash before it
		// commits leaves the rows as they were.
		r := &wreq{atomic: true, fn: func(w *wconn) error {
			m, err := w.exec(`UPDATE threads SET frozen = ?, frozen_len = ? WHERE id = ? AND length >= ? AND frozen_len < ?`, frame, n, id, n, n)
			if err != nil || m == 0 {
				return err
			}
			_, err = w.exec(`DELETE FROM items WHERE thread = ? AND pos < ?`, id, n)
			return err
		}}
		if err := h.d.w.submit(r); err != nil {
			break
		}
	}
	return dropped
}

// Threads returns the IDs of all stored threads, sorted.
func (h *History) Threads(ctx context.Context) ([]string, error) {
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
	return ids, rows.Err()
}

// NeedAttention returns the threads whose state holds an unsent outbox or
// an undispatched call (recovery runs a slice for each).
func (h *History) NeedAttention(ctx context.Context) ([]string, error) {
	rows, err := h.d.rdb.QueryContext(ctx, `SELECT id FROM threads WHERE attention = 1 ORDER BY id`)
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

// PendingCall is a thread's dispatched call that has no result yet.
type PendingCall struct {
	ThreadID string
	Call     runtime.PendingCall
}

// PendingCalls returns the dispatched calls still waiting for a result.
func (h *History) PendingCalls(ctx context.Context) ([]PendingCall, error) {
	rows, err := h.d.rdb.QueryContext(ctx, `SELECT id, state FROM threads WHERE attention = 2 ORDER BY id`)
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
			for j := range ht.items {
				st.HotBytes += ht.items[j].Size()
			}
		}
		sh.mu.Unlock()
	}
	return st
}
