//go:build chaos

package chaos_test

import (
	"testing"

	"github.com/agentslice/agentslice/internal/chaos"
)

// TestChaosFull is the whole matrix `make chaos` runs: every scenario, every
// crash point, single and double crashes, both kinds of racing duplicate
// slice, redelivery with reordering, crashes during redelivery, and crashes
// on the embedded System, on the memory stores and on the DSQL (PostgreSQL)
// and DynamoDB Local stores. It ends with the summary line.
func TestChaosFull(t *testing.T) {
	rep := chaos.NewReport()
	t.Run("memory", func(t *testing.T) {
		suite{backend: "memory", new: memory, crash: true, double: 8, races: true,
			seeds: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, crashDup: true, system: true}.run(t, rep, true)
	})
	t.Run("dsql+dynamodb", func(t *testing.T) {
		suite{backend: "dsql+dynamodb", new: realStores(t), crash: true, double: 2, races: true,
			seeds: []uint64{1, 2, 3}, crashDup: true, system: true}.run(t, rep, true)
	})
	summarize(t, rep)
	if n := len(rep.Divergences()); n > 0 {
		t.Errorf("%d divergences", n)
	}
}
