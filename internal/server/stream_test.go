package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// writeScript writes a model script to a temporary file.
func writeScript(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(p, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// gatedModel plays a script but holds each completion after its first
// text chunk until the test releases it (or the completion is cancelled),
// so tests can act while a reply is streaming.
type gatedModel struct {
	inner   runtime.Model
	started chan string   // the completion ID, once its first chunk is out
	release chan struct{} // one value lets one completion finish
}

func newGatedModel(t *testing.T, script string) *gatedModel {
	t.Helper()
	s, err := model.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return &gatedModel{inner: model.NewScripted(s), started: make(chan string, 16), release: make(chan struct{}, 16)}
}

func (g *gatedModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	return g.inner.Complete(ctx, req, &gateWriter{TurnWriter: w, g: g, ctx: ctx, id: req.ID()})
}

type gateWriter struct {
	runtime.TurnWriter
	g   *gatedModel
	ctx context.Context
	id  string
	n   int
}

func (w *gateWriter) Text(s string) {
	if w.n == 1 {
		w.g.started <- w.id
		select {
		case <-w.g.release:
		case <-w.ctx.Done():
		}
	}
	w.n++
	w.TurnWriter.Text(s)
}

// waitStarted waits until a completion is holding mid-stream.
func (g *gatedModel) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-g.started:
	case <-timeoutC():
		t.Fatal("no completion started")
	}
}

// startServerWith starts a server with an injected model.
func startServerWith(t *testing.T, cfg Config, m runtime.Model) *Server {
	t.Helper()
	return startServerOpts(t, cfg, Options{Model: m})
}

// workbench is a RAP tool server for these tests: edit_file answers with
// a display_as diff and updates a view; ask asks the user to choose and
// answers with the choice, which its response_url receives.
type workbench struct {
	kit     *rap.Server
	url     string
	answers chan rap.ChoiceResponse
}

