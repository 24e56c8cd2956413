package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/otelx"
	"github.com/agentslice/agentslice/internal/server"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// serveFlags are the flags of `agentslice serve`; each set flag overrides
// the configuration file (a repeated flag replaces the file's whole list).
type serveFlags struct {
	fs                                                 *flag.FlagSet
	config, listen, publicURL, model, script, logLevel string
	getTime                                            bool
	data, store, dsn                                   string
	memoryLimit, sandboxRepo                           string
	toolServers, allowCommands, mcpServers             listFlag
}

func newServeFlags(stderr io.Writer) *serveFlags {
	f := &serveFlags{fs: flag.NewFlagSet("serve", flag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(stderr)
	fs.StringVar(&f.config, "config", "", "JSON configuration `file` (flags override it)")
	fs.StringVar(&f.listen, "listen", "", "`address` to serve on (default "+server.DefaultListen+")")
	fs.StringVar(&f.publicURL, "public-url", "", "base `URL` tools reach this server at (default http://<listen address>)")
	fs.StringVar(&f.model, "model", "", "`name` of the model in the configuration's catalog")
	fs.StringVar(&f.script, "script", "", "run the scripted model playing this JSON script `file`")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error (default info)")
	fs.StringVar(&f.data, "data", "", "data `directory` of the sqlite store (default $"+server.DataDirEnv+", else $XDG_DATA_HOME/agentslice, else ~/.local/share/agentslice)")
	fs.StringVar(&f.store, "store", "", "where threads live: sqlite (default, durable under -data), memory (lost at exit) or postgres (with -dsn)")
	fs.StringVar(&f.dsn, "dsn", "", "postgres://… `URL`: keep history in PostgreSQL through the DSQL store (implies -store postgres)")
	fs.BoolVar(&f.getTime, "get-time", false, "serve the example get_time tool in-process")
	fs.StringVar(&f.memoryLimit, "memory-limit", "auto", "soft memory `limit` of the process: auto (GOMEMLIMIT if set, else 3/4 of the cgroup's or the machine's memory), off, or a size such as 4GiB")
	fs.StringVar(&f.sandboxRepo, "sandbox-repo", "", "serve the sandbox toolset in-process: a git worktree of this `repository` per thread (docs/sandbox.md)")
	fs.Var(&f.toolServers, "tool-server", "base `URL` of a RAP tool server (repeatable)")
	fs.Var(&f.allowCommands, "allow-command", "serve the example run_command tool, allowed to run this `program` (repeatable)")
	fs.Var(&f.mcpServers, "mcp", "proxy an MCP server: `name=command args...` (stdio) or name=http(s)://url (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentslice serve [flags]\n\nRuns the embedded agent runtime with an HTTP API (see docs/serve.md).\n"+
			"Callback keys come from "+server.CallbackKeysEnv+" or the file's callback_keys; without them a random key is generated.\n\nflags:")
		fs.PrintDefaults()
	}
	return f
}

// apply loads the file (if any) and overlays the flags that were set.
func (f *serveFlags) apply() (server.Config, error) {
	var cfg server.Config
	if f.config != "" {
		var err error
		if cfg, err = server.LoadConfig(f.config); err != nil {
			return cfg, err
		}
	}
	var err error
	f.fs.Visit(func(fl *flag.Flag) {
		if err != nil {
			return
		}
		switch fl.Name {
		case "listen":
			cfg.Listen = f.listen
		case "public-url":
			cfg.PublicURL = f.publicURL
		case "model":
			cfg.Model, cfg.Script = f.model, ""
		case "script":
			cfg.Script, cfg.Model, cfg.Models = f.script, "", nil
		case "log-level":
			cfg.LogLevel = f.logLevel
		case "data":
			cfg.Data = f.data
		case "store":
			cfg.Store = f.store
		case "dsn":
			cfg.DSN = f.dsn
		case "get-time":
			if cfg.ExampleTools == nil {
				cfg.ExampleTools = &server.ExampleTools{}
			}
			cfg.ExampleTools.GetTime = f.getTime
		case "sandbox-repo":
			if cfg.Sandbox == nil {
				cfg.Sandbox = &server.Sandbox{}
			}
			cfg.Sandbox.Repo = f.sandboxRepo
		case "tool-server":
			cfg.ToolServers = f.toolServers
		case "allow-command":
			if cfg.ExampleTools == nil {
				cfg.ExampleTools = &server.ExampleTools{}
			}
			rc := cfg.ExampleTools.RunCommand
			if rc == nil {
				rc = &server.RunCommand{}
			}
			rc.Allow = f.allowCommands
			cfg.ExampleTools.RunCommand = rc
		case "mcp":
			cfg.MCPServers = nil
			for _, v := range f.mcpServers {
				m, e := parseMCPFlag(v)
				if e != nil {
					err = e
					return
				}
				cfg.MCPServers = append(cfg.MCPServers, m)
			}
		}
	})
	return cfg, err
}

// flagFields maps each flag to the configuration fields it sets.
var flagFields = map[string][]string{
	"listen": {"listen"}, "public-url": {"public_url"}, "model": {"model"}, "script": {"script"},
	"log-level": {"log_level"}, "tool-server": {"tool_servers"}, "get-time": {"example_tools"},
	"allow-command": {"example_tools.run_command"}, "mcp": {"mcp_servers"},
	"data": {"data"}, "store": {"store"}, "dsn": {"dsn"}, "sandbox-repo": {"sandbox.repo"},
}

// attribute says where a configuration error's value came from: a flag
// that was set, else the file.
func (f *serveFlags) attribute(err error) error {
	var ce *server.ConfigError
	if !errors.As(err, &ce) || ce.Source != "" {
		return err
	}
	f.fs.Visit(func(fl *flag.Flag) {
		for _, field := range flagFields[fl.Name] {
			if ce.Source == "" && ce.Field != "" && (ce.Field == field || strings.HasPrefix(ce.Field, field+".") || strings.HasPrefix(ce.Field, field+"[")) {
				ce.Source = "from flag -" + fl.Name
			}
		}
	})
	if ce.Source == "" && f.config != "" && ce.Field != server.CallbackKeysEnv {
		ce.Source = f.config
	}
	return err
}

// parseMCPFlag reads "name=command args..." or "name=http(s)://url".
func parseMCPFlag(v string) (server.MCPServer, error) {
	name, rest, ok := strings.Cut(v, "=")
	rest = strings.TrimSpace(rest)
	if !ok || name == "" || rest == "" {
		return server.MCPServer{}, fmt.Errorf("flag -mcp %q: want name=command args... or name=http(s)://url", v)
	}
	if strings.HasPrefix(rest, "http://") || strings.HasPrefix(rest, "https://") {
		return server.MCPServer{Name: name, URL: rest}, nil
	}
	return server.MCPServer{Name: name, Command: strings.Fields(rest)}, nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newServeFlags(stderr)
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if f.fs.NArg() > 0 {
		return usagef("unexpected argument %q (serve takes only flags; see -h)", f.fs.Arg(0))
	}
	cfg, err := f.apply()
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return f.attribute(err)
	}
	level := new(slog.LevelVar)
	level.Set(cfg.LogLevelValue())
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// Before the system starts: its heap floor is capped by the limit.
	limit, source, err := applyMemoryLimit(f.memoryLimit, osMemorySources)
	if err != nil {
		return err
	}
	logger.Info("agentslice serve: memory limit", "bytes", limit, "source", source)
	// Tracing is off unless the OTEL_* environment turns it on
	// (docs/observability.md).
	tracing, err := otelx.Setup(ctx, "agentslice-serve", os.Getenv)
	if err != nil {
		return err
	}
	if tracing != nil {
		tracing.SetGlobal()
		logger.Info("agentslice serve: tracing on (OpenTelemetry, from OTEL_* variables)")
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := tracing.Shutdown(sctx); err != nil {
				logger.Warn("agentslice serve: flushing traces", "error", err)
			}
		}()
	}
	srv, err := server.New(ctx, cfg, server.Options{Logger: logger, Getenv: os.Getenv, Tracer: tracing.Tracer()})
	if err != nil {
		return f.attribute(err)
	}
	if err := srv.Start(ctx); err != nil {
		return f.attribute(err) // a sandbox.repo that is no repository is found only here
	}
	if dir, ok := daemonDir(cfg); ok { // the command line finds this server through it (daemon.go)
		if err := writeDaemonFile(dir, daemonInfo{PID: os.Getpid(), URL: srv.URL()}); err != nil {
			srv.Stop()
			return err
		}
		defer removeDaemonFile(dir, os.Getpid()) // after Stop released the directory
	}
	fmt.Fprintf(stdout, "agentslice serve: listening on %s\n", srv.URL())
	select {
	case <-ctx.Done():
		logger.Info("agentslice serve: shutting down")
		srv.Stop()
		return nil
	case err := <-srv.Err():
		srv.Stop()
		return err
	}
}
