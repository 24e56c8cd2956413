// Package tui is the terminal UI of `agentslice code` and `agentslice
// chat`: a bubbletea program (Elm-style Model, Update, View) over one
// thread of a serve.
//
// It owns the screen and the keys, nothing else. It holds no network code
// of its own: everything it shows comes from the public client package
// (github.com/agentslice/agentslice/client), the thread's event stream and
// the API calls every other client makes, issued as tea.Cmds. Conversation
// folds the stream's events into what is shown, without a terminal, so the
// state and the screen are tested as plain functions (Update and View on
// messages, no terminal, no server).
//
// It must not reach into the engine, the stores or the server's packages:
// deps_test.go checks its imports.
package tui
