package server

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap/sandbox"
	"github.com/agentslice/agentslice/internal/runtime"
)

// gitRepo makes a repository with one commit.
func gitRepo(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "--quiet", "-b", "main"}, {"add", "-A"}, {"commit", "--quiet", "-m", "first"}} {
		if args[0] == "add" {
			if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitIn(t, repo)(args...)
	}
	return repo
}

// sandboxKit returns serve's sandbox toolset server.
func sandboxKit(t *testing.T, srv *Server) *sandbox.Server {
	t.Helper()
	for _, m := range srv.services {
		if k, ok := m.svc.(*sandbox.Server); ok {
			return k
		}
	}
	t.Fatal("serve has no sandbox toolset")
	return nil
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeSandboxBackgroundCommand: on serve's engine with the scripted
// model, a thread starts a long command and ends its turn; while the
// command runs the thread is idle (no thread of the engine has a
// goroutine, no slice runs: only the tool server's call is running), the
// person sees its output as a view on the event stream, and the final
// event wakes the model once with the exit status, the tail and the log.
func TestServeSandboxBackgroundCommand(t *testing.T) {
	t.Parallel()
	repo, root := gitRepo(t), t.TempDir()
	srv := startServer(t, Config{Script: testdata(t, "sandbox_background_script.json"),
		Sandbox: &Sandbox{Repo: repo, Root: root, OutputEvery: "10ms"}})
	const thread = "thr_build"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Build it."}`)
	// The model's reply ending its turn, and the output's first batch
	// reaching the person as a view, in either order (under load the
	// view may come first).
	for replied, viewed := false, false; !replied || !viewed; {
		ev := events.nextOf(t, "reply", "view")
		if ev.Event == "reply" {
			replied = replied || ev.Data.Text == "The build runs in the background; I will be woken when it ends."
			continue
		}
		var v struct {
			ViewType string              `json:"view_type"`
			Content  sandbox.CommandView `json:"content"`
		}
		if err := json.Unmarshal([]byte(ev.Data.Text), &v); err != nil {
			t.Fatalf("view %q: %v", ev.Data.Text, err)
		}
		viewed = viewed || v.ViewType == sandbox.ViewType && strings.Contains(v.Content.Output, "building\n") && v.Content.State == "running"
	}
	waitIdle(t, srv)
	kit := sandboxKit(t, srv)
	if a, r := srv.System().Active(), kit.Running(); a != 0 || r != 1 {
		t.Fatalf("while the command runs: %d threads with a goroutine (want 0), %d tool calls running (want the command)", a, r)
	}
	th := getThread(t, srv, thread)
	last := len(th.Items) - 1
	for last > 0 && th.Items[last].Kind == runtime.ItemMarker {
		last--
	}
	if th.Status == "waiting_for_tool" || last < 0 || th.Items[last].Kind != runtime.ItemAssistant {
		t.Fatalf("while the command runs the thread is %s: %s", th.Status, kinds(th.Items))
	}
	sb, err := srv.sandbox.Lookup(t.Context(), thread)
	if err != nil || sb == nil {
		t.Fatalf("sandbox: %v %v", sb, err)
	}
	if err := os.WriteFile(filepath.Join(sb.Dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "The build finished."; ev = events.nextOf(t, "reply") {
	}
	waitIdle(t, srv)
	th = getThread(t, srv, thread)
	var final string
	completions := 0
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName {
			final = it.Text
		}
		if it.Kind == runtime.ItemAssistant {
			completions++
		}
	}
	if !strings.Contains(final, "finished: exit code 2 after") || !strings.Contains(final, "output:\nbuilding\nbuilt\n") || !strings.Contains(final, "full log: "+root) {
		t.Fatalf("the final event in history: %q (%s)", final, kinds(th.Items))
	}
	if completions != 3 {
		t.Fatalf("%d completions, want 3 (start, end the turn, woken once by the final event): %s", completions, kinds(th.Items))
	}
	if kit.Running() != 0 {
		t.Fatalf("%d calls still running after the command ended", kit.Running())
	}
}

// TestServeSandboxCancelKillsTheCommand: cancel_subscription from the
// model kills the command's process group.
func TestServeSandboxCancelKillsTheCommand(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	srv := startServer(t, Config{Script: testdata(t, "sandbox_stop_script.json"),
		Sandbox: &Sandbox{Repo: repo, Root: t.TempDir(), Jail: "off"}}) // a host pid in bg.pid
	const thread = "thr_cancel"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Build it."}`)
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "Waiting for the build."; ev = events.nextOf(t, "reply") {
	}
	var sb *sandbox.Sandbox
	waitUntil(t, "the sandbox", func() bool { sb, _ = srv.sandbox.Lookup(t.Context(), thread); return sb != nil })
	pid := readPid(t, filepath.Join(sb.Dir, "bg.pid"))
	waitIdle(t, srv)
	postMessage(t, srv, thread, `{"text":"Cancel the build."}`)
	waitUntil(t, "the command's children to die", func() bool { return processGone(pid) })
	waitUntil(t, "the call to end", func() bool { return sandboxKit(t, srv).Running() == 0 })
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	if !slices.ContainsFunc(th.Items, func(it runtime.Item) bool {
		return it.Kind == runtime.ItemToolResult && it.Name == "cancel_subscription" && strings.HasSuffix(it.Text, " cancelled")
	}) {
		t.Fatalf("no cancel_subscription result: %s", kinds(th.Items))
	}
}

// TestServeSandboxStopKillsTheCommand: a person's stop of the thread
// ends its subscriptions, so the running command's process group is
// killed.
func TestServeSandboxStopKillsTheCommand(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Script: testdata(t, "sandbox_stop_script.json"),
		Sandbox: &Sandbox{Repo: gitRepo(t), Root: t.TempDir(), Jail: "off"}}) // a host pid in bg.pid
	const thread = "thr_stopped"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Build it."}`)
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "Waiting for the build."; ev = events.nextOf(t, "reply") {
	}
	var sb *sandbox.Sandbox
	waitUntil(t, "the sandbox", func() bool { sb, _ = srv.sandbox.Lookup(t.Context(), thread); return sb != nil })
	pid := readPid(t, filepath.Join(sb.Dir, "bg.pid"))
	waitIdle(t, srv)
	var out map[string]any
	if code := do(t, "POST", srv.URL()+"/threads/"+thread+"/stop", "", &out); code/100 != 2 {
		t.Fatalf("stop: %d %v", code, out)
	}
	waitUntil(t, "the command's children to die", func() bool { return processGone(pid) })
	waitUntil(t, "the call to end", func() bool { return sandboxKit(t, srv).Running() == 0 })
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	if !slices.ContainsFunc(th.Items, func(it runtime.Item) bool {
		return strings.HasPrefix(it.Text, "stopped by the user (active subscriptions cancelled: 1)")
	}) {
		t.Fatalf("no stop marker naming the cancelled subscription: %s\n%+v", kinds(th.Items), th.Items)
	}
}

