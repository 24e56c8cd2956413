package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// cloudflarePeer runs the Cloudflare Agents SDK worker (cloudflare.js) on
// workerd, the open-source runtime of Cloudflare Workers, one process:
// esbuild bundles the worker (the SDK, the prose generator and the word
// list as text) and workerd serves it from a generated config with a
// Durable Object namespace whose storage is SQLite on local disk, one
// database per agent.
type cloudflarePeer struct {
	dir        string // loadtest/peers
	base       string // the Durable Objects' storage directory
	url        string
	server     *child
	http       *http.Client
	workerdVer string
	agentsVer  string
}

func (c *cloudflarePeer) name() string { return "cloudflare" }

// esbuildArgs bundle cloudflare.js for workerd: ES module output, the
// workerd export conditions, cloudflare:workers left to the runtime, bare
// Node built-ins mapped to workerd's node: modules, and cloudflare:email
// (supplied by wrangler, not by workerd run alone) to a stub.
func esbuildArgs(out string) []string {
	args := []string{"cloudflare.js", "--bundle", "--format=esm", "--platform=neutral",
		"--conditions=workerd,worker,browser", "--main-fields=module,main",
		"--external:cloudflare:workers", "--external:node:*",
		"--alias:cloudflare:email=./cloudflare_email_stub.js", "--loader:.txt=text",
		"--log-level=warning", "--outfile=" + out}
	for _, m := range []string{"assert", "async_hooks", "buffer", "child_process", "crypto", "events", "fs", "http", "https",
		"net", "os", "path", "process", "querystring", "stream", "string_decoder", "tls", "url", "util", "zlib"} {
		args = append(args, "--alias:"+m+"=node:"+m)
	}
	return args
}

// workerdConfig is the workerd config (Cap'n Proto text) for the bundled
// worker: one HTTP socket, outbound fetches only to this machine (the
// harness's callbacks), the Durable Objects on local disk.
func workerdConfig(addr, harness, storage string) string {
	return fmt.Sprintf(`using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .peerWorker),
    (name = "harness", network = (allow = ["private", "local"])),
    (name = "do-disk", disk = (path = %q, writable = true)),
  ],
  sockets = [ (name = "http", address = %q, http = (), service = "main") ],
);

const peerWorker :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  compatibilityDate = "2026-11-01",
  bindings = [
    (name = "PEERS_HARNESS_URL", text = %q),
    (name = "PeerAgent", durableObjectNamespace = "PeerAgent"),
  ],
  durableObjectNamespaces = [ (className = "PeerAgent", uniqueKey = "peer-agent", enableSql = true) ],
  durableObjectStorage = (localDisk = "do-disk"),
  globalOutbound = "harness",
);
`, storage, addr, harness)
}

func (c *cloudflarePeer) start(ctx context.Context, cb *callbacks, workDir string) error {
	workerd := filepath.Join(c.dir, "node_modules/.bin/workerd")
	esbuild := filepath.Join(c.dir, "node_modules/.bin/esbuild")
	for _, bin := range []string{workerd, esbuild} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s missing (%w); run scripts/peers-deps.sh", filepath.Base(bin), err)
		}
	}
	c.workerdVer = npmVersion(c.dir, "workerd")
	c.agentsVer = npmVersion(c.dir, "agents")
	dir := filepath.Join(workDir, "cloudflare")
	c.base = filepath.Join(dir, "durable-objects")
	if err := os.MkdirAll(c.base, 0o755); err != nil {
		return err
	}
	bundle := exec.CommandContext(ctx, esbuild, esbuildArgs(filepath.Join(dir, "worker.js"))...)
	bundle.Dir = c.dir
	if out, err := bundle.CombinedOutput(); err != nil {
		return fmt.Errorf("esbuild: %w: %s", err, strings.TrimSpace(string(out)))
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c.url = "http://" + addr
	cfg := filepath.Join(dir, "config.capnp")
	if err := os.WriteFile(cfg, []byte(workerdConfig(addr, cb.url, c.base)), 0o644); err != nil {
		return err
	}
	c.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: time.Minute}
	if c.server, err = startChild("workerd", dir, workDir, nil, workerd, "serve", cfg, "--experimental"); err != nil {
		return err
	}
	return waitHTTP(ctx, c.url+"/health", c.server, time.Minute)
}

func (c *cloudflarePeer) pids() []int { return withDescendants([]int{c.server.cmd.Process.Pid}) }

// begin: an agent's Durable Object exists from its first request.
func (c *cloudflarePeer) begin(context.Context, string, int) error { return nil }

func (c *cloudflarePeer) user(ctx context.Context, agent string, turn int) error {
	return post(ctx, c.http, fmt.Sprintf("%s/agents/peer-agent/%s/turn", c.url, agent), map[string]any{"turn": turn})
}

func (c *cloudflarePeer) toolResult(ctx context.Context, agent string, turn int, _ string) error {
	return post(ctx, c.http, fmt.Sprintf("%s/agents/peer-agent/%s/result", c.url, agent), map[string]any{"turn": turn, "text": resultText})
}

func (c *cloudflarePeer) diskBytes(context.Context) (int64, error) { return dirBytes(c.base), nil }

func (c *cloudflarePeer) settings() map[string]string {
	return map[string]string{
		"workerd": c.workerdVer, "agents_sdk": c.agentsVer,
		"durability": "workerd's localDisk Durable Object storage as shipped: one SQLite database (WAL) per agent; a response leaves after its writes commit (the output gate); SQLite fsyncs its commits (strace counted about 11 fsync calls per request of an agent new to the run)",
		"workers":    "1 workerd process (its default threads); the worker bundled by esbuild, not wrangler",
		"state":      "an Agent (Durable Object) per agent, the conversation appended to its SQL table one row per message, the tool result an HTTP request to the object routed by routeAgentRequest",
	}
}

func (c *cloudflarePeer) stop() { c.server.stop() }
