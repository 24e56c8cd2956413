package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentslice/agentslice/internal/server"
)

// chattyFigures are what n threads cost while each waits on a command
// with constant output (a build that prints all the time): the slices
// their threads ran, the history items and versions they gained, the
// views the event stream told, and the serve process's CPU, over a window.
type chattyFigures struct {
	Threads      int     `json:"chatty_threads"`
	Every        string  `json:"chatty_output_every"`
	WindowS      float64 `json:"chatty_window_s"`
	Slices       int64   `json:"chatty_slices"`
	Items        int     `json:"chatty_items_added"`
	Versions     int64   `json:"chatty_versions_added"`
	Views        int64   `json:"chatty_views_told"`
	CPUPerSecond float64 `json:"chatty_cpu_ms_per_s"`
}

// chattyThreads starts serve with the sandbox and the scripted model, has
// n threads each start a command that prints a line every 10 ms until a
// file appears, waits until all are idle, then watches every thread's
// events for window.
func chattyThreads(ctx context.Context, tmp, repo string, n int, every, window time.Duration) (chattyFigures, error) {
	f := chattyFigures{Threads: n, Every: every.String()}
	dir := filepath.Join(tmp, "chatty")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return f, err
	}
	release := filepath.Join(dir, "release")
	steps := `{"default": [
	  {"text": "Building.", "tool_call": {"name": "run_command", "args": {"command": "i=0; while [ ! -f ` + release + ` ]; do i=$((i+1)); echo line $i; sleep 0.01; done"}}},
	  {"text": "The build runs; waiting."}, {"text": "Done."}, {"text": "Done."}]}`
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(steps), 0o644); err != nil {
		return f, err
	}
	cfg := server.Config{Listen: "127.0.0.1:0", Store: "memory", Script: script,
		Sandbox: &server.Sandbox{Repo: repo, Root: filepath.Join(dir, "threads"), Jail: "off", OutputEvery: every.String()}}
	srv, err := server.New(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "" }})
	if err != nil {
		return f, err
	}
	if err := srv.Start(ctx); err != nil {
		return f, err
	}
	defer srv.Stop()
	defer os.WriteFile(release, nil, 0o644)
	thread := func(i int) string { return "chatty" + strconv.Itoa(i) }
	for i := range n {
		resp, err := http.Post(srv.URL()+"/threads/"+thread(i)+"/messages", "application/json", strings.NewReader(`{"text":"Build it."}`))
		if err != nil {
			return f, err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return f, fmt.Errorf("POST message: %s", resp.Status)
		}
	}
	// Every thread ended its turn ("The build runs; waiting.") while its
	// command runs.
	deadline := time.Now().Add(10 * time.Minute)
	for i := 0; i < n; {
		items, _, status, err := threadSize(srv.URL(), thread(i))
		if err != nil {
			return f, err
		}
		if items >= 3 && status == "watching" && srv.SandboxRunning() >= i+1 { // the command is a subscription
			i++
			continue
		}
		if time.Now().After(deadline) {
			return f, fmt.Errorf("thread %s did not start its command in 10 minutes", thread(i))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * every) // views in flight arrive
	<-srv.System().Idle()

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var slices, views atomic.Int64
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, srv.URL()+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return f, err
	}
	defer resp.Body.Close()
	go func() { // ends with the stream (cancel)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct{ ID, Kind string }
			if json.Unmarshal([]byte(data), &ev) != nil {
				continue
			}
			switch {
			case ev.Kind == "state" && strings.HasSuffix(ev.ID, ".run"): // a slice started (server/hitl.go)
				slices.Add(1)
			case ev.Kind == "view":
				views.Add(1)
			}
		}
	}()
	items0, v0, err := totals(srv.URL(), n, thread)
	if err != nil {
		return f, err
	}
	cpu0, start := cpuTime(), time.Now()
	time.Sleep(window)
	cpu, took := cpuTime()-cpu0, time.Since(start)
	items1, v1, err := totals(srv.URL(), n, thread)
	if err != nil {
		return f, err
	}
	f.WindowS = took.Seconds()
	f.Slices, f.Views = slices.Load(), views.Load()
	f.Items, f.Versions = items1-items0, v1-v0
	f.CPUPerSecond = float64(cpu.Milliseconds()) / took.Seconds()
	return f, nil
}

func totals(base string, n int, thread func(int) string) (items int, versions int64, err error) {
	for i := range n {
		it, v, _, err := threadSize(base, thread(i))
		if err != nil {
			return 0, 0, err
		}
		items, versions = items+it, versions+v
	}
	return items, versions, nil
}

// threadSize is a thread's item count, version and status (GET
// /threads/{id}); nothing for a thread not written yet.
func threadSize(base, thread string) (int, int64, string, error) {
	resp, err := http.Get(base + "/threads/" + thread)
	if err != nil {
		return 0, 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return 0, 0, "", nil
	}
	var th struct {
		Status string `json:"status"`
		Total  int    `json:"total"`
		State  struct {
			Version int64 `json:"version"`
		} `json:"state"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&th); err != nil {
		return 0, 0, "", fmt.Errorf("GET thread %s: %w", thread, err)
	}
	return th.Total, th.State.Version, th.Status, nil
}

// cpuTime is the CPU time (user and system) of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