func newWorkbench(t *testing.T) *workbench {
	t.Helper()
	wb := &workbench{answers: make(chan rap.ChoiceResponse, 4)}
	respond := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a rap.ChoiceResponse
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		wb.answers <- a
	}))
	t.Cleanup(respond.Close)
	obj := json.RawMessage(`{"type":"object"}`)
	kit, err := rap.NewServer(rap.ServerConfig{Name: "workbench", Tools: []rap.Tool{
		{Name: "edit_file", Description: "edit a file", InputSchema: obj, Run: func(ctx context.Context, c *rap.Call) error {
			if err := c.View(ctx, "files", map[string]any{"open": []string{"main.go"}}); err != nil {
				return err
			}
			text := "edited main.go"
			return c.Post(ctx, &rap.ToolResult{Type: rap.TypeToolResult, GroupID: c.GroupID, ID: c.ID, Text: &text,
				DisplayAs: []rap.DisplaySegment{{Type: "chart", Content: json.RawMessage(`{}`)}, rap.DiffSegment("main.go", "@@ -1 +1 @@\n-old\n+new\n")}})
		}},
		{Name: "ask", Description: "ask the user", InputSchema: obj, Run: func(ctx context.Context, c *rap.Call) error {
			if err := c.Choice(ctx, "Which colour?", []string{"red", "green"}, 0, respond.URL); err != nil {
				return err
			}
			select {
			case a := <-wb.answers:
				return c.Result(ctx, fmt.Sprintf("the user chose %d", a.Selected))
			case <-ctx.Done():
				return nil
			}
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(kit)
	t.Cleanup(func() { hs.Close(); kit.Stop() })
	wb.kit, wb.url = kit, hs.URL
	return wb
}

const workbenchScript = `{"default": [
  {"text": "Editing.", "tool_call": {"name": "edit_file", "args": {}}, "usage": {"input": 10, "output": 5, "total": 15}},
  {"text": "Asking.", "tool_call": {"name": "ask", "args": {}}},
  {"text": "All done, green it is."}
]}`

// TestStreamEveryStep: a thread's stream carries every step with its
// stable ID: the message, tool calls, results with their display_as, the
// user_choice (answered through the API, which calls the tool's
// response_url), views, usage, text deltas, the committed turn.
func TestStreamEveryStep(t *testing.T) {
	t.Parallel()
	wb := newWorkbench(t)
	srv := startServer(t, Config{Script: writeScript(t, workbenchScript), ToolServers: []string{wb.url}})
	const thread = "thr_steps"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Fix main.go","id":"m1"}`)

	history := []string{"message", "turn", "usage", "tool_call", "tool_result", "turn", "tool_call", "user_choice"}
	var got []sseEvent
	for len(got) < len(history) {
		ev := events.nextOf(t, "message", "turn", "tool_call", "tool_result", "user_choice", "usage")
		got = append(got, ev)
	}
	for i, want := range history {
		ev := got[i]
		if ev.Event != want || ev.Data.Kind != want {
			t.Fatalf("history event %d is %s, want %s (all: %+v)", i, ev.Event, want, got)
		}
		// The message and the first result precede a completion's deltas:
		// they are sent ahead of their commit, without the replay cursor.
		aheadOfDeltas := want == "message" || (want == "tool_result" && i == 4)
		if (ev.ID != fmt.Sprint(ev.Data.Seq) && !(aheadOfDeltas && ev.ID == "")) || ev.Data.Seq == 0 || !strings.HasPrefix(ev.Data.ID, thread+"#") {
			t.Fatalf("event %d: SSE id %q, seq %d, ID %q", i, ev.ID, ev.Data.Seq, ev.Data.ID)
		}
	}
	if u := got[2].Data.Usage; u == nil || u.Total != 15 || got[2].Data.Seq != got[1].Data.Seq {
		t.Fatalf("usage event %+v", got[2].Data)
	}
	res := got[4].Data
	if res.Tool != "edit_file" || res.Text != "edited main.go" || len(res.Display) != 1 || res.Display[0].Type != "diff" || res.Display[0].Path != "main.go" {
		t.Fatalf("tool result %+v, want its display_as diff", res)
	}
	choice := got[7].Data
	if choice.Choice == nil || choice.Choice.Prompt != "Which colour?" || len(choice.Choice.Choices) != 2 {
		t.Fatalf("user_choice event %+v", choice)
	}
	waitIdle(t, srv) // the slice that committed the notice has ended
	if th := getThread(t, srv, thread); th.Status != "waiting_for_choice" || th.Choice == nil {
		t.Fatalf("thread status %q, choice %+v", th.Status, th.Choice)
	}
	var views viewsResponse
	if code := do(t, http.MethodGet, srv.URL()+"/threads/"+thread+"/views", "", &views); code != http.StatusOK || string(views.Views["files"]) != `{"open":["main.go"]}` {
		t.Fatalf("views: %d %+v", code, views)
	}

	// Answers are checked against the choice before the tool hears of them.
	choiceURL := srv.URL() + "/threads/" + thread + "/choices/" + choice.Choice.CallID
	for _, c := range []struct {
		url, body string
		code      int
		field     string
	}{
		{choiceURL, `{"selected": 2}`, http.StatusBadRequest, "selected"},
		{choiceURL, `{}`, http.StatusBadRequest, "selected"},
		{choiceURL, `{"selected": "green"}`, http.StatusBadRequest, "selected"},
		{srv.URL() + "/threads/" + thread + "/choices/call_nope", `{"selected": 0}`, http.StatusNotFound, "call"},
	} {
		var e apiError
		if code := do(t, http.MethodPost, c.url, c.body, &e); code != c.code || e.Field != c.field {
			t.Fatalf("POST %s %s: %d %+v, want %d naming %s", c.url, c.body, code, e, c.code, c.field)
		}
	}
	if len(wb.answers) != 0 {
		t.Fatal("a refused answer reached the tool")
	}
	var ok map[string]any
	if code := do(t, http.MethodPost, choiceURL, `{"selected": 1}`, &ok); code != http.StatusOK || ok["choice"] != "green" {
		t.Fatalf("answer: %d %v", code, ok)
	}
	if code := do(t, http.MethodPost, choiceURL, `{"selected": 1}`, nil); code != http.StatusNotFound {
		t.Fatalf("a second answer: %d, want 404", code)
	}

	// The tool gets the answer and returns it; the model streams its reply
	// (the deltas come before the commit of the result and the turn).
	var deltas strings.Builder
	for {
		ev := events.nextOf(t, "delta", "turn", "tool_result")
		if ev.Event == "tool_result" {
			if ev.Data.Text != "the user chose 1" {
				t.Fatalf("result after the answer: %+v", ev.Data)
			}
			continue
		}
		if ev.Event == "turn" {
			if ev.Data.Text != "All done, green it is." || deltas.String() != ev.Data.Text {
				t.Fatalf("turn %q after deltas %q", ev.Data.Text, deltas.String())
			}
			break
		}
		if ev.ID != "" {
			t.Fatalf("a delta carries the replay cursor %q", ev.ID)
		}
		if ev.Data.Index == 0 {
			deltas.Reset()
		}
		deltas.WriteString(ev.Data.Text)
	}
}

// TestStreamReplay: a client that reconnects with Last-Event-ID gets what
// it missed from committed history, then live events, with nothing lost
// or doubled, also when it reconnects while the thread is committing.
func TestStreamReplay(t *testing.T) {
	t.Parallel()
	g := newGatedModel(t, `{"default": [{"text": "one one"}, {"text": "two two"}, {"text": "three three"}, {"text": "four four"}]}`)
	srv := startServerWith(t, Config{}, g)
	const thread = "thr_replay"
	url := srv.URL() + "/threads/" + thread + "/events"

	seen := map[string]int{} // event ID → times seen
	var seqs []int
	record := func(ev sseEvent) {
		seen[ev.Data.ID]++
		if ev.Data.Kind != "usage" {
			seqs = append(seqs, ev.Data.Seq)
		}
	}
	s1 := openStream(t, url)
	postMessage(t, srv, thread, `{"text":"first"}`)
	g.waitStarted(t)
	g.release <- struct{}{}
	for range 2 { // message, turn
		record(s1.nextOf(t, "message", "turn"))
	}
	last := fmt.Sprint(seqs[len(seqs)-1])
	s1.close()

	// Missed while away: one whole exchange, and the next one starting.
	postMessage(t, srv, thread, `{"text":"second"}`)
	g.waitStarted(t)
	g.release <- struct{}{}
	waitIdle(t, srv)
	postMessage(t, srv, thread, `{"text":"third"}`)
	g.waitStarted(t) // mid-stream: its commit lands after the reconnect

	s2 := openStreamWith(t, url, last)
	g.release <- struct{}{}
	postMessage(t, srv, thread, `{"text":"fourth"}`)
	g.waitStarted(t)
	g.release <- struct{}{}
	for len(seqs) < 8 {
		record(s2.nextOf(t, "message", "turn"))
	}
	for i, n := range seqs {
		if n != i+1 {
			t.Fatalf("seqs %v: want 1..8 each once", seqs)
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("event %s seen %d times", id, n)
		}
	}
	if th := getThread(t, srv, thread); th.Total != 8 {
		t.Fatalf("history has %d items", th.Total)
	}
	var e apiError
	if code := do(t, http.MethodGet, url+"?after=x", "", &e); code != http.StatusBadRequest || e.Field != "Last-Event-ID" {
		t.Fatalf("a bad cursor: %d %+v", code, e)
	}
}

// TestDeadLetteredThread: a thread whose only message was dead-lettered
// is not a silent 404: GET shows the dead letter, the stream replays it,
// and GET /dead_letters lists each message once. (A model that panics
// fails its slices; a provider outage waits instead, failures_test.go.)
func TestDeadLetteredThread(t *testing.T) {
	t.Parallel()
	srv := startServerOpts(t, Config{Limits: Limits{ModelAttempts: 1, SliceAttempts: 2}}, Options{Model: panicModel{}})
	const thread = "thr_dead"
	live := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"hello","id":"m_dead"}`)
	if ev := live.nextOf(t, "error"); !strings.Contains(ev.Data.Text, "m_dead") {
		t.Fatalf("live error event %+v", ev.Data)
	}
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	if th.Status != "dead_letter" || len(th.DeadLetters) != 1 || th.DeadLetters[0].Message.ID != "m_dead" || th.DeadLetters[0].Reason == "" {
		t.Fatalf("thread: %+v", th)
	}
	postMessage(t, srv, thread, `{"text":"hello","id":"m_dead"}`) // the same message again: dead again
	waitIdle(t, srv)
	var dl deadLettersResponse
	if code := do(t, http.MethodGet, srv.URL()+"/dead_letters", "", &dl); code != http.StatusOK || len(dl.DeadLetters) != 1 ||
		dl.Total != 1 {
		t.Fatalf("dead letters: %d %+v", code, dl)
	}
	s := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	if ev := s.nextOf(t, "dead_letter"); ev.Data.Input != "m_dead" || ev.Data.Message == nil || ev.Data.Message.Text != "hello" {
		t.Fatalf("dead letter event %+v", ev.Data)
	}
}

// TestStopAndClose: stop cancels the completion in flight (nothing of it
// is committed) without running the model again; stop interrupts a sleep
// with its one result; close ends the thread for good.
func TestStopAndClose(t *testing.T) {
	t.Parallel()
	g := newGatedModel(t, `{"default": [{"text": "sleep now", "tool_call": {"name": "sleep", "args": {"seconds": 3600}}}, {"text": "never"}]}`)
	srv := startServerWith(t, Config{}, g)
	const thread = "thr_stop"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"talk"}`)
	g.waitStarted(t)
	var resp map[string]any
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/stop", `{"reason":"enough"}`, &resp); code != http.StatusAccepted || resp["interrupted_completion"] != true {
		t.Fatalf("stop: %d %v", code, resp)
	}
	if ev := events.nextOf(t, "error"); !strings.Contains(ev.Data.Text, "stopped by the user") {
		t.Fatalf("error event %+v", ev.Data)
	}
	if ev := events.nextOf(t, "stopped", "turn"); ev.Event != "stopped" || ev.Data.Text != "stopped by the user: enough" {
		t.Fatalf("after the stop: %+v", ev)
	}
	waitIdle(t, srv)
	if th := getThread(t, srv, thread); th.Status != "idle" || kinds(th.Items) != "user marker" {
		t.Fatalf("after the stop: %s %s", th.Status, kinds(th.Items))
	}

	postMessage(t, srv, thread, `{"text":"sleep"}`)
	g.waitStarted(t)
	g.release <- struct{}{}
	if ev := events.nextOf(t, "sleep"); ev.Data.Tool != "sleep" {
		t.Fatalf("sleep event %+v", ev.Data)
	}
	waitIdle(t, srv)
	if th := getThread(t, srv, thread); th.Status != "sleeping" || th.Until == nil || !th.Until.After(time.Now()) {
		t.Fatalf("status %s until %v", th.Status, th.Until)
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/stop", "", &resp); code != http.StatusAccepted || resp["interrupted_completion"] != false {
		t.Fatalf("stop: %d %v", code, resp)
	}
	if ev := events.nextOf(t, "wake"); !ev.Data.IsError || !strings.HasPrefix(ev.Data.Text, "interrupted") {
		t.Fatalf("wake event %+v", ev.Data)
	}
	events.nextOf(t, "stopped")
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	if th.Status != "idle" || th.State.Pending != nil || th.Items[len(th.Items)-1].Kind != runtime.ItemMarker {
		t.Fatalf("after stopping the sleep: %s %s", th.Status, kinds(th.Items))
	}

	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/close", "", nil); code != http.StatusAccepted {
		t.Fatalf("close: %d", code)
	}
	events.nextOf(t, "closed")
	waitIdle(t, srv)
	if th := getThread(t, srv, thread); th.Status != "closed" {
		t.Fatalf("status %s", th.Status)
	}
	var e apiError
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/messages", `{"text":"hi"}`, &e); code != http.StatusConflict {
		t.Fatalf("a message to a closed thread: %d %+v", code, e)
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/close", "", &e); code != http.StatusConflict {
		t.Fatalf("closing twice: %d %+v", code, e)
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/thr_nobody/stop", "", &e); code != http.StatusNotFound {
		t.Fatalf("stopping an unknown thread: %d %+v", code, e)
	}
}