// TestServeSandboxRestartDuringACommand: serve stops while a command
// runs (the command is killed with it); the next serve on the same data
// and sandboxes tells the thread the truth, and the thread goes on.
func TestServeSandboxRestartDuringACommand(t *testing.T) {
	t.Parallel()
	repo, root, data := gitRepo(t), t.TempDir(), t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the same address for both servers, so the callback URLs stay good
	// One keyring for both, so the callback URLs of the first stay good.
	cfg := Config{Listen: addr, Data: data, Script: testdata(t, "sandbox_background_script.json"),
		CallbackKeys: "k1:c2FtZS1rZXlzLWFjcm9zcy1ib3RoLWNvbnZlcnNhdGlvbnMtIQ",
		Sandbox:      &Sandbox{Repo: repo, Root: root, OutputEvery: "10ms"}}
	first := startServer(t, cfg)
	const thread = "thr_restart"
	events := openStream(t, first.URL()+"/threads/"+thread+"/events")
	postMessage(t, first, thread, `{"text":"Build it."}`)
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "The build runs in the background; I will be woken when it ends."; ev = events.nextOf(t, "reply") {
	}
	waitIdle(t, first)
	first.Stop()

	second := startServer(t, cfg)
	waitUntil(t, "the thread to hear of its command", func() bool {
		th := getThread(t, second, thread)
		return slices.ContainsFunc(th.Items, func(it runtime.Item) bool { return it.Text == "The build finished." })
	})
	th := getThread(t, second, thread)
	var final string
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName {
			final = it.Text
		}
	}
	t.Logf("after the restart the thread was told %q", final)
	// The sandbox server's own report, or the runtime's liveness check
	// (tool_call_status answered alive false), whichever came first.
	if !strings.Contains(final, "did not finish: the sandbox server was stopped while it ran") &&
		!strings.Contains(final, "no longer keeps this subscription") {
		t.Fatalf("after the restart the thread was told %q", final)
	}
	if n := sandboxKit(t, second).Running(); n != 0 {
		t.Fatalf("%d calls running after the restart", n)
	}
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	var pid int
	waitUntil(t, file, func() bool {
		b, err := os.ReadFile(file)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// processGone reports whether pid no longer runs (absent, or a zombie).
func processGone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(rest, "Z")
}

// TestServeSandboxViewsAreDisplayOnly: a command with constant output
// sends a view per batch; while it runs they reach the event stream (and
// GET /views) but are no history item and cost the thread no slice (its
// version stays, no "running" state is told); when it ends, its last view
// enters history once, before the final event.
// (Before views were display only, each batch was a slice and an item.)
func TestServeSandboxViewsAreDisplayOnly(t *testing.T) {
	t.Parallel()
	repo, root := gitRepo(t), t.TempDir()
	srv := startServer(t, Config{Script: testdata(t, "sandbox_chatty_script.json"),
		Sandbox: &Sandbox{Repo: repo, Root: root, OutputEvery: "10ms"}})
	const thread = "thr_chatty"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Build it."}`)
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "The build runs in the background; I will be woken when it ends."; ev = events.nextOf(t, "reply") {
	}
	waitIdle(t, srv)
	before := getThread(t, srv, thread)
	const batches = 20
	views, slices := 0, 0
	var last sandbox.CommandView
	for views < batches {
		ev := events.nextOf(t, "view", "state")
		if ev.Event == "state" {
			// Told when a slice starts (hitl.go), with the version it
			// loaded: one from before (a first view that came before
			// the "started" result was folded, in history) is not counted.
			if strings.HasSuffix(ev.Data.ID, ".run") && ev.Data.State.Version >= before.State.Version {
				slices++
			}
			continue
		}
		var v struct {
			ViewType string              `json:"view_type"`
			Content  sandbox.CommandView `json:"content"`
		}
		if err := json.Unmarshal([]byte(ev.Data.Text), &v); err != nil {
			t.Fatalf("view %q: %v", ev.Data.Text, err)
		}
		if v.ViewType == sandbox.ViewType && v.Content.State == "running" && v.Content.Offset >= last.Offset {
			views++
			last = v.Content
		}
	}
	during := getThread(t, srv, thread)
	viewMarkers := func(items []runtime.Item) int {
		n := 0
		for _, it := range items {
			if it.Kind == runtime.ItemMarker && it.Name == runtime.ViewMarkerName {
				n++
			}
		}
		return n
	}
	if slices != 0 || during.State.Version != before.State.Version || viewMarkers(during.Items) != 0 {
		t.Fatalf("during %d output batches: %d slices ran, version %d → %d, %d view items in history (want none: views are display only)",
			batches, slices, before.State.Version, during.State.Version, viewMarkers(during.Items))
	}
	var got viewsResponse
	if code := do(t, "GET", srv.URL()+"/threads/"+thread+"/views", "", &got); code != 200 || !strings.Contains(string(got.Views[sandbox.ViewType]), `"state":"running"`) {
		t.Fatalf("GET views while the command runs: %d %s", code, got.Views)
	}
	// A new client is told the live view at once.
	late := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	if ev := late.nextOf(t, "view"); !strings.Contains(ev.Data.Text, `"command_id"`) {
		t.Fatalf("a new stream's view: %q", ev.Data.Text)
	}
	sb, err := srv.sandbox.Lookup(t.Context(), thread)
	if err != nil || sb == nil {
		t.Fatalf("sandbox: %v %v", sb, err)
	}
	if err := os.WriteFile(filepath.Join(sb.Dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "The build finished."; ev = events.nextOf(t, "reply") {
	}
	waitIdle(t, srv)
	after := getThread(t, srv, thread)
	if n := viewMarkers(after.Items); n != 1 {
		t.Fatalf("%d view items after the command, want its last view once: %s", n, kinds(after.Items))
	}
	for i, it := range after.Items {
		if it.Kind == runtime.ItemMarker && it.Name == runtime.ViewMarkerName {
			if !strings.Contains(it.Args, `"state":"exited"`) || i+1 >= len(after.Items) {
				t.Fatalf("the view kept in history: %s (%s)", it.Args, kinds(after.Items))
			}
		}
	}
}
