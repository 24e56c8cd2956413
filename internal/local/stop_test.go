package local

import (
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// TestStopAndCloseMessages: a stop message gives the pending call its one
// "interrupted" result and does not wake the model; redelivered, it is
// processed once; a close message does the same and closes the thread,
// which then drops what arrives.
func TestStopAndCloseMessages(t *testing.T) {
	script := &model.Script{Threads: map[string][]model.Step{"main": {
		{Text: "Working.", ToolCall: call("work", `{"job":"long"}`)},
		{Text: "Working again.", ToolCall: call("work", `{"job":"again"}`)},
		{Text: "never"},
	}}}
	h := newHarness(t, model.NewScripted(script))
	h.send(user("main", "u1", "do the long job"))
	h.wait()
	stop := runtime.Message{V: 1, ID: "stop-1", ThreadID: "main", Kind: runtime.KindStop, Text: "enough"}
	h.send(stop)
	h.wait()
	h.send(stop) // redelivered
	h.wait()
	items := h.history("main")
	if got := kinds(items); got != "user,assistant,tool_call,tool_result,marker" {
		t.Fatalf("after the stop: %s\n%s", got, kinds(items))
	}
	res, mark := items[3], items[4]
	if !res.IsError || !strings.HasPrefix(res.Text, "interrupted: the user's stop") || mark.Text != "stopped by the user: enough" || mark.Input != "stop-1" {
		t.Fatalf("result %+v, marker %+v", res, mark)
	}

	h.send(user("main", "u2", "go on"))
	h.wait()
	h.send(runtime.Message{V: 1, ID: "close-1", ThreadID: "main", Kind: runtime.KindClose})
	h.wait()
	h.send(user("main", "u3", "are you there?"))
	h.wait()
	items = h.history("main")
	if got := kinds(items[5:]); got != "user,assistant,tool_call,tool_result,marker" {
		t.Fatalf("after the close: %s", got)
	}
	if items[len(items)-1].Text != "closed by the user" {
		t.Fatalf("close marker %+v", items[len(items)-1])
	}
	th, err := h.store.Load(t.Context(), "main")
	if err != nil || !th.State.Closed || th.State.Pending != nil {
		t.Fatalf("state %+v, %v", th.State, err)
	}
}