// TestStreamCursorPastHistory: a cursor past the thread's history (from
// before an in-memory server restarted) gets a reset event and the whole
// history again; the every-thread stream carries history events too.
func TestStreamCursorPastHistory(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Script: testdata(t, "hello_script.json")})
	all := openStream(t, srv.URL()+"/events")
	turns := openStream(t, srv.URL()+"/events?kinds=turn")
	postMessage(t, srv, "thr_reset", `{"text":"hi"}`)
	if ev := all.nextOf(t, "turn"); ev.Data.ThreadID != "thr_reset" || ev.ID != "" {
		t.Fatalf("every-thread stream: %+v (it carries no replay cursor)", ev)
	}
	if ev := turns.next(t); ev.Event != "turn" {
		t.Fatalf("?kinds=turn sent %+v first", ev)
	}
	waitIdle(t, srv)
	s := openStreamWith(t, srv.URL()+"/threads/thr_reset/events", "99")
	if ev := s.next(t); ev.Event != "reset" {
		t.Fatalf("first event %+v, want reset", ev)
	}
	if ev := s.next(t); ev.Event != "message" || ev.ID != "1" {
		t.Fatalf("after the reset: %+v, want the history from the start", ev)
	}
}

// panicModel panics in every completion: its slices fail (the engine
// recovers the panic at the slice boundary) until the system gives up.
type panicModel struct{}

