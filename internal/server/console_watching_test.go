package server

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestConsoleShowsWatching: a thread with an active subscription and
// nothing else pending (a background command, a watch) is "watching" in
// the console, as the TUI treats it: busy, with its subscription shown,
// Close enabled and nothing for Stop to interrupt.
func TestConsoleShowsWatching(t *testing.T) {
	b := newBrowser(t)
	srv := startServer(t, Config{Store: StoreMemory})
	const thread = "thr_watch"
	st := runtime.ThreadState{Version: 1, Length: 1, Stack: []string{thread},
		Subscriptions: []runtime.Subscription{{CallID: "call_w", Tool: "run_command", Args: `{"command":"make"}`}}}
	if err := srv.store.Commit(context.Background(), &runtime.Commit{ThreadID: thread,
		Append: []runtime.Item{{Kind: runtime.ItemUser, At: runtime.StampOf(srv.System().Engine().Clock()), Text: "build it"}}, State: st}); err != nil {
		t.Fatal(err)
	}
	b.run("open the thread", chromedp.Navigate(srv.URL()+"/#"+thread),
		poll(`document.querySelector("#thread-status").textContent === "watching"`))
	if !eval[bool](b, `document.querySelector("#stop").disabled && !document.querySelector("#close").disabled`) {
		t.Fatal("a watching thread: want Stop disabled (nothing to interrupt) and Close enabled")
	}
	if s := b.text("#pending"); s != "Subscribed: run_command {\"command\":\"make\"}" {
		t.Fatalf("the subscription is shown as %q", s)
	}
}
