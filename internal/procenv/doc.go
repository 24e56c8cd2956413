// Package procenv builds the environment of the processes agentslice starts
// for tools (MCP servers over stdio, run_command's commands).
//
// A tool process never inherits the runtime's whole environment: that holds
// the runtime's secrets (AGENTSLICE_CALLBACK_KEYS signs callback URLs,
// AGENTSLICE_TOKEN guards the API), and a tool that reports its environment
// would put them into history and from there into every later request to
// the model provider. A process gets an allow-list instead: DefaultPass (the
// variables programs need to run and to format text), the names a
// deployment adds, and the KEY=VALUE entries configured for it. No variable
// named AGENTSLICE_* is ever passed, whichever list names it.
//
// The package owns that one rule; it must not read configuration or the
// process environment itself (callers hand it os.Environ()).
package procenv
