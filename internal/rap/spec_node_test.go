package rap

import (
	"bufio"
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
	"github.com/agentslice/agentslice/internal/testenv"
)

// nodeToolServer runs testdata/node/spec_tool_server.js, a RAP tool server
// written in Node from the specification's examples (not from this
// package's types).
type nodeToolServer struct {
	t      *testing.T
	node   string
	port   string
	script string // default testdata/node/spec_tool_server.js
	cmd    *exec.Cmd
}

func startNodeToolServer(t *testing.T, port string) *nodeToolServer {
	t.Helper()
	s := &nodeToolServer{t: t, node: testenv.Node(t), port: port}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *nodeToolServer) start() {
	s.t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "node", "spec_tool_server.js"))
	if err != nil {
		s.t.Fatal(err)
	}
	if s.script != "" {
		script = s.script
	}
	cmd := exec.Command(s.node, script, s.port)
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting the node tool server: %v", err)
	}
	s.cmd = cmd
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case line <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-line:
		p, ok := strings.CutPrefix(l, "LISTENING ")
		if !ok {
			s.t.Fatalf("node tool server said %q", l)
		}
		s.port = p
	case <-time.After(waitTimeout):
		s.t.Fatal("the node tool server did not start")
	}
}

// restart kills the server and starts it again on the same port: it has
// forgotten every call (its state is in memory, as the spec's status page
// describes for a restarted server).
func (s *nodeToolServer) restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

