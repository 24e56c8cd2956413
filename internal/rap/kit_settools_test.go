package rap_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
)

func answer(text string) rap.Tool {
	return rap.Tool{Name: text, Description: "answers " + text, InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`),
		Run: func(ctx context.Context, c *rap.Call) error { return c.Result(ctx, text) }}
}

// TestKitSetTools: a kit server started without tools answers its toolset
// 503; SetTools changes what a new fetch sees and how invocations are
// routed; an invalid set is refused and the old one kept.
func TestKitSetTools(t *testing.T) {
	t.Parallel()
	rig := raptest.NewRig(t)
	kit, err := rap.NewServer(rap.ServerConfig{Name: "changing", Retry: raptest.FastRetry(3), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	base := raptest.StartServer(t, kit)
	resp := raptest.Get(t, base+rap.ToolsetPath)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("toolset without tools: %d, want 503", resp.StatusCode)
	}
	if err := kit.SetTools([]rap.Tool{answer("first")}); err != nil {
		t.Fatal(err)
	}
	l, err := rap.NewLoader(rap.LoaderConfig{Servers: []string{base}, Dispatcher: rig.Dispatcher, Fetch: raptest.FastRetry(2), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	old, err := l.SetFor(context.Background(), "thr_old")
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.SetTools([]rap.Tool{answer("second")}); err != nil {
		t.Fatal(err)
	}
	bad := answer("bad")
	bad.InputSchema = json.RawMessage(`{"type":"array"}`)
	if err := kit.SetTools([]rap.Tool{bad}); err == nil || !strings.Contains(err.Error(), "inputSchema") {
		t.Fatalf("SetTools with a bad schema: %v", err)
	}
	fresh, err := l.SetFor(context.Background(), "thr_new")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fresh.Lookup("second"); !ok || len(fresh.Specs()) != 1 {
		t.Fatalf("new root offered %+v, want only second", fresh.Specs())
	}
	dispatch := func(set *rap.Set, thread, tool, args string) runtime.Message {
		t.Helper()
		e, ok := set.Lookup(tool)
		if !ok {
			t.Fatalf("%s not offered", tool)
		}
		if err := e.Async.Dispatch(context.Background(), runtime.Invocation{ThreadID: thread, CallID: "call_" + tool, Name: tool, Args: args}); err != nil {
			t.Fatal(err)
		}
		return rig.Next(t)
	}
	if m := dispatch(fresh, "thr_new", "second", `{"x":"y"}`); m.Text != "second" {
		t.Fatalf("second: %+v", m)
	}
	// The old root still offers first; the server no longer has it.
	if m := dispatch(old, "thr_old", "first", `{"x":"y"}`); !strings.Contains(m.Text, `unknown operation "first" (this server offers second)`) {
		t.Fatalf("first after SetTools: %+v", m)
	}
	// A tool that comes back with another schema is validated by the new one.
	again := answer("first")
	again.InputSchema = json.RawMessage(`{"type":"object","required":["z"]}`)
	if err := kit.SetTools([]rap.Tool{again}); err != nil {
		t.Fatal(err)
	}
	if m := dispatch(old, "thr_old2", "first", `{"x":"y"}`); !strings.Contains(m.Text, "invalid arguments for first") || !strings.Contains(m.Text, "'z'") {
		t.Fatalf("first with its new schema: %+v", m)
	}
}
