package disk

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A journal that passes Options.SegmentRecords records is checkpointed in
// the background, however few bytes it holds, so that a crash leaves at most
// about that many records to replay (TestOptionsDefaults pins the default).
func TestSegmentRecordsCheckpoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{SegmentRecords: 10})
	if err != nil {
		t.Fatal(err)
	}
	retired := make(chan struct{}, 1)
	d.beforeRetire = func() { // set before any commit, so before the background goroutine can read it
		select {
		case retired <- struct{}{}:
		default:
		}
	}
	var want []string
	for i := range 12 { // a few hundred bytes: far below SegmentBytes
		s := fmt.Sprintf("x%d", i)
		commitN(t, d.History(), "a", int64(i), s)
		want = append(want, s)
	}
	select {
	case <-retired:
	case <-time.After(30 * time.Second):
		t.Fatal("no checkpoint after 12 records with SegmentRecords 10")
	}
	kill(t, d)
	d = openUnmanaged(t, dir)
	defer d.Close()
	if got := texts(t, d.History(), "a"); got != strings.Join(want, ",") {
		t.Errorf("after the kill: %q, want %q", got, strings.Join(want, ","))
	}
}
