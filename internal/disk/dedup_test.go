package disk

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Expired dedup records are swept: once marks cross a multiple of 4096,
// the Mark that crosses it deletes every record past its TTL, so the table
// does not grow for ever with IDs no read can see (Seen ignores expired
// rows, so only the table's row count tells).
func TestDedupSweepsExpiredRecords(t *testing.T) {
	var now atomic.Int64
	start := time.Unix(1_700_000_000, 0)
	now.Store(start.UnixNano())
	d, err := Open(context.Background(), t.TempDir(), Options{NoSync: true, DedupTTL: time.Minute,
		Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	dd := d.Dedup()
	ids := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%d", prefix, i)
		}
		return out
	}
	if err := dd.Mark(ctx, "t", ids("old", 100)); err != nil {
		t.Fatal(err)
	}
	// The 100 have expired; 4,000 more make 4,100 marks, past 4,096.
	now.Store(start.Add(2 * time.Minute).UnixNano())
	if err := dd.Mark(ctx, "t", ids("new", 4000)); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := d.rdb.QueryRowContext(ctx, `SELECT count(*) FROM dedup`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 4000 {
		t.Fatalf("the dedup table holds %d rows after the sweep, want 4000 (the 100 expired ones deleted)", rows)
	}
	seen, err := dd.Seen(ctx, "t", []string{"old-0", "new-0"})
	if err != nil || seen[0] || !seen[1] {
		t.Fatalf("Seen(old-0, new-0) = %v, %v; want [false true]", seen, err)
	}
}
