package local

import (
	"context"

	"github.com/agentslice/agentslice/internal/runtime"
)

// freezing freezes every thread after each commit.
type freezing struct{ *HistoryStore }

func (f freezing) Commit(ctx context.Context, c *runtime.Commit) error {
	err := f.HistoryStore.Commit(ctx, c)
	f.FreezeIdle(-1)
	return err
}
