// Package rapkit is for writing tool servers that speak the Reactive Agent
// Protocol (RAP), the tool protocol of agentslice and of the Infinity
// runtime, in Go. It holds the protocol's wire types, toolset and callback
// validation, JSON Schema checking of arguments, callback posting with
// retries, and Server, a tool server you mount on any HTTP mux:
//
//	srv, err := rapkit.NewServer(rapkit.ServerConfig{Name: "clock", Tools: []rapkit.Tool{{
//		Name:        "get_time",
//		Description: "Returns the current time.",
//		InputSchema: json.RawMessage(`{"type":"object"}`),
//		Run: func(ctx context.Context, c *rapkit.Call) error {
//			return c.Result(ctx, time.Now().UTC().Format(time.RFC3339))
//		},
//	}}})
//	srv.Start(ctx)
//	defer srv.Stop()
//	http.ListenAndServe(addr, srv)
//
// # What the server does
//
// The server serves the toolset at /.well-known/rap-toolset (the endpoint it
// advertises is {base}/invoke), acknowledges each valid invocation with 200
// at once, and runs the tool in a goroutine it owns; Stop cancels running
// calls and waits for them. /cancel_tool_call and /close_thread cancel the
// calls they name. SetTools replaces the tools while the server runs. A tool
// talks back through its *Call: a synchronous-looking tool just computes and
// calls Result before returning; a slow one calls Subscribe at once (the
// call's result, starting a subscription) and then sends Event progress
// until a final one; OAuth, Choice and View reach the person behind the
// agent. Each POST
// to the callback URL is retried on 5xx and transport errors, never on 4xx.
//
// An invocation naming an unknown operation or carrying arguments its schema
// refuses is still acknowledged with 200; the error goes to the callback URL
// as the call's tool_result (the specification's SHOULD), so the model reads
// it. Every callback echoes the invocation's call_id. /tool_call_status
// answers {"alive": true} while the call runs (a subscription's Run keeps
// running while it sends events) and {"alive": false} for any call it does
// not track, including every call from before a restart. A Run that returns
// without a result gets an error result sent for it, so no agent waits
// forever.
//
// RAP does not prescribe how the runtime authenticates to the tool. Set
// ServerConfig.Authorize to check invocations, /cancel_tool_call,
// /close_thread and /tool_call_status alike; without it the kit accepts any
// well-formed request, so deploy it where only the runtime reaches it.
// Callback URLs are capabilities signed by the runtime: post to them as
// given (the kit does) and never log them in full.
//
// # Checking a server
//
// `agentslice rap check URL` exercises a running tool server against the
// specification's MUSTs and prints a table (docs/rapkit.md); in a Go test,
// rapkittest.Check runs the same checks and fails the test per requirement.
//
// # Errors
//
//   - *FieldError: a toolset, invocation or callback body is malformed; it
//     names the JSON field (DecodeToolset, DecodeCallback, and the 400s the
//     server answers).
//   - *StatusError (a final 4xx: the runtime refused the callback; not
//     retried) and *UnavailableError (5xx, each a *ServerError, or transport
//     errors until the RetryPolicy budget ran out) from Call.Post, PostJSON,
//     Exchange and PostChoice.
//
// # Stability
//
// The package follows the module's version: until agentslice tags v1, an
// exported name may still change, and the change is listed in the release
// notes. The wire format is RAP's and does not change with it. The package
// must not depend on agentslice's runtime: nothing internal appears in its
// API (api_test.go fails if it does), so a tool server importing it pulls in
// no engine, store or cloud SDK.
package rapkit
