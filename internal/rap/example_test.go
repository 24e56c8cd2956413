package rap_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// printQueue prints what the receiver enqueues.
type printQueue struct{ done chan struct{} }

func (q printQueue) Send(_ context.Context, msgs ...runtime.Message) error {
	for _, m := range msgs {
		fmt.Printf("%s for %s/%s: %s\n", m.Kind, m.ThreadID, m.ToolCallID, m.Text)
	}
	close(q.done)
	return nil
}

// Example wires the pieces together: a kit tool server, the runtime's
// callback receiver, and a Loader offering the server's tools.
func Example() {
	// The tool server, written with the kit.
	srv, _ := rap.NewServer(rap.ServerConfig{Name: "greeter", Tools: []rap.Tool{{
		Name:        "greet",
		Description: "Greets someone.",
		InputSchema: []byte(`{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}`),
		Run: func(ctx context.Context, c *rap.Call) error {
			var a struct{ Who string }
			if err := c.Args(&a); err != nil {
				return err
			}
			return c.Result(ctx, "hello, "+a.Who)
		},
	}}})
	_ = srv.Start(context.Background())
	defer srv.Stop()
	tools := httptest.NewServer(srv)
	defer tools.Close()

	// The runtime side: keys, the receiver behind the callback URLs, the
	// dispatcher and the loader (a runtime.ToolSource).
	keys, _ := rap.NewKeyring(rap.Key{ID: "2026-11", Secret: []byte(strings.Repeat("k", 32))})
	q := printQueue{done: make(chan struct{})}
	rcv, _ := rap.NewReceiver(rap.ReceiverConfig{Keys: keys, Queue: q})
	callbacks := httptest.NewServer(rcv)
	defer callbacks.Close()
	disp, _ := rap.NewDispatcher(rap.DispatcherConfig{Signer: &rap.Signer{Keys: keys, BaseURL: callbacks.URL + "/rap/callback"}})
	defer disp.Close()
	loader, _ := rap.NewLoader(rap.LoaderConfig{Servers: []string{tools.URL}, Dispatcher: disp})

	thread := &runtime.Thread{ID: "thr_1"}
	ts, _ := loader.Toolset(context.Background(), thread)
	greet, _ := ts.Lookup("greet")
	fmt.Println(greet.Async.(runtime.ArgsValidator).ValidateArgs(`{}`))
	_ = greet.Async.Dispatch(context.Background(), runtime.Invocation{ThreadID: "thr_1", CallID: "call_1", Name: "greet", Args: `{"who":"Ada"}`})
	<-q.done
	// Output:
	// at /: missing property 'who'
	// tool_result for thr_1/call_1: hello, Ada
}

// ExampleSigner_CallbackURL shows what a callback URL carries.
func ExampleSigner_CallbackURL() {
	keys, _ := rap.NewKeyring(rap.Key{ID: "2026-11", Secret: []byte(strings.Repeat("k", 32))})
	s := &rap.Signer{Keys: keys, BaseURL: "https://agents.example.com/rap/callback", TTL: 24 * time.Hour,
		Now: func() time.Time { return time.Unix(1_800_000_000, 0) }}
	raw, _ := s.CallbackURL("thr_1", "call_1")
	u, _ := url.Parse(raw)
	q := u.Query()
	fmt.Println(u.Path, q.Get("t"), q.Get("c"), q.Get("e"), q.Get("k"), len(q.Get("s")))
	capa, err := keys.Verify(q, time.Unix(1_800_000_000, 0))
	fmt.Println(capa.ThreadID, capa.CallID, err)
	_, err = keys.Verify(q, time.Unix(1_800_000_000, 0).Add(25*time.Hour))
	fmt.Println(err)
	// Output:
	// /rap/callback thr_1 call_1 1800086400 2026-11 43
	// thr_1 call_1 <nil>
	// field "e": callback URL has expired (at 2027-01-16T08:00:00Z)
}
