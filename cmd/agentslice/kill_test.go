package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// childEnv, when set in the environment of this test binary, makes it run
// `agentslice` with these arguments (a JSON array) instead of the tests:
// the kill test's server is this binary, started and SIGKILLed as a child.
const childEnv = "AGENTSLICE_TEST_CHILD_ARGS"

func runChild(args string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", childEnv, err)
		return 2
	}
	return run(ctx, argv, os.Stdout, os.Stderr)
}

// child is one serve process.
type child struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	logs *bytes.Buffer
}

// startChild starts serve on dir and waits for its "listening on" line.
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	argv, _ := json.Marshal(args)
	cmd.Env = append(os.Environ(), childEnv+"="+string(argv))
	logs := &bytes.Buffer{}
	cmd.Stderr = &lockedWriter{w: logs}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, done: make(chan struct{}), logs: logs}
	lines := make(chan string, 1)
	go func() { // ends when the child's stdout closes (it exits)
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r)
	}()
	go func() { // reaps the child
		_ = cmd.Wait()
		close(c.done)
	}()
	select {
	case line := <-lines:
		u, ok := strings.CutPrefix(strings.TrimSpace(line), "agentslice serve: listening on ")
		if !ok {
			<-c.done
			t.Fatalf("serve did not start: first line %q; log:\n%s", line, logs.String())
		}
		c.url = u
	case <-time.After(2 * time.Minute):
		c.kill()
		t.Fatalf("serve did not start in time; log:\n%s", logs.String())
	}
	return c
}