func (panicModel) Complete(context.Context, *runtime.CompletionRequest, runtime.TurnWriter) error {
	panic("panicModel: this model always panics")
}

// TestStreamKeepsHistoryOrderAroundDeltas: the completion that follows a
// tool result streams its text after the tool_result event, not before it
// (the result is committed with the turn, after the deltas), and after the
// user's message; every history event still arrives once, and a replay
// from history sends the same events in the same order.
func TestStreamKeepsHistoryOrderAroundDeltas(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Script: testdata(t, "get_time_script.json"), ExampleTools: &ExampleTools{GetTime: true}})
	const thread = "thr_order"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"What time is it?","id":"m1"}`)
	live := []string{""} // history events' kinds, and "delta" for each run of deltas
	seen := map[string]int{}
	for {
		ev := events.nextOf(t, "message", "turn", "tool_call", "tool_result", "delta")
		if ev.Event == "delta" {
			if live[len(live)-1] != "delta" { // one entry per run of deltas
				live = append(live, "delta")
			}
			continue
		}
		live = append(live, ev.Event)
		seen[ev.Data.ID]++
		if ev.Event == "turn" && ev.Data.Text == "It is noon, UTC." {
			break
		}
	}
	want := []string{"message", "delta", "turn", "tool_call", "tool_result", "delta", "turn"}
	if live = live[1:]; !slices.Equal(live, want) {
		t.Fatalf("stream order %v, want %v", live, want)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("history event %s arrived %d times", id, n)
		}
	}
	waitIdle(t, srv)
	replay := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	var replayed []string
	for len(replayed) < 5 {
		ev := replay.nextOf(t, "message", "turn", "tool_call", "tool_result")
		if ev.ID != fmt.Sprint(ev.Data.Seq) {
			t.Fatalf("replayed %s without its cursor", ev.Data.ID)
		}
		replayed = append(replayed, ev.Event)
	}
	if !slices.Equal(replayed, []string{"message", "turn", "tool_call", "tool_result", "turn"}) {
		t.Fatalf("replay %v", replayed)
	}
}
