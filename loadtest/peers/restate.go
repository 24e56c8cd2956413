package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// restatePeer runs restate-server (the single-node default: all roles,
// its RocksDB-backed log with WAL fsync on, as shipped) and one Node worker
// (restate.js) registered as its deployment.
type restatePeer struct {
	dir               string // loadtest/peers
	base              string // the server's base dir
	ingress, admin    string
	server, worker    *child
	http              *http.Client
	serverVer, sdkVer string
}

func (r *restatePeer) name() string { return "restate" }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func freePorts(n int) ([]int, error) {
	var ps []int
	for range n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func (r *restatePeer) start(ctx context.Context, cb *callbacks, workDir string) error {
	bin := filepath.Join(r.dir, "node_modules/@restatedev/restate-server-linux-x64/bin/restate-server")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("restate-server binary missing (%w); run scripts/peers-deps.sh", err)
	}
	r.serverVer = npmVersion(r.dir, "@restatedev/restate-server")
	r.sdkVer = npmVersion(r.dir, "@restatedev/restate-sdk")
	ps, err := freePorts(4)
	if err != nil {
		return err
	}
	r.base = filepath.Join(workDir, "restate")
	r.ingress = fmt.Sprintf("http://127.0.0.1:%d", ps[0])
	r.admin = fmt.Sprintf("http://127.0.0.1:%d", ps[1])
	r.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: time.Minute}
	env := []string{
		"RESTATE_BASE_DIR=" + r.base,
		"RESTATE_NODE_NAME=peers",
		"RESTATE_LISTEN_MODE=tcp",
		"RESTATE_DISABLE_TELEMETRY=true",
		fmt.Sprintf("RESTATE_INGRESS__BIND_ADDRESS=127.0.0.1:%d", ps[0]),
		fmt.Sprintf("RESTATE_ADMIN__BIND_ADDRESS=127.0.0.1:%d", ps[1]),
		fmt.Sprintf("RESTATE_BIND_ADDRESS=127.0.0.1:%d", ps[2]),
		"RESTATE_LOG_FILTER=warn",
	}
	if r.server, err = startChild("restate-server", r.dir, workDir, env, bin, "--no-logo"); err != nil {
		return err
	}
	if err := waitHTTP(ctx, r.admin+"/health", r.server, time.Minute); err != nil {
		return err
	}
	if err := waitHTTP(ctx, r.ingress+"/restate/health", r.server, time.Minute); err != nil {
		return err
	}
	workerEnv := []string{"PEERS_HARNESS_URL=" + cb.url, "PORT=" + strconv.Itoa(ps[3])}
	if r.worker, err = startChild("restate-worker", r.dir, workDir, workerEnv, "node", "restate.js"); err != nil {
		return err
	}
	// Register the worker as a deployment (the admin API's documented call).
	body, _ := json.Marshal(map[string]any{"uri": fmt.Sprintf("http://127.0.0.1:%d", ps[3])})
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := r.http.Post(r.admin+"/deployments", "application/json", bytes.NewReader(body))
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode/100 == 2 {
				break
			}
			err = fmt.Errorf("register deployment: %s: %s", res.Status, b)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (worker log: %s)", err, r.worker.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

func (r *restatePeer) pids() []int {
	return withDescendants([]int{r.server.cmd.Process.Pid, r.worker.cmd.Process.Pid})
}

func (r *restatePeer) begin(context.Context, string, int) error { return nil }

func (r *restatePeer) user(ctx context.Context, agent string, turn int) error {
	// One-way call (/send): the ingress answers once the invocation is durable.
	return post(ctx, r.http, fmt.Sprintf("%s/agent/%s/turn/send", r.ingress, agent), map[string]any{"turn": turn})
}

func (r *restatePeer) toolResult(ctx context.Context, agent string, turn int, id string) error {
	return post(ctx, r.http, fmt.Sprintf("%s/restate/awakeables/%s/resolve", r.ingress, id), map[string]any{"text": resultText})
}

func (r *restatePeer) diskBytes(context.Context) (int64, error) { return dirBytes(r.base), nil }

func (r *restatePeer) settings() map[string]string {
	return map[string]string{
		"restate_server": r.serverVer, "restate_sdk": r.sdkVer,
		"durability": "single node defaults: replicated loglet on the local log-server, RocksDB WAL fsync on (rocksdb-disable-wal-fsync=false), 24 partitions",
		"workers":    "1 Node.js worker process (one event loop); restate-server's own threads",
		"state":      "virtual object per agent, history in its K/V state (set once per turn), completions in ctx.run, tool result an awakeable resolved through the ingress",
	}
}

func (r *restatePeer) stop() {
	r.worker.stop()
	r.server.stop()
}

// resultText is the ~350-byte tool result the harness sends every peer.
var resultText = func() string {
	s := "running 148 tests across 12 crates\ntest result: ok. 145 passed; 3 failed; 0 ignored; finished in 4.21s\n" +
		"failures:\n    parser::tests::handles_nested_blocks\n    storage::tests::compaction_keeps_order\n"
	for len(s) < 350 {
		s += "."
	}
	return s
}()

func post(ctx context.Context, c *http.Client, url string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("content-type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(res.Body, 2000))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %s", url, res.Status, bytes.TrimSpace(rb))
	}
	return nil
}

// waitHTTP polls url until it answers 2xx, the child dies, or timeout.
func waitHTTP(ctx context.Context, url string, c *child, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		res, err := http.Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode/100 == 2 {
				return nil
			}
		}
		select {
		case err := <-c.exit:
			c.exit <- err
			return fmt.Errorf("%s exited (%v) before %s answered: %s", c.name, err, url, c.tail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer %s within %s: %s", c.name, url, timeout, c.tail())
		}
	}
}

// npmVersion is the installed version of an npm package under dir.
func npmVersion(dir, pkg string) string {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	if err != nil {
		return "missing"
	}
	var v struct{ Version string }
	json.Unmarshal(b, &v)
	return v.Version
}
