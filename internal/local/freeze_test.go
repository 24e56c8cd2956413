package local

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// freezing freezes every thread after each commit.
type freezing struct{ *HistoryStore }

func (f freezing) Commit(ctx context.Context, c *runtime.Commit) error {
	err := f.HistoryStore.Commit(ctx, c)
	f.FreezeIdle(-1)
	return err
}

// Threads frozen before the store has learned its dictionary and threads
// frozen after it both thaw to exactly what was committed, and the
// dictionary is learned from the store's own histories.
func TestFreezeLearnsDictionary(t *testing.T) {
	ctx := context.Background()
	s := NewHistoryStore()
	words := strings.Fields("the workspace build finished three crates were rebuilt and test plan covers each module failures storage parser network retries")
	text := func(th, i int) string {
		var b strings.Builder
		for k := range 60 {
			b.WriteString(words[(th*7+i*13+k*k)%len(words)])
			b.WriteByte(' ')
		}
		return b.String()
	}
	const threads, items = 40, 12
	want := map[string][]runtime.Item{}
	for th := range threads {
		id := fmt.Sprintf("t%02d", th)
		var its []runtime.Item
		for i := range items {
			its = append(its, runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("u%d", i), Text: text(th, i)})
		}
		if err := s.Commit(ctx, &runtime.Commit{ThreadID: id, Expected: 0, Append: its,
			State: runtime.ThreadState{Version: 1, Length: items, Stack: []string{id}}}); err != nil {
			t.Fatal(err)
		}
		want[id] = its
		if s.FreezeIdle(-1) != 1 {
			t.Fatalf("thread %s not frozen", id)
		}
	}
	if !s.codec.learned.Load() {
		t.Fatalf("no dictionary after %d frozen threads of about %d bytes", threads, items*len(text(0, 0)))
	}
	for id, its := range want {
		got, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Items, its) {
			t.Fatalf("%s thawed to %d items, differing from the %d committed", id, len(got.Items), len(its))
		}
	}
}
