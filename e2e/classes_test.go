//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestPriorityQueues runs the deployment with its two input queues
// (interactive and background, each with its own event source) under the
// emulator. A background thread's messages all travel through the
// background queue, whoever sends them: the user's message (the sender
// routes by class), the tool's result (the receiver reads the class signed
// into the callback URL) and the sleep's wake-up (the delay relay routes by
// the class on the wake-up message). An interactive thread's messages never
// do. Per-thread FIFO holds because a thread's messages use one queue.
func TestPriorityQueues(t *testing.T) {
	r := startRig(t, rigOptions{background: true})
	suffix := time.Now().Format("150405")
	// The scripted model picks a thread's steps by its first message: one
	// background thread calls the clock, one sleeps; an interactive thread
	// calls the clock too.
	bgTool, bgSleep, in := "bg-tool-"+suffix, "bg-sleep-"+suffix, "in-tool-"+suffix
	send := func(thread, text string, class runtime.Class) {
		t.Helper()
		m := runtime.Message{V: 1, ID: "m1", ThreadID: thread, Kind: runtime.KindUser, Text: text, Class: class}
		if err := r.router.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	send(bgTool, "what time is it?", runtime.ClassBackground)
	send(bgSleep, "please sleep a while", runtime.ClassBackground)
	send(in, "what time is it?", runtime.ClassInteractive)
	for th, want := range map[string]string{bgTool: "reply: The clock answered.", bgSleep: "reply: Rested.", in: "reply: The clock answered."} {
		if got := r.replies(t, th, 1); got[0] != want {
			t.Fatalf("%s replied %q, want %q", th, got, want)
		}
	}

	for th, want := range map[string][]string{
		bgTool:  {"user", "assistant", "tool_call(get_time)", "tool_result", "assistant"},
		bgSleep: {"user", "tool_call(sleep)", "tool_result", "assistant"},
		in:      {"user", "assistant", "tool_call(get_time)", "tool_result", "assistant"},
	} {
		kinds, thread := r.kinds(t, th)
		if !slices.Equal(kinds, want) {
			t.Fatalf("%s history %v, want %v", th, kinds, want)
		}
		class := runtime.ClassBackground
		if th == in {
			class = runtime.ClassInteractive
		}
		if thread.State.Class != class {
			t.Fatalf("%s recorded class %q, want %q", th, thread.State.Class, class)
		}
	}

	// Each thread's user message and its tool result or wake-up came
	// through its class's queue, and none through the other one.
	byBG, byIn := r.deliveredBy("background"), r.deliveredBy("interactive")
	for _, th := range []string{bgTool, bgSleep} {
		if n := count(byBG, th); n < 2 {
			t.Fatalf("the background queue delivered %d records of %s, want ≥ 2 (the user message and the result or wake-up): %v", n, th, byBG)
		}
		if n := count(byIn, th); n != 0 {
			t.Fatalf("the interactive queue delivered %d records of background thread %s", n, th)
		}
	}
	if n := count(byIn, in); n < 2 {
		t.Fatalf("the interactive queue delivered %d records of %s, want ≥ 2 (the user message and the result)", n, in)
	}
	if n := count(byBG, in); n != 0 {
		t.Fatalf("the background queue delivered %d records of interactive thread %s", n, in)
	}
}

func count(ids []string, id string) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}
