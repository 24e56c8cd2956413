package runtime

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The small-batch path of dedupHistory drops exactly what the map path
// drops, in the same order, for batches drawn from IDs in history, in the
// deferred events, repeated within the batch, and new.
func TestDedupSmallMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ids := []string{"a", "b", "c", "d", "e", "f"}
	for n := range 2000 {
		var items []Item
		for _, id := range ids[:r.IntN(4)] {
			items = append(items, Item{Kind: ItemUser, Input: id, Text: "x"})
		}
		items = append(items, Item{Kind: ItemAssistant, Text: "y"})
		var deferred []Message
		if r.IntN(2) == 0 {
			deferred = append(deferred, Message{ID: ids[r.IntN(len(ids))]})
		}
		batch := make([]Message, 1+r.IntN(smallBatch))
		for i := range batch {
			batch[i] = Message{ID: ids[r.IntN(len(ids))]}
		}
		mk := func() *slice {
			return &slice{th: &Thread{Items: items}, st: ThreadState{Deferred: deferred}, res: &SliceResult{}}
		}
		small, viaMap := mk(), mk()
		got := small.dedupSmall(slices.Clone(batch))
		want := viaMap.dedupMap(slices.Clone(batch))
		if !slices.Equal(msgIDs(got), msgIDs(want)) || !slices.Equal(small.res.Duplicates, viaMap.res.Duplicates) {
			t.Fatalf("case %d: batch %v, history %v, deferred %v: small kept %v dropped %v; map kept %v dropped %v", n,
				msgIDs(batch), inputs(items), msgIDs(deferred), msgIDs(got), small.res.Duplicates, msgIDs(want), viaMap.res.Duplicates)
		}
	}
}

func msgIDs(ms []Message) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func inputs(items []Item) string {
	return fmt.Sprint(slices.Collect(func(yield func(string) bool) {
		for _, it := range items {
			if it.Input != "" && !yield(it.Input) {
				return
			}
		}
	}))
}