func (s *nodeToolServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

func (s *nodeToolServer) url() string { return "http://127.0.0.1:" + s.port }

// toolNameModel calls the tool named by the user's message and replies with
// the start of whatever came back (a result or an injected event).
type toolNameModel struct{}

func (toolNameModel) Complete(_ context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	last := req.History[len(req.History)-1]
	if last.Kind == runtime.ItemUser {
		w.ToolCall("", last.Text, `{}`)
		return nil
	}
	text := last.Text
	for _, c := range last.Content {
		text += " [" + c.Type + "] " + c.Text
	}
	w.Text("tool said: " + text[:min(len(text), 200)])
	return nil
}

// eventLog records output events and lets a test wait for one.
type eventLog struct {
	mu     sync.Mutex
	evs    []runtime.OutputEvent
	notify chan struct{}
}

func (l *eventLog) Publish(_ context.Context, ev runtime.OutputEvent) error {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
	return nil
}

func (l *eventLog) find(match func(runtime.OutputEvent) bool) (runtime.OutputEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.evs {
		if match(ev) {
			return ev, true
		}
	}
	return runtime.OutputEvent{}, false
}

func (l *eventLog) waitFor(t *testing.T, what string, match func(runtime.OutputEvent) bool) runtime.OutputEvent {
	t.Helper()
	deadline := time.After(4 * waitTimeout)
	for {
		if ev, ok := l.find(match); ok {
			return ev
		}
		select {
		case <-l.notify:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func replyOf(thread, contains string) func(runtime.OutputEvent) bool {
	return func(ev runtime.OutputEvent) bool {
		return ev.ThreadID == thread && ev.Kind == "reply" && strings.Contains(ev.Text, contains)
	}
}

// dispatchSignal reports each dispatched tool name.
type dispatchSignal struct{ ch chan string }

func (d dispatchSignal) Observe(_ context.Context, ev runtime.Event) {
	if ev.Type == runtime.EventToolDispatched && ev.Reason == "" {
		select {
		case d.ch <- ev.ToolName:
		default:
		}
	}
}

// TestSpecNodeToolServer runs the embedded system against a RAP tool
// server written in Node from the spec's examples: every callback type,
// spec-shaped display_as of all three types, a string requiresAuth and
// custom annotations, call_id echoed as null, /tool_call_status alive and
// dead, a server that restarts and forgets its calls, one that never
// answers (the deadline fires), and a 700 KB markup result. Every thread
// ends with the expected history and nothing pending.
func TestSpecNodeToolServer(t *testing.T) {
	node := startNodeToolServer(t, "0")
	rig := newCallbackRig(t, nil)
	loader := loaderFor(t, rig, node.url())
	out := &eventLog{notify: make(chan struct{}, 1)}
	dispatched := dispatchSignal{ch: make(chan string, 64)}
	store := local.NewHistoryStore()
	sys, err := local.New(local.Config{Model: toolNameModel{}, Tools: loader, History: store, Output: out,
		Observer: dispatched, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	timers := local.NewTimers(sys)
	sys.Engine().Liveness = &runtime.Liveness{Timers: timers, Deadline: 3 * time.Second,
		LongRunningDeadline: time.Minute, CheckAfter: 200 * time.Millisecond, MaxCheckInterval: 400 * time.Millisecond}
	if err := sys.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { timers.Stop(); sys.Stop() })
	rcv, err := NewReceiver(ReceiverConfig{Keys: rig.signer.Keys, Queue: sys, Output: out, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rig.srv.Config.Handler = rcv
	send := func(thread, tool string) {
		t.Helper()
		if err := sys.Send(context.Background(), runtime.Message{V: 1, ID: "u_" + thread, ThreadID: thread, Kind: runtime.KindUser, Text: tool}); err != nil {
			t.Fatal(err)
		}
	}
	history := func(thread string) *runtime.Thread {
		t.Helper()
		th, err := store.Load(context.Background(), thread)
		if err != nil {
			t.Fatal(err)
		}
		if err := runtimetest.CheckOneResultPerCall(th.Items); err != nil {
			t.Fatalf("%s: %v\n%s", thread, err, runtimetest.Transcript(th.Items))
		}
		return th
	}

	// The toolset with string requiresAuth and custom annotations loads whole.
	set, err := loader.SetFor(context.Background(), "probe")
	if err != nil || len(set.Problems()) != 0 || len(set.Specs()) != 9 {
		t.Fatalf("toolset: %d tools, problems %v, %v", len(set.Specs()), set.Problems(), err)
	}

	// Phase 1: every callback type, display_as, large markup.
	for _, tool := range []string{"deploy", "edit_file", "read_image", "big_page", "authorize", "confirm", "subscribe_github_events", "nope"} {
		send("thr_"+tool, tool)
	}
	out.waitFor(t, "deploy's reply", replyOf("thr_deploy", "Instance i-0abc123 is running"))
	out.waitFor(t, "edit_file's reply", replyOf("thr_edit_file", "Replaced text in src/main.rs"))
	out.waitFor(t, "read_image's reply", replyOf("thr_read_image", "[image]"))
	out.waitFor(t, "big_page's reply", replyOf("thr_big_page", "<table>"))
	out.waitFor(t, "authorize's notice", func(ev runtime.OutputEvent) bool {
		return ev.ThreadID == "thr_authorize" && ev.Kind == "notice" && strings.Contains(ev.Text, "https://github.com/login/oauth/authorize")
	})
	out.waitFor(t, "authorize's reply", replyOf("thr_authorize", "Authorized and done."))
	out.waitFor(t, "the choice", func(ev runtime.OutputEvent) bool {
		return ev.ThreadID == "thr_confirm" && ev.Kind == "notice" && strings.Contains(ev.Text, "Allow writing")
	})
	p := history("thr_confirm").State.Pending
	if p == nil {
		t.Fatal("confirm has no pending call while the user chooses")
	}
	if err := rcv.Choices().(*MemoryChoices).Answer(context.Background(), http.DefaultClient, "thr_confirm", p.ID, 1); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "confirm's reply", replyOf("thr_confirm", "The user chose option 1."))
	out.waitFor(t, "the subscription's end", replyOf("thr_subscribe_github_events", "the subscription ended"))
	out.waitFor(t, "the unknown operation's error", replyOf("thr_nope", "unknown tool"))

	// display_as: the first supported segment of each result, for UIs.
	for thread, want := range map[string]string{"thr_deploy": `"type":"text"`, "thr_edit_file": `"type":"diff"`, "thr_read_image": `"type":"image"`} {
		out.waitFor(t, "the display of "+thread, func(ev runtime.OutputEvent) bool {
			return ev.ThreadID == thread && ev.Kind == "display" && strings.Contains(ev.Text, want)
		})
	}
	if v, ok, _ := rcv.Views().View(context.Background(), "thr_subscribe_github_events", "diff"); !ok || !strings.Contains(string(v), "diff --git") {
		t.Fatalf("view_update not stored: %s", v)
	}
	big := history("thr_big_page")
	var page string
	for _, it := range big.Items {
		if it.Kind == runtime.ItemToolResult {
			page = it.Text
		}
	}
	if len(page) < 690<<10 || !strings.HasPrefix(page, "<table>") || !strings.HasSuffix(page, "</table>") {
		t.Fatalf("the 700 KB page arrived as %d bytes (truncated or lost)", len(page))
	}
	sub := history("thr_subscribe_github_events")
	if len(sub.State.Subscriptions) != 0 {
		t.Fatalf("the final event did not end the subscription: %+v", sub.State.Subscriptions)
	}
	if tr := runtimetest.Transcript(sub.Items); !strings.Contains(tr, "build output line 1") || strings.Count(tr, runtime.InjectedToolName) < 2 {
		t.Fatalf("subscription events not injected inline:\n%s", tr)
	}

	// Phase 2: a call the server forgets when it restarts: the status
	// check finds it dead and the model gets an error result.
	drain(dispatched.ch)
	send("thr_forgetful", "forgetful")
	waitDispatched(t, dispatched.ch, "forgetful")
	node.restart()
	out.waitFor(t, "forgetful's error", replyOf("thr_forgetful", "no longer processing this call"))

	// Phase 3: a call that is never answered (the server says alive):
	// the deadline fires, the call is cancelled and closed with an error.
	send("thr_hang", "hang")
	out.waitFor(t, "hang's deadline", replyOf("thr_hang", "did not return before its deadline"))

	// Every thread ends idle: nothing pending, nothing dead-lettered.
	for _, thread := range []string{"thr_deploy", "thr_edit_file", "thr_read_image", "thr_big_page", "thr_authorize",
		"thr_confirm", "thr_subscribe_github_events", "thr_nope", "thr_forgetful", "thr_hang"} {
		th := history(thread)
		if th.State.Pending != nil || len(th.State.Subscriptions) != 0 || len(th.State.Deferred) != 0 {
			t.Errorf("%s does not end idle: pending %+v, subscriptions %+v, deferred %d", thread, th.State.Pending, th.State.Subscriptions, len(th.State.Deferred))
		}
		if last := th.Items[len(th.Items)-1]; last.Kind != runtime.ItemAssistant {
			t.Errorf("%s ends with a %s item, not the model's reply:\n%s", thread, last.Kind, runtimetest.Transcript(th.Items))
		}
	}
	if dead, n := sys.DeadLetters(); n != 0 {
		t.Fatalf("dead letters: %+v", dead)
	}
}

func drain(ch chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func waitDispatched(t *testing.T, ch chan string, tool string) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case name := <-ch:
			if name == tool {
				return
			}
		case <-timeout:
			t.Fatalf("%s was not dispatched", tool)
		}
	}
}

// loaderFor is a dispatcher signing with rig's keys and a loader of the
// toolset at base, both closed with the test (the node servers' tests).
func loaderFor(t *testing.T, rig *callbackRig, base string) *Loader {
	t.Helper()
	disp, err := NewDispatcher(DispatcherConfig{Signer: rig.signer, Retry: fastRetry(3), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(disp.Close)
	loader, err := NewLoader(LoaderConfig{Servers: []string{base}, Dispatcher: disp, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return loader
}
