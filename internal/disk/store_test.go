package disk

import (
	"context"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
)

func open(t *testing.T, dir string) *DB {
	t.Helper()
	d, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestHistoryConformance(t *testing.T) {
	storetest.RunHistory(t, func(t *testing.T) runtime.HistoryStore { return open(t, t.TempDir()).History() })
}

// freezing drops every thread from memory and merges its rows after each
// commit, so that loads read the frozen frames from the database.
type freezing struct{ *History }

func (f freezing) Commit(ctx context.Context, c *runtime.Commit) error {
	err := f.History.Commit(ctx, c)
	f.FreezeIdle(-1)
	return err
}

func TestHistoryConformanceFreezing(t *testing.T) {
	storetest.RunHistory(t, func(t *testing.T) runtime.HistoryStore { return freezing{open(t, t.TempDir()).History()} })
}

// restarting closes and reopens the data directory after every commit:
// everything a load sees afterwards came from the files. With crash, it
// closes as a kill would (no checkpoint): everything comes from the
// journal's replay.
type restarting struct {
	t     *testing.T
	dir   string
	crash bool
	mu    sync.Mutex
	d     *DB
}

func (r *restarting) Load(ctx context.Context, id string) (*runtime.Thread, error) {
	r.mu.Lock()
	d := r.d
	r.mu.Unlock()
	return d.History().Load(ctx, id)
}

func (r *restarting) Commit(ctx context.Context, c *runtime.Commit) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.d.History().Commit(ctx, c)
	if cerr := r.d.close(!r.crash); cerr != nil {
		r.t.Errorf("closing: %v", cerr)
	}
	d, oerr := Open(ctx, r.dir, Options{})
	if oerr != nil {
		r.t.Fatalf("reopening: %v", oerr)
	}
	r.d = d
	return err
}

func TestHistoryConformanceRestarting(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "Closed", true: "Killed"}[crash], func(t *testing.T) {
			storetest.RunHistory(t, func(t *testing.T) runtime.HistoryStore {
				dir := t.TempDir()
				d, err := Open(context.Background(), dir, Options{})
				if err != nil {
					t.Fatal(err)
				}
				r := &restarting{t: t, dir: dir, d: d, crash: crash}
				t.Cleanup(func() { r.mu.Lock(); r.d.Close(); r.mu.Unlock() })
				return r
			})
		})
	}
}

func TestLeaseConformance(t *testing.T) {
	storetest.RunLease(t, func(t *testing.T) storetest.LeaseStore { return open(t, t.TempDir()).History() })
}

func TestDedupConformance(t *testing.T) {
	storetest.RunDedup(t, func(t *testing.T) runtime.DedupStore { return open(t, t.TempDir()).Dedup() })
}
