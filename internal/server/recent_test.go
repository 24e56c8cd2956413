package server

import (
	"fmt"
	"testing"
)

// The recently accepted messages are remembered by thread and ID, the
// newest kept and the oldest of a thread's shard forgotten past the bound,
// whatever other threads send.
func TestRecentMessagesBounded(t *testing.T) {
	r := &recentMessages{max: 4 * recentShards}
	other := "other"
	for i := 0; r.shard(other) == r.shard("busy"); i++ {
		other = fmt.Sprint("other-", i) // a thread of another shard
	}
	r.add(other, "m", "kept")
	for i := range 100 {
		r.add("busy", fmt.Sprint(i), fmt.Sprint("text ", i))
	}
	if got, ok := r.text("busy", "99"); !ok || got != "text 99" {
		t.Fatalf("the newest message: %q, %v", got, ok)
	}
	if _, ok := r.text("busy", "0"); ok {
		t.Fatal("the oldest message of 100 is still remembered with a bound of 4 a shard")
	}
	held := 0
	for i := range 100 {
		if _, ok := r.text("busy", fmt.Sprint(i)); ok {
			held++
		}
	}
	if held != 4 {
		t.Fatalf("%d of busy's messages remembered, want the last 4", held)
	}
	if got, ok := r.text(other, "m"); !ok || got != "kept" {
		t.Fatalf("another thread's message forgotten: %q, %v", got, ok)
	}
	r.add("busy", "99", "other text") // a resend: the first text stays
	if got, _ := r.text("busy", "99"); got != "text 99" {
		t.Fatalf("a resend replaced the remembered text with %q", got)
	}
}