func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// killScript: threads kt-0..kt-5 answer in text; kt-6..kt-9 call get_time
// (in-process example tool server), then sleep 0.2 s, then answer, for
// every message.
func killScript(t *testing.T) string {
	var plain, tools []map[string]any
	for i := range 100 {
		plain = append(plain, map[string]any{"text": fmt.Sprintf("answer %d", i)})
	}
	for i := range 40 {
		tools = append(tools,
			map[string]any{"text": "checking the time", "tool_call": map[string]any{"name": "get_time", "args": map[string]any{"timezone": "UTC"}}},
			map[string]any{"text": "waiting a bit", "tool_call": map[string]any{"name": "sleep", "args": map[string]any{"seconds": 0.2}}},
			map[string]any{"text": fmt.Sprintf("done %d", i)})
	}
	script := map[string]any{"default": plain, "threads": map[string]any{}}
	for i := 6; i < 10; i++ {
		script["threads"].(map[string]any)[fmt.Sprintf("kt-%d", i)] = tools
	}
	b, _ := json.Marshal(script)
	p := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type threadView struct {
	Status string `json:"status"`
	State  struct {
		Deferred int                  `json:"deferred"`
		Pending  *runtime.PendingCall `json:"pending"`
	} `json:"state"`
	Items []runtime.Item `json:"items"`
}

// TestServeSurvivesKill: serve runs as a child process on a data directory;
// 10 threads get 20 messages each concurrently (4 of them calling a tool
// and sleeping after each message); the server is SIGKILLed at random
// moments and restarted each time. At the end every accepted message was
// consumed exactly once and in order, every tool call has exactly one
// result, every sleep ended, every thread is idle, and GET /threads lists
// them all.
func TestServeSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills server processes")
	}
	const threads, perThread, kills = 10, 20, 4
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	dir := t.TempDir()
	args := []string{"serve", "-listen", "127.0.0.1:0", "-data", dir, "-script", killScript(t), "-get-time", "-log-level", "warn"}

	var mu sync.Mutex
	cur := startChild(t, args...)
	defer func() {
		mu.Lock()
		c := cur
		mu.Unlock()
		c.kill()
		if t.Failed() {
			t.Logf("last server's log:\n%s", c.logs.String())
		}
	}()
	url := func() string {
		mu.Lock()
		defer mu.Unlock()
		return cur.url
	}
	deadline := time.Now().Add(3 * time.Minute)
	client := &http.Client{Timeout: 10 * time.Second}
	var accepted atomic.Int64
	progress := make(chan struct{}, threads*perThread)

	// post sends one message until it is accepted (202), retrying with
	// the same ID across kills.
	post := func(thread, id, text string) error {
		body, _ := json.Marshal(map[string]string{"id": id, "text": text})
		for time.Now().Before(deadline) {
			resp, err := client.Post(url()+"/threads/"+thread+"/messages", "application/json", bytes.NewReader(body))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					accepted.Add(1)
					progress <- struct{}{}
					return nil
				}
				if resp.StatusCode < 500 {
					return fmt.Errorf("POST %s: %d", id, resp.StatusCode)
				}
			}
			waitOrDeadline(time.Millisecond * 20)
		}
		return fmt.Errorf("message %s never accepted", id)
	}
	get := func(thread string) (*threadView, error) {
		resp, err := client.Get(url() + "/threads/" + thread)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d", thread, resp.StatusCode)
		}
		var v threadView
		return &v, json.NewDecoder(resp.Body).Decode(&v)
	}
	// settled polls until the thread consumed want and has nothing going on.
	settled := func(thread string, want []string) (*threadView, error) {
		var last error
		for time.Now().Before(deadline) {
			v, err := get(thread)
			if err == nil && v.Status == "idle" && v.State.Deferred == 0 && v.State.Pending == nil && len(v.Items) > 0 &&
				v.Items[len(v.Items)-1].Kind == runtime.ItemAssistant && containsAll(v.Items, want) {
				return v, nil
			}
			last = err
			waitOrDeadline(20 * time.Millisecond)
		}
		return nil, fmt.Errorf("thread %s did not settle (last error %v)", thread, last)
	}

	sent := make([][]string, threads)
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	for i := range threads {
		thread := fmt.Sprintf("kt-%d", i)
		wg.Add(1)
		go func() { // owned by this test: waited for below
			defer wg.Done()
			for j := range perThread {
				id := fmt.Sprintf("%s-m%02d", thread, j)
				if err := post(thread, id, "message "+id); err != nil {
					errs <- err
					return
				}
				sent[i] = append(sent[i], id)
				if i >= 6 { // tool threads: let the call and the sleep run
					if _, err := settled(thread, sent[i]); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}

	// The killer: after a random number of accepted messages, SIGKILL and
	// restart.
	for k := range kills {
		n := 10 + rng.IntN(30)
		for range n {
			select {
			case <-progress:
			case <-time.After(time.Until(deadline)):
				t.Fatal("load stalled")
			}
		}
		mu.Lock()
		old := cur
		mu.Unlock()
		old.kill()
		t.Logf("kill %d after %d accepted messages", k+1, accepted.Load())
		next := startChild(t, args...)
		mu.Lock()
		cur = next
		mu.Unlock()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// One more restart with everything accepted: recovery alone finishes.
	mu.Lock()
	cur.kill()
	cur = startChild(t, args...)
	mu.Unlock()

	woke, interrupted, toolResults := 0, 0, 0
	for i := range threads {
		thread := fmt.Sprintf("kt-%d", i)
		v, err := settled(thread, sent[i])
		if err != nil {
			t.Fatal(err)
		}
		var inputs []string
		results := map[string]int{}
		for _, it := range v.Items {
			switch it.Kind {
			case runtime.ItemUser:
				inputs = append(inputs, it.Input)
			case runtime.ItemToolResult:
				results[it.CallID]++
			}
		}
		if strings.Join(inputs, ",") != strings.Join(sent[i], ",") {
			t.Errorf("%s consumed %v\nwant exactly once, in order: %v", thread, inputs, sent[i])
		}
		for _, it := range v.Items {
			if it.Kind != runtime.ItemToolCall {
				continue
			}
			if results[it.CallID] != 1 {
				t.Errorf("%s: call %s (%s) has %d results, want 1", thread, it.CallID, it.Name, results[it.CallID])
			}
			if it.Name == "get_time" {
				toolResults++
			}
		}
		for _, it := range v.Items {
			if it.Kind == runtime.ItemToolResult && it.Name == "sleep" {
				if strings.HasPrefix(it.Text, "woke up") {
					woke++
				} else {
					interrupted++
				}
			}
		}
	}
	t.Logf("%d get_time calls answered, %d sleeps woke by their timer, %d ended otherwise", toolResults, woke, interrupted)
	if woke == 0 {
		t.Error("no sleep was woken by its timer")
	}

	resp, err := client.Get(url() + "/threads")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Count int `json:"count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || list.Count != threads {
		t.Fatalf("GET /threads after restarts: %d threads (%v), want %d", list.Count, err, threads)
	}
}

func containsAll(items []runtime.Item, ids []string) bool {
	have := map[string]bool{}
	for _, it := range items {
		if it.Kind == runtime.ItemUser {
			have[it.Input] = true
		}
	}
	for _, id := range ids {
		if !have[id] {
			return false
		}
	}
	return true
}

// waitOrDeadline paces a poll loop (a poll interval, not a sleep standing in
// for a signal: the condition is checked again after it).
func waitOrDeadline(d time.Duration) {
	<-time.After(d)
}
