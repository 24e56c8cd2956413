package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/procenv"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/sandbox"
)

// runSandbox serves the sandbox toolset of one repository as a standalone
// RAP server (docs/sandbox.md), for a runtime that is not on the machine
// with the repository. serve mounts the same toolset in-process with
// -sandbox-repo.
func runSandbox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	repo := fs.String("repo", "", "the git `repository` the sandboxes are made from (required; its working copy is never written)")
	root := fs.String("root", "", "`directory` of the sandboxes' worktrees (default: under the user's cache directory)")
	listen := fs.String("listen", "127.0.0.1:9100", "loopback `address` to serve on")
	publicURL := fs.String("public-url", "", "base `URL` the runtime reaches this server at (default http://<listen address>)")
	timeout := fs.Duration("timeout", 20*time.Minute, "kill a run_command that runs longer")
	outputEvery := fs.Duration("output-every", sandbox.DefaultBatch, "how often a running command's new output is sent as a view_update (serve's sandbox.output_every)")
	apply := fs.String("apply", "", "instead of serving: commit this `thread`'s sandbox changes onto your current branch and update your working copy for the files they touch")
	discard := fs.String("discard", "", "instead of serving: remove this `thread`'s sandbox (worktree, branch, refs); its changes are lost")
	message := fs.String("message", "", "with -apply: the commit's message (default \"agentslice: changes of thread THREAD\")")
	network := fs.String("network", "ask", "the most a command that asks for the network gets: `ask` the person (a user_choice), allow, or deny; each thread's agent's own network policy, which agentslice's runtime sends with each call, applies within it")
	var pass listFlag
	fs.Var(&pass, "pass-env", "a variable `name` (or prefix*) commands get besides PATH, HOME, LANG... (repeatable; never AGENTSLICE_*)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentslice sandbox -repo PATH [flags]\n       agentslice sandbox -repo PATH -apply THREAD [-message TEXT]\n       agentslice sandbox -repo PATH -discard THREAD\n\n"+
			"Serves the sandbox toolset: a git worktree per thread, on branch agentslice/<thread> (see docs/sandbox.md).\n"+
			"With -apply, brings one thread's changes onto your current branch instead; with -discard, removes its sandbox.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (sandbox takes only flags; see -h)", fs.Arg(0))
	}
	if *repo == "" {
		return errors.New("-repo: missing (the git repository the sandboxes are made from)")
	}
	for _, n := range pass {
		if err := procenv.CheckName(n); err != nil {
			return fmt.Errorf("-pass-env: %v", err)
		}
	}
	if *apply != "" || *discard != "" {
		mgr, err := sandbox.NewManager(sandbox.Config{Repo: *repo, Root: *root})
		if err != nil {
			return err
		}
		if *discard != "" {
			if err := mgr.Discard(ctx, *discard); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "discarded the sandbox of thread %s\n", *discard)
			return nil
		}
		done, err := mgr.Apply(ctx, *apply, *message)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "applied thread %s as %s: %s\n", *apply, done.Commit, strings.Join(done.Files, ", "))
		return nil
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("-listen %q: not a host:port address", *listen)
	}
	// The runtime does not authenticate to tool servers yet, and these
	// tools run commands: only what runs on this machine may reach them
	// (a tunnel brings a remote runtime here).
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-listen %q: the sandbox server listens on loopback only (it runs commands and takes unauthenticated invocations); reach it through a tunnel", *listen)
	}
	access := sandbox.Access(*network)
	if !sandbox.ValidAccess(access) || access == "" {
		return usagef("-network %q: want ask, allow or deny", *network)
	}
	if *outputEvery <= 0 {
		return usagef("-output-every %s: want a positive duration", *outputEvery)
	}
	mgr, err := sandbox.NewManager(sandbox.Config{Repo: *repo, Root: *root, Timeout: *timeout, Batch: *outputEvery, Env: procenv.Build(os.Environ(), pass, nil),
		MaxNetwork: access})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", *listen, err)
	}
	base := strings.TrimRight(*publicURL, "/")
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := sandbox.NewServer(mgr, rap.ServerConfig{PublicURL: base, Logger: logger})
	if err != nil {
		ln.Close()
		return err
	}
	if err := srv.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }() // owned by this function: waited for below
	fmt.Fprintf(stdout, "agentslice sandbox: serving %s at %s\n", mgr.Repo(), base)
	logger.Info("agentslice sandbox: ready", "repo", mgr.Repo(), "root", mgr.Root(), "url", base)
	if jailed, why := mgr.Jailed(); jailed {
		logger.Info("agentslice sandbox: commands run in a bubblewrap jail (read-only system, writable sandbox, private /tmp, no network unless allowed)", "network", access)
	} else {
		logger.Warn("agentslice sandbox: commands run UNJAILED, as this user: they can write outside their sandbox and use the network (docs/sandbox.md)", "why", why)
	}
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		err = <-served
	case err = <-served:
	}
	srv.Stop()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
