// Command agentslice is the command line of agentslice:
//
//	agentslice serve    run the embedded runtime with an HTTP API
//	agentslice code     the terminal UI of the coding agent on a repository; chat: of any agent
//	agentslice daemon   start, stop or find the local serve of a data directory
//	agentslice threads  list a serve's threads
//	agentslice send     send a message to a thread of a serve, or of a deployed queue (-queue-url)
//	agentslice tail     follow a thread of a serve, or a deployment's output queue (-queue-url)
//	agentslice history  print a serve's thread
//	agentslice fork     fork a serve's thread at a position of its history
//	agentslice replay   replay a thread's user messages on another model (JSON lines)
//	agentslice choose   answer the choice a thread waits for, on a serve or a deployment (-queue-url)
//	agentslice stop     stop a serve's thread; close: stop it and close it for good
//	agentslice dead-letters  list, redrive or discard a running serve's dead letters
//	agentslice migrate  create or upgrade the DSQL/PostgreSQL schema
//	agentslice cost     what a workload costs on AWS, against agents kept in memory
//	agentslice version  print what this binary was built from
//
// Each subcommand reads its flags (and, where it says so, a config file or
// the environment), validates them, and fails with a message naming what is
// wrong. The exit code says what kind of failure it was (exit.go): 2 for
// usage, 3 for a thread that does not exist, 4 for a state that refuses
// the request, and so on.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "run the embedded runtime with an HTTP API", runServe},
		{"daemon", "start, stop or find the local serve daemon of a data directory", runDaemon},
		{"code", "the terminal UI of the coding agent on a repository (review, apply, discard: its changes)", runCode},
		{"chat", "the terminal UI for any agent's thread, without a repository", runChat},
		{"threads", "list the threads of a serve, with status, agent and last activity", runThreads},
		{"send", "send a message to a thread of a serve (or, with -queue-url, a deployment's queue)", runSend},
		{"tail", "follow a thread's events on a serve (or, with -queue-url, a deployment's output queue)", runTail},
		{"history", "print a thread's status and history on a serve", runHistory},
		{"timeline", "print where a thread's time went (generating, waiting on tools and people, queued)", runTimeline},
		{"stats", "print where the time goes over every thread of a serve, by agent or by tool", runStats},
		{"fork", "fork a thread of a serve at a position of its history, on another agent, model or message", runFork},
		{"replay", "replay a finished thread's user messages on another model, printing old and new replies as JSON lines", runReplay},
		{"choose", "answer the choice a thread waits for (on a serve; with -queue-url, a deployment)", runChoose},
		{"stop", "stop what a thread of a serve is doing (the completion and the pending call)", runStop},
		{"close", "stop a thread of a serve and close it for good", runClose},
		{"dead-letters", "list, redrive or discard the dead letters of a running serve", runDeadLetters},
		{"rap", "check a RAP tool server against the specification (rap check URL)", runRap},
		{"sandbox", "serve the sandbox toolset (a git worktree per thread) of a repository as a standalone RAP server", runSandbox},
		{"migrate", "create or upgrade the history schema (DSQL or PostgreSQL)", runMigrate},
		{"cost", "what a workload costs on the AWS deployment, against agents kept in memory", runCost},
		{"version", "print the version, VCS revision and Go version of this binary", runVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: agentslice <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'agentslice <command> -h' for a command's flags.")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-version" || args[0] == "--version") {
		args = []string{"version"}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
				fmt.Fprintf(stderr, "agentslice %s: %v\n", c.name, err)
				return exitCode(err)
			}
			return 0
		}
	}
	fmt.Fprintf(stderr, "agentslice: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}
