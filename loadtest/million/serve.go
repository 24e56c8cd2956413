package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// serveProc is one `agentslice serve` child process.
type serveProc struct {
	cmd     *exec.Cmd
	url     string
	started time.Time
	ready   time.Duration // from exec to the first 200 from /readyz
	done    chan struct{}
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 { // keep the tail
		s.b.Reset()
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// buildServe builds cmd/agentslice into dir.
func buildServe(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "agentslice")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/agentslice")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/agentslice: %v: %s", err, out)
	}
	return bin, nil
}

// serveConfig writes serve's configuration for a run: the simulated
// model, the store, an event buffer deep enough for the harness's one
// stream of replies, and a freezer that drops woken threads soon.
func serveConfig(dir, store, data string) (string, error) {
	return serveConfigLogging(dir, store, data, "warn", "serve-"+store+".json")
}

func serveConfigLogging(dir, store, data, level, name string) (string, error) {
	cfg := map[string]any{
		"listen":    "127.0.0.1:0",
		"store":     store,
		"log_level": level,
		"limits":    map[string]any{"event_buffer": 1 << 16},
		"freeze":    map[string]any{"every": "10s", "idle": "20s"},
	}
	if store == "sqlite" {
		cfg["data"] = data
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, b, 0o600)
}

// startServe starts serve and waits until /readyz answers 200.
func startServe(ctx context.Context, bin, config string, env []string) (*serveProc, error) {
	cmd := exec.Command(bin, "serve", "-config", config)
	cmd.Env = append(os.Environ(), env...)
	logs := &syncBuffer{}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &serveProc{cmd: cmd, done: make(chan struct{}), logs: logs}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := make(chan string, 1)
	go func() { // ends when the child's stdout closes
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r)
	}()
	go func() { // reaps the child
		_ = cmd.Wait()
		close(p.done)
	}()
	select {
	case line := <-lines:
		u, ok := strings.CutPrefix(strings.TrimSpace(line), "agentslice serve: listening on ")
		if !ok {
			p.kill()
			return nil, fmt.Errorf("serve printed %q; its log: %s", line, tail(logs.String()))
		}
		p.url = u
	case <-time.After(10 * time.Minute):
		p.kill()
		return nil, fmt.Errorf("serve did not start in 10 minutes; its log: %s", tail(logs.String()))
	}
	for {
		resp, err := http.Get(p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				p.ready = time.Since(p.started)
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("serve exited; its log: %s", tail(logs.String()))
		case <-ctx.Done():
			p.kill()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *serveProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks serve to shut down (SIGTERM) and waits.
func (p *serveProc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Minute):
		p.kill()
		return errors.New("serve did not stop in 5 minutes after SIGTERM; killed")
	}
}

// rss is the child's resident set size.
func (p *serveProc) rss() int64 { return pidRSS(p.cmd.Process.Pid) }

func pidRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return -1
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func selfRSS() int64 { return pidRSS(os.Getpid()) }

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// dirBytes sums the sizes of the files under dir.
func dirBytes(dir string, match func(name string) bool) int64 {
	var n int64
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && match(info.Name()) {
			n += info.Size()
		}
		return nil
	})
	return n
}
