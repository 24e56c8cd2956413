package local

import (
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The documented defaults of Config fill what is left at zero, and what
// is set is kept; a budget without a Share of its own takes the
// scheduler's BackgroundShare. (A SliceTimeout left at 0 once stayed 0:
// slices without a bound.)
func TestConfigDefaults(t *testing.T) {
	sys, err := New(Config{Model: &model.Sim{Chunks: 1}, Tools: runtime.NewToolbox()})
	if err != nil {
		t.Fatal(err)
	}
	if c := sys.cfg; c.SliceAttempts != 5 || c.RetryBase != 10*time.Millisecond || c.SliceTimeout != 10*time.Minute {
		t.Fatalf("defaults: %d attempts, retry base %v, slice timeout %v; want 5, 10ms, 10m", c.SliceAttempts, c.RetryBase, c.SliceTimeout)
	}
	sys, err = New(Config{Model: &model.Sim{Chunks: 1}, Tools: runtime.NewToolbox(),
		SliceAttempts: 2, RetryBase: time.Second, SliceTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if c := sys.cfg; c.SliceAttempts != 2 || c.RetryBase != time.Second || c.SliceTimeout != time.Minute {
		t.Fatalf("set: %d attempts, retry base %v, slice timeout %v; want them kept", c.SliceAttempts, c.RetryBase, c.SliceTimeout)
	}
	for _, tc := range []struct {
		background, budget, want float64
	}{{0.5, 0, 0.5}, {0.5, 0.1, 0.1}, {0, 0, 0.2}} {
		sys, err := New(Config{Model: &model.Sim{Chunks: 1}, Tools: runtime.NewToolbox(),
			Scheduler: SchedulerConfig{BackgroundShare: tc.background, Budget: &Budget{Concurrency: 1, Share: tc.budget}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := sys.budget.b.Share; got != tc.want {
			t.Errorf("BackgroundShare %v, Budget.Share %v: the budget's share is %v, want %v", tc.background, tc.budget, got, tc.want)
		}
		sys.budget.Close()
	}
}
