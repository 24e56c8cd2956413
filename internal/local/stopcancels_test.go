package local

import (
	"context"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Stop cancels the slices that are running: a model call that waits for
// its context ends, and Stop returns, without the model ever answering.
func TestStopCancelsARunningSlice(t *testing.T) {
	entered, ended := make(chan struct{}), make(chan error, 1)
	blocked := modelFunc(func(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
		close(entered)
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
			return ctx.Err()
		case <-time.After(time.Minute): // bounds the test if Stop never cancels
			ended <- nil
			return nil
		}
	})
	h := newHarness(t, blocked)
	h.send(user("t1", "u1", "think hard"))
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the model was never called")
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		h.sys.Stop()
	}()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the model call ran to its end: Stop did not cancel it")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the model call was not cancelled by Stop")
	}
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop did not return after its slice was cancelled")
	}
}
