// Package server is the local agent server behind `agentslice serve`: the
// embedded runtime (internal/local) wired to RAP tool servers, MCP servers
// through the proxy, a model from the catalog, and an HTTP API.
//
// It owns:
//   - the configuration (config.go and its sections: config_listen.go,
//     store.go, config_models.go, agents.go, config_tools.go,
//     sandbox_config.go, config_limits.go; config_errors.go): a strict JSON
//     file plus overrides, with errors naming the field (*ConfigError),
//     including the agent definitions and what they refer to (models,
//     toolsets); docs/configuration.md documents every field (a test);
//   - the wiring and lifecycle (server.go): a Server builds the history store,
//     the system, the local timers, the RAP dispatcher, loader and callback
//     receiver, mounts the in-process tool servers, and stops all of it again;
//   - the HTTP API (api.go): send a message (an ID re-sent with other text
//     is a 409), read a thread, list the thread tree, with 4xx JSON errors
//     naming the problem; failures (failures.go): a thread's failed and
//     waiting_for_provider statuses, redrive and discard of dead letters;
//     health (health.go): /healthz (liveness, each part's status) and
//     /readyz (503 while a required part is down); the sandbox review
//     endpoints (sandbox.go): a thread's sandbox, its diff, apply (the one
//     path by which a thread's changes reach the user's working copy, 409
//     when it cannot) and discard;
//   - the event stream (events.go, stream.go): a Broadcaster that fans
//     events out to Server-Sent Events subscribers without ever blocking a
//     slice. History events come from a wrapper of the history store that
//     publishes what each successful commit appended (so live equals
//     replayed, and a stream resumes from Last-Event-ID with nothing lost or
//     doubled); text deltas come from a wrapper of the model, which first
//     publishes the uncommitted items the completion follows (sent without
//     a cursor, their committed copy skipped), so a stream keeps history's
//     order; the runtime's
//     output events (reply, error, notice, view) are passed on;
//   - the human-in-the-loop endpoints (hitl.go, switch.go): answer a
//     user_choice, read views, stop or close a thread (stop and close
//     messages through the engine, after cancelling the completion in
//     flight), switch a thread's model. Choices, answers, views and
//     display segments are read from the thread's history, where the
//     engine commits them (runtime/human.go): the server keeps none of
//     them in memory, so a restart loses none;
//   - the thread list (threads.go): trees by last activity, paged with an
//     opaque cursor, filtered by status, agent and title;
//   - the bearer token and the read timeout (auth.go), and the web console
//     (console.go, console/: embedded, no build step) with what it reads
//     besides the API: the agents and models to pick from (catalogs.go) and
//     the model's markdown as sanitized HTML (markdown.go).
//
// The package must not change how slices run: it only calls the exported API
// of internal/local, internal/rap and internal/mcp. Everything it starts has
// an owner that waits for it in Stop.
//
// Error kinds: *ConfigError (bad configuration, names the field); anything
// else returned by New or Start is wrapped with what was being done.
package server
