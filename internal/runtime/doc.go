// Package runtime is the core of agentslice: messages, the history model, the
// slice engine and the small interfaces the engine consumes.
//
// A slice loads one thread, folds in a batch of new messages, runs a bounded
// number of model completions, commits the result in one write, dispatches at
// most one asynchronous tool call and stops. The invariants it serves are
// listed in docs/design.md ("The slice contract"); each is pinned by a test in this
// package or in internal/local.
//
// Priority classes (class.go): every thread is interactive or background,
// fixed at creation (ThreadState.Class) and stamped on every message the
// engine sends (Message.Class), so queues and schedulers order threads
// without reading them. Classes never change the order of one thread's
// messages.
//
// IDs (ids.go): every ID the engine mints is derived from inputs, never
// drawn at random, so a retried slice mints the same ones, with one
// exception: a new root thread's incarnation (ThreadState.Incarnation),
// random and committed with the thread's first items before anything
// derived from it leaves the slice. IDs derived from a thread's ID and a
// position or version alone (tool calls, replies, continuations,
// compaction children) mix it in, so a thread recreated under an earlier
// one's ID never reissues that one's IDs; a child's incarnation is derived
// from its parent's. States without one (written before incarnations)
// derive IDs as before.
//
// Agents (agent.go, agent_slice.go, agentdoc.go): a thread runs as one
// named, content-versioned Agent (instructions, model, toolset allow-list,
// limits). Engine.Agents resolves definitions; the thread's state records
// the agent's name and version, and a change of version is written to
// history before the completion it affects, so every retry of a slice sees
// what the first attempt committed. Without Engine.Agents nothing changes:
// no system prompt, Engine.Model, every tool.
//
// Failures (provider_wait.go): a completion that fails for good (a
// permanent error, or a provider outage longer than ProviderWait.MaxWait)
// is an item in history, a marker with IsError named FailureMarkerName
// whose Args say what failed, the provider's error and the attempts
// (IsFailure), with an "error" output event. With Engine.ProviderWait, a
// completion whose every attempt failed with a retryable error does not
// fail the slice: the thread records the wait (ThreadState.ModelWait) and a
// Timers wake-up (KindRetry, deduplicated and crash-safe like a liveness
// check) runs the model again, after a doubling delay of at least the
// provider's Retry-After (RetryAfterError). A completion a person stopped
// (ErrStopped) is no failure.
//
// The package must not import AWS, pgx or HTTP client packages: bindings
// (internal/local, internal/dsql, internal/dedup, internal/sqsq,
// internal/timers) implement the interfaces declared here.
//
// Error kinds a caller decides on:
//   - ErrConflict: a commit's expected version did not match; another slice of
//     the thread committed first. Retry the whole slice (the message stays on
//     the queue and is deduplicated on redelivery).
//   - *BadMessageError: the message can never succeed (missing ID, unknown
//     kind, oversize, invalid UTF-8). Move it to a dead-letter destination with
//     the reason; never retry it.
//   - *PermanentError: a non-retryable model or tool failure (bad request,
//     access denied). The slice ended with a failure item and an error
//     reply; do not retry.
//   - *ToolRejectedError: a tool refused a call, or it never arrived
//     (Unreachable) or its server kept failing (ServerFailed); the model
//     gets an error result worded by which.
//   - *AgentError: an agent definition that cannot work (ValidateAgents,
//     DecodeAgentsDoc), naming the field.
//   - any other error is transient: retry the slice later.
package runtime
