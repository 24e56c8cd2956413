package local

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The sweep that frees expired records runs once more than 1024 IDs were
// marked since the last one and they are more than half the records held
// (so its cost stays proportional to the marks); it frees the expired
// records and only those. Len shows each step.
func TestDedupStoreSweepsExpiredRecords(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_000_000, 0)
	d := NewDedupStore(time.Minute)
	d.now = func() time.Time { return now }
	n := 0
	mark := func(count int) {
		t.Helper()
		ids := make([]string, count)
		for i := range ids {
			n++
			ids[i] = fmt.Sprintf("m%d", n)
		}
		if err := d.Mark(ctx, "t", ids); err != nil {
			t.Fatal(err)
		}
	}
	want := func(step string, records int) {
		t.Helper()
		if got := d.Len(); got != records {
			t.Fatalf("%s: Len() = %d, want %d", step, got, records)
		}
	}

	// 1024 marks one by one: no sweep yet (nothing has expired anyway).
	for range 1024 {
		mark(1)
	}
	want("1024 marks", 1024)
	now = now.Add(time.Minute) // all 1024 expire (expiry is not "before" now)
	mark(1)                    // the 1025th mark since the last sweep: sweep
	want("the 1025th mark, after the first 1024 expired", 1)
	seen, err := d.Seen(ctx, "t", []string{"m1", "m1025"})
	if err != nil || seen[0] || !seen[1] {
		t.Fatalf("Seen(m1, m1025) = %v, %v; want [false true]", seen, err)
	}

	// 1100 at once: more than 1024 and more than half the records: a
	// sweep, which frees nothing (none expired).
	now = now.Add(time.Second)
	mark(1100)
	want("1100 marks at once", 1101)
	// A minute later all of those have expired. 1101 new marks are not
	// more than half the 2202 records: no sweep.
	now = now.Add(time.Minute)
	mark(1101)
	want("1101 marks that are half the records", 2202)
	// One more: 1102 marks since the last sweep, more than half of 2203:
	// sweep, which frees the 1101 expired records and keeps the 1102 new.
	mark(1)
	want("one mark more", 1102)
}
