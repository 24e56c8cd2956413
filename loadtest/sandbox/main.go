// Command sandbox measures the sandbox toolset (internal/rap/sandbox) on a
// generated repository: creating a sandbox (git worktree add from HEAD),
// creating a stacked one (the parent's snapshot commit, then a worktree),
// search (ripgrep and the Go search) over it, and the memory of many coding threads, each
// idle while its command runs, on a real serve with the scripted model.
//
// It prints one line per figure and, last, one JSON line with them all,
// with the machine. Figures depend on the disk and on what else runs; it
// is a benchmark, not a test.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/rap/sandbox"
	"github.com/agentslice/agentslice/internal/server"
	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

type figures struct {
	Machine         string  `json:"machine"`
	Files           int     `json:"files"`
	Jailed          bool    `json:"jailed"`
	CreateMs        float64 `json:"create_ms"`         // median of -boxes sandboxes from HEAD
	StackedMs       float64 `json:"stacked_create_ms"` // median of stacked children (with a dirty parent)
	SearchMs        float64 `json:"search_ms"`         // median of -searches searches with ripgrep (0 without rg)
	SearchGoMs      float64 `json:"search_go_ms"`      // the same with the Go search
	SearchMatches   int     `json:"search_matches"`
	Threads         int     `json:"threads"`
	HeapPerThread   float64 `json:"heap_bytes_per_idle_thread"`
	GoroutinesPer   float64 `json:"goroutines_per_idle_thread"`
	EngineActive    int     `json:"engine_active_threads"`
	RunningCalls    int     `json:"running_calls"`
	ChildProcesses  int     `json:"child_processes"`
	ChildRSSPerKiB  float64 `json:"child_rss_kib_per_thread"`
	IdleWaitSeconds float64 `json:"idle_wait_s"`
}

func main() {
	files := flag.Int("files", 5000, "files in the generated repository")
	boxes := flag.Int("boxes", 10, "sandboxes created (and as many stacked ones)")
	searches := flag.Int("searches", 10, "searches run")
	threads := flag.Int("threads", 100, "coding threads each idle on a running command")
	idleFiles := flag.Int("idle-files", 50, "files in the repository of the idle threads (their memory does not depend on it; their sandboxes' creation does)")
	chatty := flag.Int("chatty", 0, "threads each waiting on a command with constant output, measured over -chatty-for (0: not measured)")
	chattyFor := flag.Duration("chatty-for", 10*time.Second, "the window the chatty threads are measured over")
	chattyEvery := flag.Duration("chatty-every", 100*time.Millisecond, "the chatty commands' output_every (a view per batch)")
	flag.Parse()
	if err := run(*files, *boxes, *searches, *threads, *idleFiles, chattyOpts{*chatty, *chattyFor, *chattyEvery}); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox benchmark:", err)
		os.Exit(1)
	}
}

type chattyOpts struct {
	threads       int
	window, every time.Duration
}

func run(files, boxes, searches, threads, idleFiles int, chatty chattyOpts) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "agentslice-sandbox-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	repo := filepath.Join(tmp, "repo")
	if err := makeRepo(repo, files); err != nil {
		return err
	}
	f := figures{Machine: hostinfo.Machine(), Files: files, Threads: threads}
	m, err := sandbox.NewManager(sandbox.Config{Repo: repo, Root: filepath.Join(tmp, "boxes")})
	if err != nil {
		return err
	}
	f.Jailed, _ = m.Jailed()

	var create, stacked []time.Duration
	for i := range boxes {
		parent := "p" + strconv.Itoa(i)
		start := time.Now()
		sb, err := m.Ensure(ctx, parent, nil)
		if err != nil {
			return err
		}
		create = append(create, time.Since(start))
		if err := os.WriteFile(filepath.Join(sb.Dir, "pkg0", "f0.go"), []byte("package pkg0 // edited\n"), 0o644); err != nil {
			return err
		}
		start = time.Now()
		if _, err := m.Ensure(ctx, "c"+strconv.Itoa(i), []string{parent}); err != nil {
			return err
		}
		stacked = append(stacked, time.Since(start))
	}
	f.CreateMs, f.StackedMs = ms(median(create)), ms(median(stacked))
	fmt.Printf("sandbox creation (worktree of %d files from HEAD): median %.1f ms over %d\n", files, f.CreateMs, boxes)
	fmt.Printf("stacked creation (parent snapshot + worktree): median %.1f ms over %d\n", f.StackedMs, boxes)

	// The search tool's two backends (sandbox.SearchDir): ripgrep when it
	// is on PATH, and the Go search.
	searchOnce := func(rg string) (float64, int, error) {
		var took []time.Duration
		matches := 0
		for range searches {
			start := time.Now()
			out, err := sandbox.SearchDir(ctx, rg, filepath.Join(tmp, "boxes", "p0"), `func F[0-9]*7\(`)
			if err != nil {
				return 0, 0, fmt.Errorf("search: %w", err)
			}
			took = append(took, time.Since(start))
			// Lines shown, plus the cut note's count when the answer was cut.
			matches = strings.Count(out, "\n")
			if i := strings.Index(out, "\n["); i >= 0 {
				fmt.Sscanf(out[i+2:], "%d matches", &matches)
			}
		}
		return ms(median(took)), matches, nil
	}
	if f.SearchGoMs, f.SearchMatches, err = searchOnce(""); err != nil {
		return err
	}
	fmt.Printf("search (the Go search over %d files, %d matches): median %.1f ms over %d\n", files, f.SearchMatches, f.SearchGoMs, searches)
	if rg := sandbox.FindRipgrep(); rg != "" {
		if f.SearchMs, _, err = searchOnce(rg); err != nil {
			return err
		}
		fmt.Printf("search (ripgrep over %d files): median %.1f ms over %d\n", files, f.SearchMs, searches)
	} else {
		fmt.Println("search (ripgrep): rg is not on PATH (scripts/ripgrep.sh installs it)")
	}

	small := filepath.Join(tmp, "small")
	if err := makeRepo(small, idleFiles); err != nil {
		return err
	}
	if err := idleThreads(ctx, tmp, small, threads, &f); err != nil {
		return err
	}
	fmt.Printf("%d threads idle on running commands (a repository of %d files): %.0f heap bytes and %.2f goroutines per thread (serve process), "+
		"%d engine threads active, %d tool calls running, %d child processes (%.0f KiB RSS per thread)\n",
		threads, idleFiles, f.HeapPerThread, f.GoroutinesPer, f.EngineActive, f.RunningCalls, f.ChildProcesses, f.ChildRSSPerKiB)
	var out any = f
	if chatty.threads > 0 {
		cf, err := chattyThreads(ctx, tmp, small, chatty.threads, chatty.every, chatty.window)
		if err != nil {
			return err
		}
		fmt.Printf("%d threads waiting on commands with constant output (a view every %s): over %.1f s, %d slices, %d history items and %d versions added, "+
			"%d views told, %.1f ms CPU per second (serve process)\n",
			cf.Threads, cf.Every, cf.WindowS, cf.Slices, cf.Items, cf.Versions, cf.Views, cf.CPUPerSecond)
		out = struct {
			figures
			chattyFigures
		}{f, cf}
	}
	fmt.Println("machine:", f.Machine)
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return nil
}

