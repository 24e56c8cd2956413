// Package sandbox is the sandbox RAP toolset: the tools a coding agent uses
// to read, change and test a git repository without touching the user's
// working copy.
//
// Each thread works in its own sandbox: a git worktree on the branch
// agentslice/<thread> (a thread ID that is not a plain name is made one,
// see Name), created at the thread's first tool call from the
// user's HEAD (the commit; the user's branch is never checked out or moved).
// A thread whose parent (the last of its thread_ancestors) has a sandbox
// gets one stacked on the parent's: the parent's uncommitted edits are first
// committed to the parent's branch, and the child's branch starts from that
// commit. The base commit of each sandbox is kept as the ref
// refs/agentslice/base/<thread>, so diff compares against the state the
// sandbox started from, across restarts.
//
// The contract the package owns: the user's working copy, index and current
// branch are never written by the tools. In the user's repository the tools
// only run git commands that read (rev-parse) or that write the
// repository's object store, refs under refs/heads/agentslice/ and
// refs/agentslice/, and its worktree bookkeeping (git worktree add/prune).
// Every other git command runs inside a sandbox. The one exception is
// Manager.Apply, which is no tool (a person asks for it: `agentslice
// sandbox -apply`): it commits a sandbox's changes onto the user's branch
// as one commit, composed in a scratch worktree, and updates the user's
// index and working copy for the touched files only; it refuses, changing
// nothing, when a touched file has uncommitted changes or the changes
// conflict.
//
// Tools: read_file, list_files (respects .gitignore), search (ripgrep
// when it is on PATH, a Go search otherwise, with the same answer),
// write_file,
// edit_file, diff (against the base, with the whole diff as one display_as
// diff segment), run_command and squash_child (a child's changes into the
// caller's sandbox as one commit; the child must be stacked on the caller,
// which refs/agentslice/stack/<child> records; a conflict names the files
// and resets the caller's sandbox to its state before the squash). Paths
// outside the sandbox (absolute, "..", symlinks that leave it, the .git
// entry) are refused; read_file also takes the absolute path of one of the
// sandbox's command logs.
//
// run_command is asynchronous (command.go): the call answers "started" at
// once and opens a subscription; the kit's goroutine for the call waits on
// the process, sends its new output as view_updates (ViewType; with watch
// also as batched associative events), and ends with one associative
// final event (status, duration, output tail, log path). The runtime holds
// nothing for the thread meanwhile. A cancelled call kills the process
// group and sends nothing; a timeout kills it and is reported. Commands
// run in the sandbox directory with an allow-listed environment (package
// procenv), in a bubblewrap jail where one works (jail.go). Running
// commands have records under Root/.agentslice, so the next start of the
// server reports the ones that died with it (recover.go: Server.Start).
//
// A command that asks for the network or to write outside its sandbox
// asks the person first (permission.go: a user_choice, allow once, allow
// always for the thread, or refuse; a refusal is the call's result), unless
// the thread's agent's network access (Config.NetworkFor) decides. One
// server may serve several repositories (repos.go: Repos, NewReposServer);
// each thread works in the one it is bound to, or its parent's.
//
// The built-in coding agent's instructions (coder.go, coder.md) live here
// too, with the repository's conventions (AGENTS.md, CLAUDE.md,
// .cursor/rules) appended from HEAD.
//
// Errors: a tool's failure is an "error: ..." result the model reads,
// saying what to do. Manager.Apply and Manager.Squash return
// ErrNothingToApply when there are no changes, and an *ApplyError (the
// reason and the files) when they refuse; the user's state, or the
// parent's sandbox, is then as it was. NewManager fails when Config.Jail
// is JailOn and ProbeJail fails.
//
// Like package tools, this package talks to the runtime only through the
// kit's *rap.Call.
package sandbox
