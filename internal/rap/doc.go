// Package rap speaks the Reactive Agent Protocol (RAP) for agentslice: the
// wire types, toolset discovery and validation, argument validation against
// each tool's JSON Schema, fire-and-forget dispatch, signed callback URLs,
// the callback receiver, and a kit for writing RAP tool servers in Go.
//
// How it plugs into internal/runtime:
//   - Loader implements runtime.ToolSource. It fetches each configured
//     server's {base}/.well-known/rap-toolset once per root thread, validates
//     it, and offers its tools beside an optional base runtime.Toolbox.
//   - Each RAP tool it offers implements runtime.Tool (Dispatch POSTs the
//     invocation and returns once the tool answered 200), runtime.ArgsValidator
//     (the tool's inputSchema, draft 2020-12 by default), runtime.Canceler
//     (best-effort /cancel_tool_call to every configured server),
//     runtime.StatusChecker (/tool_call_status of the server that got the
//     call) and runtime.CallDeadliner (longRunning, per-server deadlines).
//   - Receiver is the http.Handler behind every callback URL. It verifies the
//     URL's signature (Keyring), decodes and validates the body, checks it
//     against the signed thread and call, and turns it into a runtime.Message
//     sent to a runtime.Queue. An authentic but unusable body gets a 4xx and
//     an error result in the thread; a result too large for a queue message
//     is truncated with a note to the model (fit.go).
//   - The kit (Server, Tool, Call) is for writing tool servers; it lives in
//     the public package rapkit. See internal/rap/tools for two tools and
//     internal/mcp for the MCP proxy.
//
// Conformance to the RAP specification, requirement by requirement, is
// listed in docs/rap-conformance.md.
//
// The wire types, toolset and callback validation, inputSchema compilation,
// POSTs with bounded retries and the tool-server kit are the public package
// rapkit; kit_alias.go keeps their names here.
//
// Files, one concept each: kit_alias.go (the names from rapkit),
// toolset.go (the per-root Set), loader.go (fetching and caching),
// dispatch.go (invocations and best-effort
// notifications), status.go (/tool_call_status, runtime side), fit.go
// (fitting results to a queue message), sign.go (keyring and signed callback URLs),
// keyring_secret.go (the keyring as a deployment stores it), receiver.go (the
// callback handler: a user_choice's choice and a result's display segment
// travel in the messages it enqueues, and with HistoryViews a view_update
// does too, so a deployment keeps them in history), stores.go (in-memory
// view and choice stores, for deployments without HistoryViews), answer.go
// (answering the user_choice a thread's history says is pending: serve's
// answer message and `agentslice choose -queue-url`, which hands it the
// history store to read).
//
// The package must not reach into the engine's state or stores: whether a
// call is still pending is the engine's decision (an optional one-method
// CallChecker lets a deployment reject unknown calls early, and an optional
// Incarnations refuses URLs signed for an earlier thread of the same ID). It must never
// enqueue anything from a callback whose signature, expiry or thread does not
// check out.
//
// Error kinds a caller decides on:
//   - *FieldError: a toolset or callback body is malformed; it names the JSON
//     field. Receivers answer 400 with it (and an error result for the
//     signed call); loaders reject the toolset whole.
//   - ErrBadSignature, ErrExpired (wrapped in *CallbackError): a callback URL
//     that is forged, tampered with or too old. Answer 403; never retry.
//   - ErrStaleCallback (wrapped in *CallbackError): a callback URL signed
//     for an earlier incarnation of its thread (the store wiped, the thread
//     recreated). Answer 403; never retry.
//   - *runtime.ToolRejectedError from Dispatch: the tool refused (4xx), its
//     server kept failing (5xx, ServerFailed) or could not be reached
//     (Unreachable) within the retry budget; the model gets an error result
//     worded by which.
//   - *StatusError (a final 4xx) and *UnavailableError (5xx, each a
//     *ServerError, or transport errors until the RetryPolicy budget ran out)
//     from the kit's Call.Post and PostChoice.
//   - *ToolsetError: a toolset that could not be loaded or was rejected, with
//     the server it came from (reported by Loader, never fatal to a thread).
package rap
