package rapkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/agentslice/agentslice/rapkit"
)

// callbacks stands in for the runtime's callback endpoint: it keeps a line
// for each body a tool posts, answers 200, and hands the lines over once n
// arrived.
func callbacks(n int) (*httptest.Server, chan []string) {
	done := make(chan []string, 1)
	var lines []string
	var mu sync.Mutex
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		cb, err := rapkit.DecodeCallback(b)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			lines = append(lines, "bad callback: "+err.Error())
		case cb.ToolResult != nil:
			lines = append(lines, fmt.Sprintf("result %s: %s", cb.ToolResult.ID, *cb.ToolResult.Text))
		case cb.SubscriptionEvent != nil:
			lines = append(lines, fmt.Sprintf("event %s (final %v): %s", cb.SubscriptionEvent.ToolCallID, cb.SubscriptionEvent.Final, *cb.SubscriptionEvent.Text))
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // answered before the example may end
		if len(lines) == n {
			done <- lines
		}
	})), done
}

// show prints the callbacks once they all arrived.
func show(done chan []string) {
	for _, l := range <-done {
		fmt.Println(l)
	}
}

// invoke posts an invocation the way a runtime does and prints the answer.
func invoke(base, operation, args, callbackURL string) {
	body, _ := json.Marshal(rapkit.Invocation{Operation: operation, Arguments: json.RawMessage(args),
		ID: "call_1", GroupID: "thr_1", CallbackURL: callbackURL})
	resp, err := http.Post(base+rapkit.InvokePath, "application/json", strings.NewReader(string(body)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println("invoke:", resp.StatusCode)
}

// ExampleNewServer defines a tool with a JSON Schema and serves it. The
// runtime's invocation is answered 200 at once; the result goes to the
// callback URL, as RAP requires, though the tool reads as a plain function.
func ExampleNewServer() {
	srv, err := rapkit.NewServer(rapkit.ServerConfig{Name: "greeter", Tools: []rapkit.Tool{{
		Name:        "greet",
		Description: "Greets someone by name.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}`),
		Run: func(ctx context.Context, c *rapkit.Call) error {
			var a struct{ Who string }
			if err := c.Args(&a); err != nil {
				return err
			}
			return c.Result(ctx, "hello, "+a.Who)
		},
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = srv.Start(context.Background())
	defer srv.Stop()
	tools := httptest.NewServer(srv)
	defer tools.Close()
	cb, done := callbacks(1)
	defer cb.Close()

	invoke(tools.URL, "greet", `{"who":"Ada"}`, cb.URL)
	show(done)
	// Output:
	// invoke: 200
	// result call_1: hello, Ada
}

// ExampleCall_Event shows a slow tool reporting progress: associative events
// go inline into the calling thread while the call is pending, then the
// result ends the call.
func ExampleCall_Event() {
	srv, _ := rapkit.NewServer(rapkit.ServerConfig{Name: "counter", Tools: []rapkit.Tool{{
		Name:        "count",
		Description: "Counts to three, reporting each step.",
		Run: func(ctx context.Context, c *rapkit.Call) error {
			if err := c.Subscribe(ctx, "counting"); err != nil {
				return err
			}
			for i := 1; i <= 3; i++ {
				if err := c.Event(ctx, fmt.Sprint(i), true, i == 3); err != nil {
					return err
				}
			}
			return nil
		},
	}}})
	_ = srv.Start(context.Background())
	defer srv.Stop()
	tools := httptest.NewServer(srv)
	defer tools.Close()
	cb, done := callbacks(4)
	defer cb.Close()

	invoke(tools.URL, "count", `{}`, cb.URL)
	show(done)
	// Output:
	// invoke: 200
	// result call_1: counting
	// event call_1 (final false): 1
	// event call_1 (final false): 2
	// event call_1 (final true): 3
}

// ExampleServer_invalidArguments: arguments the schema refuses are still
// acknowledged; the model reads why in the call's result.
func ExampleServer_invalidArguments() {
	srv, _ := rapkit.NewServer(rapkit.ServerConfig{Name: "greeter", Tools: []rapkit.Tool{{
		Name:        "greet",
		Description: "Greets someone by name.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}},"required":["who"]}`),
		Run:         func(ctx context.Context, c *rapkit.Call) error { return c.Result(ctx, "unreachable") },
	}}})
	_ = srv.Start(context.Background())
	defer srv.Stop()
	tools := httptest.NewServer(srv)
	defer tools.Close()
	cb, done := callbacks(1)
	defer cb.Close()

	invoke(tools.URL, "greet", `{"who":7}`, cb.URL)
	show(done)
	// Output:
	// invoke: 200
	// result call_1: error: invalid arguments for greet: at /who: got number, want string
}

// ExampleDecodeToolset validates a toolset document as a runtime does: a
// problem rejects it whole and names the field.
func ExampleDecodeToolset() {
	_, _, err := rapkit.DecodeToolset([]byte(`{"name":"t","endpoint":"/invoke",
		"tools":[{"name":"has space","description":"d","inputSchema":{"type":"object"}}]}`))
	fmt.Println(err)
	ts, schemas, err := rapkit.DecodeToolset([]byte(`{"name":"t","endpoint":"/invoke",
		"tools":[{"name":"ok","description":"d","inputSchema":{"type":"object","required":["n"]}}]}`))
	fmt.Println(ts.Tools[0].Name, err, schemas[0].Validate([]byte(`{}`)))
	// Output:
	// field "tools[0].name": "has space" must be 1..128 characters of [A-Za-z0-9_-]
	// ok <nil> at /: missing property 'n'
}
