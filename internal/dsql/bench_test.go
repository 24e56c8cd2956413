package dsql

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Workload: items of about 1.2 KB (the size of a typical completion), a
// local PostgreSQL 15 with fsync=off on the same machine (so the numbers are
// CPU and protocol cost, not network or disk), one connection in use at a
// time. Run: go test -run '^$' -bench . ./internal/dsql

var benchText = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 27) // ~1.2 KB

func benchItems(prefix string, n int) []runtime.Item {
	out := make([]runtime.Item, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("%s-in-%d", prefix, i), Text: benchText}
		} else {
			out[i] = runtime.Item{Kind: runtime.ItemAssistant, Text: benchText, Usage: &runtime.Usage{Input: 900, Output: 300, Total: 1200}}
		}
	}
	return out
}

// BenchmarkLoad loads the last thread of a chain of depth threads, each with
// perLevel own items, spawned at the end of its parent's view.
func BenchmarkLoad(b *testing.B) {
	for _, tc := range []struct{ depth, perLevel int }{{1, 20}, {3, 20}, {1, 200}} {
		b.Run(fmt.Sprintf("depth=%d/items=%d", tc.depth, tc.depth*tc.perLevel), func(b *testing.B) {
			ctx := context.Background()
			s := New(newSchemaPool(b), Options{})
			var stack []string
			view := 0
			last := ""
			for d := range tc.depth {
				id := fmt.Sprintf("bl-%d", d)
				stack = append(stack, id)
				c := &runtime.Commit{ThreadID: id, Append: benchItems(id, tc.perLevel),
					State: runtime.ThreadState{Version: 1, Length: tc.perLevel, Stack: stack}}
				view += tc.perLevel
				if d+1 < tc.depth {
					kid := fmt.Sprintf("bl-%d", d+1)
					c.Children = []runtime.ChildThread{{ID: kid, SpawnAt: view, State: runtime.ThreadState{Parent: id, Stack: append(append([]string{}, stack...), kid)}}}
				}
				if err := s.Commit(ctx, c); err != nil {
					b.Fatal(err)
				}
				last = id
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				th, err := s.Load(ctx, last)
				if err != nil || len(th.Items) != view {
					b.Fatalf("%d items, %v", len(th.Items), err)
				}
			}
			b.ReportMetric(float64(view), "items/load")
		})
	}
}

// BenchmarkCommit commits turns of two items (a user message and a reply)
// to one thread, each at the next version.
func BenchmarkCommit(b *testing.B) {
	ctx := context.Background()
	s := New(newSchemaPool(b), Options{})
	turn := benchItems("bc", 2)
	var version int64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c := &runtime.Commit{ThreadID: "bc", Expected: version, Append: turn,
			State: runtime.ThreadState{Version: version + 1, Length: int(version+1) * 2, Stack: []string{"bc"}}}
		if err := s.Commit(ctx, c); err != nil {
			b.Fatal(err)
		}
		version++
	}
	b.ReportMetric(2, "items/commit")
}
