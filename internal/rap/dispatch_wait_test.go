package rap

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Wait returns once the notifications in flight are done, is bounded by its
// context, and leaves the Dispatcher open (unlike Close).
func TestDispatcherWait(t *testing.T) {
	t.Parallel()
	arrived, release := make(chan string, 4), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		<-release
	}))
	t.Cleanup(srv.Close)
	d := newTestDispatcher(t, fastRetry(1))
	if err := d.Wait(context.Background()); err != nil {
		t.Fatalf("Wait with nothing in flight: %v", err)
	}
	if !d.Notify(srv.URL+"/close_thread", CloseThread{ThreadID: "t"}) {
		t.Fatal("notification not started")
	}
	waitFor(t, arrived)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a notification blocked: %v, want the context's error", err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Wait(context.Background()) }()
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the notification ended")
	}
	// Still open: a second round works the same.
	if !d.Notify(srv.URL+"/close_thread", CloseThread{ThreadID: "t2"}) {
		t.Fatal("Notify after Wait refused")
	}
	waitFor(t, arrived)
	if err := d.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
