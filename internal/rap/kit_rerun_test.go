package rap_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
)

// TestKitRerun: Rerun runs a kept invocation's tool again, tracked as
// running (tool_call_status alive, a second Rerun of it refused); an
// unknown operation and a server not started are errors.
func TestKitRerun(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 1)
	kit, err := rap.NewServer(rap.ServerConfig{Name: "rerun", Retry: raptest.FastRetry(3), Logger: raptest.QuietLogger(), Tools: []rap.Tool{{
		Name: "hold", Description: "holds until stopped", InputSchema: json.RawMessage(`{"type":"object"}`),
		Run: func(ctx context.Context, c *rap.Call) error {
			ran <- c.ID
			<-ctx.Done()
			return nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	inv := rap.Invocation{Operation: "hold", ID: "call_1", GroupID: "thr_1", CallbackURL: "http://127.0.0.1:9/cb", Arguments: json.RawMessage(`{}`)}
	if err := kit.Rerun(inv, "e1"); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("Rerun before Start: %v", err)
	}
	base := raptest.StartServer(t, kit)
	unknown := inv
	unknown.Operation = "nope"
	if err := kit.Rerun(unknown, "e1"); err == nil || !strings.Contains(err.Error(), "unknown operation") {
		t.Fatalf("Rerun of an unknown operation: %v", err)
	}
	if err := kit.Rerun(inv, "e1"); err != nil {
		t.Fatal(err)
	}
	if id := <-ran; id != "call_1" {
		t.Fatalf("the tool ran for %q", id)
	}
	resp, err := http.Post(base+rap.ToolCallStatusPath, "application/json", strings.NewReader(`{"thread_id":"thr_1","tool_call_id":"call_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	var st rap.ToolCallStatusResponse
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || !st.Alive {
		t.Fatalf("tool_call_status of the rerun call: %+v %v", st, err)
	}
	resp.Body.Close()
	if err := kit.Rerun(inv, "e2"); err == nil || !strings.Contains(err.Error(), "runs already") {
		t.Fatalf("a second Rerun of a running call: %v", err)
	}
}
