package rap

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// scriptModel calls the tool named by the user's message with the message
// as text, and reports the tool's result as its reply. It stands in for a
// language model (there is none to run here).
type scriptModel struct{}

func (scriptModel) Complete(_ context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	last := req.History[len(req.History)-1]
	switch last.Kind {
	case runtime.ItemUser:
		tool, text, _ := strings.Cut(last.Text, " ")
		args, _ := json.Marshal(map[string]string{"text": text})
		w.ToolCall("", tool, string(args))
	default:
		w.Text("tool said: " + last.Text)
	}
	return nil
}

type replyOutput struct{ ch chan runtime.OutputEvent }

func (o replyOutput) Publish(_ context.Context, ev runtime.OutputEvent) error {
	o.ch <- ev
	return nil
}

// TestWithEmbeddedSystem runs the real engine (internal/local) with the
// Loader as its ToolSource and the Receiver feeding the system's queue: a
// user message leads to a RAP dispatch, the kit tool's callback comes back
// through the signed URL, and the model's reply carries the tool's result.
func TestWithEmbeddedSystem(t *testing.T) {
	t.Parallel()
	rig := newToolRig(t)
	// A second server whose endpoint refuses every invocation.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"name":"refuser","endpoint":"/invoke","tools":[{"name":"refuse","description":"d","inputSchema":{"type":"object"}}]}`))
			return
		}
		http.Error(w, `{"error":"quota exceeded"}`, http.StatusTooManyRequests)
	}))
	t.Cleanup(refusing.Close)
	loader, err := NewLoader(LoaderConfig{Servers: []string{rig.kitSrv.URL, refusing.URL}, Dispatcher: rig.disp, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	out := replyOutput{ch: make(chan runtime.OutputEvent, 16)}
	sys, err := local.New(local.Config{Model: scriptModel{}, Tools: loader, Output: out, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Stop)
	rcv, err := NewReceiver(ReceiverConfig{Keys: rig.signer.Keys, Queue: sys, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rig.srv.Config.Handler = rcv // the signed URLs point at rig.srv

	cases := []struct{ thread, input, want string }{
		{"thr_sys_1", "echo hello", "tool said: echo: hello"},
		{"thr_sys_2", "refuse now", "HTTP 429"},
	}
	for _, tc := range cases {
		if err := sys.Send(context.Background(), runtime.Message{V: 1, ID: "m_" + tc.thread, ThreadID: tc.thread, Kind: runtime.KindUser, Text: tc.input}); err != nil {
			t.Fatal(err)
		}
		ev := waitFor(t, out.ch)
		if ev.ThreadID != tc.thread || ev.Kind != "reply" || !strings.Contains(ev.Text, tc.want) {
			t.Fatalf("%s: output %+v, want a reply containing %q", tc.thread, ev, tc.want)
		}
	}
	if dead, n := sys.DeadLetters(); n != 0 {
		t.Fatalf("dead letters: %+v", dead)
	}
}
