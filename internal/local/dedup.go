package local

import (
	"context"
	"sync"
	"time"
)

// DedupStore is an in-memory runtime.DedupStore whose records expire after a
// TTL, like the DynamoDB one. Its size is bounded by the message rate times
// the TTL, not by the number of threads or their age.
type DedupStore struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[dedupKey]time.Time // expiry
	sweeps  int
}

type dedupKey struct{ thread, id string }

// NewDedupStore returns a store whose records live for ttl.
func NewDedupStore(ttl time.Duration) *DedupStore {
	return &DedupStore{ttl: ttl, now: time.Now, entries: map[dedupKey]time.Time{}}
}

// Seen reports which IDs are marked and not expired.
func (d *DedupStore) Seen(ctx context.Context, threadID string, ids []string) ([]bool, error) {
	now := d.now()
	out := make([]bool, len(ids))
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, id := range ids {
		exp, ok := d.entries[dedupKey{threadID, id}]
		out[i] = ok && now.Before(exp)
	}
	return out, nil
}

// Mark records the IDs; expired records are swept now and then.
func (d *DedupStore) Mark(ctx context.Context, threadID string, ids []string) error {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		d.entries[dedupKey{threadID, id}] = now.Add(d.ttl)
	}
	d.sweeps += len(ids)
	if d.sweeps > 1024 && d.sweeps > len(d.entries)/2 {
		d.sweeps = 0
		for k, exp := range d.entries {
			if !now.Before(exp) {
				delete(d.entries, k)
			}
		}
	}
	return nil
}

// Len returns the number of records held, expired ones included until swept.
func (d *DedupStore) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}