// idleThreads starts serve with the sandbox and the scripted model, has
// n threads each start a command that waits for a file and end their turn,
// and measures the serve process once all are idle.
func idleThreads(ctx context.Context, tmp, repo string, n int, f *figures) error {
	script := filepath.Join(tmp, "script.json")
	release := filepath.Join(tmp, "release")
	steps := `{"default": [
	  {"text": "Building.", "tool_call": {"name": "run_command", "args": {"command": "while [ ! -f ` + release + ` ]; do sleep 1; done"}}},
	  {"text": "The build runs; waiting."}, {"text": "Done."}, {"text": "Done."}]}`
	if err := os.WriteFile(script, []byte(steps), 0o644); err != nil {
		return err
	}
	// The jail's /tmp is private: a jailed command could not see the
	// release file, so this part runs unjailed.
	cfg := server.Config{Listen: "127.0.0.1:0", Store: "memory", Script: script,
		Sandbox: &server.Sandbox{Repo: repo, Root: filepath.Join(tmp, "threads"), Jail: "off", OutputEvery: "1m"}}
	srv, err := server.New(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "" }})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer srv.Stop()
	defer os.WriteFile(release, nil, 0o644)
	heap0, gr0 := heap(), goruntime.NumGoroutine()
	start := time.Now()
	for i := range n {
		body := strings.NewReader(`{"text":"Build it."}`)
		resp, err := http.Post(srv.URL()+"/threads/bench"+strconv.Itoa(i)+"/messages", "application/json", body)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("POST message: %s", resp.Status)
		}
	}
	// Idle: every command runs (its record is written once it started)
	// and the engine has no work. A sandbox is made at the thread's first
	// call, one at a time, so this takes a while.
	records := filepath.Join(cfg.Sandbox.Root, ".agentslice", "commands", "*.json")
	deadline := time.Now().Add(10 * time.Minute)
	for {
		<-srv.System().Idle()
		started, _ := filepath.Glob(records)
		if len(started) >= n && srv.System().Active() == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d commands started after 10 minutes", len(started), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the last started results reach their threads
	<-srv.System().Idle()
	f.IdleWaitSeconds = time.Since(start).Seconds()
	f.HeapPerThread = float64(heap()-heap0) / float64(n)
	f.GoroutinesPer = float64(goruntime.NumGoroutine()-gr0) / float64(n)
	f.EngineActive, f.RunningCalls = srv.System().Active(), kitRunning(srv)
	f.ChildProcesses, f.ChildRSSPerKiB = children()
	f.ChildRSSPerKiB /= float64(n)
	return nil
}

func kitRunning(srv *server.Server) int { return srv.SandboxRunning() }

// children counts this process's descendants and sums their RSS (KiB).
func children() (int, float64) {
	self := os.Getpid()
	parent := map[int]int{}
	rss := map[int]float64{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		fs := strings.Fields(rest)
		if len(fs) < 22 {
			continue
		}
		pp, _ := strconv.Atoi(fs[1])
		pages, _ := strconv.ParseFloat(fs[21], 64)
		parent[pid], rss[pid] = pp, pages*float64(os.Getpagesize())/1024
	}
	n, kib := 0, 0.0
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == self {
				n++
				kib += rss[pid]
				break
			}
		}
	}
	return n, kib
}

func heap() uint64 {
	goruntime.GC()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// makeRepo writes files Go files in 50 packages and commits them.
func makeRepo(dir string, files int) error {
	for i := range files {
		pkg := "pkg" + strconv.Itoa(i%50)
		name := filepath.Join(dir, pkg, "f"+strconv.Itoa(i)+".go")
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		text := fmt.Sprintf("package %s\n\n// F%d is generated.\nfunc F%d(a, b int) int {\n\treturn a*%d + b\n}\n", pkg, i, i, i)
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "--quiet", "-b", "main"}, {"add", "-A"}, {"commit", "--quiet", "-m", "generated"}} {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=bench", "-c", "user.email=bench@localhost"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
