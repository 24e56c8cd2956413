package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/rapcheck"
)

// errCheckFailed is returned when a conformance check failed; the report
// says which.
var errCheckFailed = errors.New("the server failed at least one check (see FAIL above)")

// runRap is `agentslice rap SUBCOMMAND`; the one subcommand is check.
func runRap(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "usage: agentslice rap check [flags] URL\n\nChecks a running RAP tool server against the specification (docs/rapkit.md).")
		if len(args) == 0 {
			return errors.New("missing subcommand (check)")
		}
		if args[0] == "-h" || args[0] == "--help" {
			return nil
		}
		return fmt.Errorf("unknown subcommand %q (the one subcommand is check)", args[0])
	}
	return runRapCheck(ctx, args[1:], stdout, stderr)
}

func runRapCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rap check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var probes listFlag
	fs.Var(&probes, "probe", "a call to make as `TOOL=JSON` (arguments), besides the read-only tools that take {} (repeatable)")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for each answer and callback")
	wait := fs.Duration("wait", 0, "keep trying this long to reach a server that was just started")
	host := fs.String("callback-host", "127.0.0.1", "`address` the tool server reaches this checker's callback receiver at")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentslice rap check [flags] URL\n\n"+
			"Exercises the RAP tool server at URL (its base: the toolset is at URL/.well-known/rap-toolset)\n"+
			"against the specification's MUSTs and prints a table; exits 1 if any check FAILs.\n"+
			"It invokes only an unknown operation, arguments a tool's own schema refuses, read-only tools\n"+
			"that take {}, and the -probe calls you name.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("want one URL, got %d arguments", fs.NArg())
	}
	cfg := rapcheck.Config{Base: fs.Arg(0), Timeout: *timeout, Wait: *wait, CallbackHost: *host, Probes: map[string]json.RawMessage{}}
	for _, p := range probes {
		name, raw, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return fmt.Errorf("-probe %q: want TOOL=JSON, e.g. get_time={\"timezone\":\"UTC\"}", p)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
			return fmt.Errorf("-probe %s: the arguments must be a JSON object, got %q", name, raw)
		}
		cfg.Probes[name] = json.RawMessage(raw)
	}
	rep, err := rapcheck.Run(ctx, cfg)
	if err != nil {
		return err
	}
	rep.Print(stdout)
	if rep.Failed() {
		return errCheckFailed
	}
	return nil
}
