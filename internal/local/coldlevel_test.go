package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/agentslice/agentslice/internal/runtime"
)

// After its dictionary, the cold tier tries both levels on the next
// histories and keeps SpeedDefault for prose-like ones (it stores a few
// percent less) and SpeedFastest for repetitive ones (it gains nothing);
// every thread, frozen before, during or after the trial, thaws to what was
// committed.
func TestColdLevelTrial(t *testing.T) {
	vocab := strings.Fields("agent slice history thread commit journal window frame buffer record shard arena codec level trial " +
		"dictionary sample prose tool result reply model token stream lease budget parent child timer sleeper queue inbox " +
		"the a of and to in is it that was for on are with as his they be at one have this from or had by word but what")
	for _, tc := range []struct {
		name string
		text func(rng *rand.Rand) string
		want zstd.EncoderLevel
	}{
		{"prose", func(rng *rand.Rand) string {
			var b strings.Builder
			for b.Len() < 1200 {
				w := vocab[rng.IntN(len(vocab))]
				if rng.IntN(9) == 0 {
					w = fmt.Sprintf("%s%d", w, rng.IntN(1000)) // some words the dictionary cannot hold
				}
				b.WriteString(w)
				b.WriteByte(' ')
			}
			return b.String()
		}, zstd.SpeedDefault},
		{"repetitive", func(*rand.Rand) string {
			return strings.Repeat("The workspace build finished; three crates were rebuilt. ", 20)
		}, zstd.SpeedFastest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := NewHistoryStore()
			rng := rand.New(rand.NewPCG(1, 2))
			want := map[string][]runtime.Item{}
			const threads = 8 + trialFrames + 8 // the dictionary's, the trial's, and after
			for th := range threads {
				id := fmt.Sprintf("t%02d", th)
				var its []runtime.Item
				for i := range 16 {
					its = append(its, runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("u%d", i), Text: tc.text(rng)})
				}
				if err := s.Commit(ctx, &runtime.Commit{ThreadID: id, Expected: 0, Append: its,
					State: runtime.ThreadState{Version: 1, Length: len(its), Stack: []string{id}}}); err != nil {
					t.Fatal(err)
				}
				want[id] = its
				if s.FreezeIdle(-1) != 1 {
					t.Fatalf("thread %s not frozen", id)
				}
			}
			c := s.codec.cur.Load()
			if !s.codec.learned.Load() || c.dense != nil {
				t.Fatalf("after %d histories: dictionary learned %v, trial still on %v", threads, s.codec.learned.Load(), c.dense != nil)
			}
			if c.level != tc.want {
				t.Fatalf("level %v kept (fast %d bytes, dense %d over the trial), want %v", c.level, s.codec.fastSum, s.codec.denseSum, tc.want)
			}
			for id, its := range want {
				got, err := s.Load(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Items, its) {
					t.Fatalf("%s thawed to other items than committed", id)
				}
			}
		})
	}
}
