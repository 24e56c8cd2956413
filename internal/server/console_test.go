package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv"
)

// TestConsoleServed: the console is served at / from the binary, with
// its assets, and no request leaves the server (a strict CSP, no external
// URL in the assets).
func TestConsoleServed(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{})
	for _, c := range []struct{ path, ctype, contains string }{
		{"/", "text/html", `<script src="/console/console.js">`},
		{"/console/console.js", "text/javascript", "new EventSource("},
		{"/console/render.js", "text/javascript", "function outcome("},
		{"/console/console.css", "text/css", "@media (max-width: 720px)"},
	} {
		resp, err := http.Get(srv.URL() + c.path)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(raw)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) || !strings.Contains(body, c.contains) {
			t.Fatalf("GET %s: %d %s", c.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("GET %s: CSP %q", c.path, resp.Header.Get("Content-Security-Policy"))
		}
		for _, ext := range []string{"http://", "https://", "//fonts.", "cdn"} {
			if strings.Contains(body, ext) && !(strings.HasSuffix(c.path, ".js") && ext == "https://") {
				t.Fatalf("%s refers to %q: the console must not load anything from elsewhere", c.path, ext)
			}
		}
	}
}

// consoleScript drives TestConsoleInBrowser: an edit with a diff, a
// choice, a reply, and one to stop.
const consoleScript = `{"default": [
  {"text": "Let me edit the file.", "tool_call": {"name": "edit_file", "args": {"path": "main.go"}}, "usage": {"input": 120, "output": 30, "total": 150}},
  {"text": "Asking.", "tool_call": {"name": "ask", "args": {}}},
  {"text": "All done, green it is."},
  {"text": "This answer will be stopped."}
]}`

// browser is a headless Chromium driven by chromedp for one test, with
// helpers that fail the test with the conversation's HTML and a
// screenshot ("failed.png") when a step does not happen.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string // the test's artifact directory: screenshots
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	chrome := testenv.Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil { // starts the browser, for the life of bctx
		t.Fatalf("starting %s: %v", chrome, err)
	}
	return &browser{t: t, ctx: bctx, dir: t.ArtifactDir()}
}

func (b *browser) shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(b.dir, name+".png"), buf, 0o644)
	})
}

func (b *browser) fail(step string, err error) {
	b.t.Helper()
	dctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	html, _ := chromedp.Run(dctx, chromedp.OuterHTML("#main"))
	_ = chromedp.Do(dctx, b.shot("failed"))
	b.t.Fatalf("%s: %v\nthe thread:\n%s", step, err, html)
}

func (b *browser) run(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		b.fail(step, err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.TextContent(sel))
	if err != nil {
		b.fail("reading "+sel, err)
	}
	return s
}

// eval returns the value of a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail("evaluating "+expr, err)
	}
	return v
}

// poll waits until a JavaScript expression is true.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(25*time.Second))(ctx, tg)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", expr, err)
		}
		return nil
	})
}

// js runs a JavaScript expression as a step.
func js(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](expr)(ctx, tg)
		return err
	})
}

// sendFits is true when the Send button is whole inside the viewport and
// nothing makes the page wider than it.
const sendFits = `(() => { const r = document.querySelector("#send").getBoundingClientRect();
  return r.width >= 40 && r.left >= 0 && r.right <= window.innerWidth && r.bottom <= window.innerHeight &&
    document.documentElement.scrollWidth <= window.innerWidth; })()`

// TestConsoleInBrowser drives the console in headless Chromium: send a
// message (shown at once, before the reply), watch the reply stream in,
// see a tool call and its diff, answer a user_choice, reload mid-stream
// (nothing lost or doubled, the choice shown with its answer), stop a
// thread (Stop and Close only while there is something to stop), and
// look at it at phone width. Screenshots of each step go to the test's
// artifact directory (go test -artifacts keeps them).
func TestConsoleInBrowser(t *testing.T) {
	b := newBrowser(t)
	wb := newWorkbench(t)
	g := newGatedModel(t, consoleScript)
	srv := startServerWith(t, Config{ToolServers: []string{wb.url}}, g)
	run, text, shot, ctx := b.run, b.text, b.shot, b.ctx

	const thread = "thr_ui"
	run("open the console", chromedp.Navigate(srv.URL()+"/#"+thread), chromedp.WaitVisible("#composer-text:not([disabled])"),
		poll(`document.querySelector("#thread-status").textContent === "new"`))
	if !eval[bool](b, `document.querySelector("#stop").disabled && document.querySelector("#close").disabled && document.querySelector("#send").disabled`) {
		t.Fatal("Stop, Close or Send is enabled on a new thread with nothing typed")
	}
	run("send a message with the keyboard", chromedp.SendKeys("#composer-text", "Please fix main.go"+kb.Enter))

	// The reply streams in before it is committed; the user's message is
	// there already, before anything of it is committed.
	g.waitStarted(t)
	run("see the streaming text", chromedp.WaitVisible(`#log li[data-kind="streaming"]`))
	if s := text(`#log li[data-kind="streaming"]`); !strings.Contains(s, "Let me edi") {
		t.Fatalf("streaming bubble %q", s)
	}
	if s := text(`#log li[data-kind="message"]`); !strings.Contains(s, "Please fix main.go") {
		t.Fatalf("the user's message while the reply streams: %q", s)
	}
	if !eval[bool](b, `!document.querySelector("#stop").disabled && !document.querySelector("#close").disabled`) {
		t.Fatal("Stop or Close is disabled while the thread runs")
	}
	run("screenshot", shot("01-streaming"))
	g.release <- struct{}{}

	// The tool call, then its result with the diff from display_as (the
	// result is committed with the next turn, "Asking.", which streams
	// first).
	run("see the tool call", chromedp.WaitVisible(`#log details[data-kind="tool_call"]`), chromedp.WaitVisible(`#log [data-kind="turn"]`))
	g.waitStarted(t) // "Asking."
	g.release <- struct{}{}
	run("see the diff", chromedp.WaitVisible(`#log details[data-kind="tool_call"] .diff`))
	if s := text(`#log details[data-kind="tool_call"] summary`); !strings.Contains(s, "edit_file") || !strings.Contains(s, "done") {
		t.Fatalf("tool call summary %q", s)
	}
	if s := text(`#log .diff .add`); !strings.Contains(s, "+new") {
		t.Fatalf("diff %q", s)
	}
	// The view is shown by its fields, not as JSON.
	if s := text(`#views [data-view="files"]`); !strings.Contains(s, "open") || !strings.Contains(s, "main.go") || strings.Contains(s, "{") {
		t.Fatalf("view files %q", s)
	}
	run("see the choice and the usage", chromedp.WaitVisible(`#log .choice button`))
	if s := text("#usage"); !strings.Contains(s, "120 in") {
		t.Fatalf("usage %q", s)
	}
	run("see the status", poll(`document.querySelector("#thread-status").textContent === "waiting for choice"`))
	run("screenshot", shot("02-tool-result-and-choice"))

	// Answer the choice: the tool's response_url hears it, and the model
	// starts its reply, which is held mid-stream.
	run("answer the choice", chromedp.Click(`#log .choice .options button:nth-child(2)`))
	g.waitStarted(t)
	run("see the answer", chromedp.WaitVisible(`#log li[data-kind="streaming"]`))
	if s := text(`#log [data-kind="user_choice"]`); !strings.Contains(s, "You chose: green") {
		t.Fatalf("choice after the answer %q", s)
	}
	run("screenshot", shot("03-choice-answered-streaming"))

	// Reload mid-stream: history is replayed, the rest goes on live.
	run("reload", chromedp.Reload(), chromedp.WaitVisible(`#log [data-kind="tool_result"], #log details[data-kind="tool_call"]`))
	g.release <- struct{}{}
	run("see the final reply", chromedp.WaitVisible(`#log li[data-kind="turn"]:nth-of-type(n+1)`),
		poll(`[...document.querySelectorAll('#log [data-kind="turn"]')].some(e => e.textContent.includes("All done, green it is."))`))
	type pageView struct {
		IDs      []string `json:"ids"`
		Turns    []string `json:"turns"`
		Messages int      `json:"messages"`
		Results  int      `json:"results"`
		Stream   int      `json:"streaming"`
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[pageView](`(() => ({
		ids: [...document.querySelectorAll('#log [data-id]')].map(e => e.dataset.id),
		turns: [...document.querySelectorAll('#log [data-kind="turn"]')].map(e => e.querySelector(".text").textContent.trim()),
		messages: document.querySelectorAll('#log [data-kind="message"]').length,
		results: document.querySelectorAll('#log .result').length,
		streaming: document.querySelectorAll('#log [data-kind="streaming"]').length,
	}))()`))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	seen := map[string]bool{}
	for _, id := range page.IDs {
		if seen[id] {
			t.Fatalf("event %s shown twice after the reload: %v", id, page.IDs)
		}
		seen[id] = true
	}
	if strings.Join(page.Turns, "|") != "Let me edit the file.|Asking.|All done, green it is." || page.Messages != 1 || page.Results != 2 || page.Stream != 0 {
		t.Fatalf("after the reload the page shows %+v", page)
	}
	// The choice, answered before the reload, shows its question and answer:
	// at once from history, or, when the reload came before the answer's
	// record committed (it is folded after the held reply), as soon as that
	// commit's choice_answered event arrives.
	run("the answer after the reload", poll(`(document.querySelector('#log [data-kind="user_choice"]') || {}).textContent?.includes("You chose: green")`))
	if s := text(`#log [data-kind="user_choice"]`); !strings.Contains(s, "Which colour?") || !strings.Contains(s, "You chose: green") {
		t.Fatalf("the answered choice after the reload: %q", s)
	}
	run("idle after the reply", poll(`document.querySelector("#thread-status").textContent === "idle"`),
		poll(`document.querySelector("#stop").disabled && document.querySelector("#close").disabled`))
	run("screenshot", shot("04-after-reload"))

	// Stop a thread mid-reply.
	run("send another message", chromedp.SendKeys("#composer-text", "One more thing"), chromedp.Click("#send"))
	g.waitStarted(t)
	run("stop it", chromedp.WaitVisible(`#log li[data-kind="streaming"]`), poll(`!document.querySelector("#stop").disabled`), chromedp.Click("#stop"),
		chromedp.WaitVisible(`#log [data-kind="stopped"]`), chromedp.WaitVisible(`#log [data-kind="error"]`))
	if s := text(`#log [data-kind="error"]`); !strings.Contains(s, "reply was stopped") || eval[int](b, `document.querySelectorAll("#log .sys.error").length`) != 0 {
		t.Fatalf("the stopped reply is shown as %q, or as an error", s)
	}
	waitIdle(t, srv)
	run("see it idle", poll(`document.querySelector("#thread-status").textContent === "idle"`))
	run("screenshot", shot("05-stopped"))

	run("phone width", chromedp.EmulateViewport(390, 844), poll(sendFits), shot("06-phone"))
	run("phone width, typing", chromedp.SendKeys("#composer-text", "a long message that wraps over the lines of the box at phone width"),
		poll(sendFits+` && !document.querySelector("#send").disabled`), shot("07-phone-typing"))
	t.Logf("screenshots in %s", b.dir)
}

// consoleItemsScript is the model of TestConsoleItemsInBrowser, one list
// of steps per thread.
const consoleItemsScript = `{"default": [{"text": "Hello."}, {"text": "Again."}, {"text": "Third."}],
 "threads": {
  "md": [{"text": "Here is **bold**, ` + "`code`" + ` and a list:\n\n- one\n- two\n\n<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 1\"> [click](javascript:window.pwned=1)"},
         {"text": "Switched."}, {"text": "Switched again."}],
  "ls": [{"text": "Listing.", "tool_call": {"name": "run_command", "args": {"command": "ls", "args": ["-1"]}}},
         {"text": "Noted."}, {"text": "Noted."}, {"text": "Noted."}, {"text": "Noted."}, {"text": "Noted."}, {"text": "Noted."}],
  "tz": [{"text": "Checking.", "tool_call": {"name": "get_time", "args": {"timezone": "Mars/Olympus"}}}, {"text": "No such zone."}],
  "nap": [{"text": "Napping.", "tool_call": {"name": "sleep", "args": {"seconds": 3600}}}, {"text": "Awake."}],
  "views": [{"text": "Showing.", "tool_call": {"name": "show_views", "args": {}}}, {"text": "Shown."}]
 }}`

// viewsTools is a RAP tool server whose show_views updates a "diff" view
// (the RAP spec's) and a view of a type no client knows.
func viewsTools(t *testing.T) string {
	t.Helper()
	kit, err := rap.NewServer(rap.ServerConfig{Name: "views", Tools: []rap.Tool{
		{Name: "show_views", Description: "show views", InputSchema: json.RawMessage(`{"type":"object"}`), Run: func(ctx context.Context, c *rap.Call) error {
			if err := c.View(ctx, "diff", map[string]string{"patch": "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n"}); err != nil {
				return err
			}
			if err := c.View(ctx, "tasks", map[string]any{"owner": "ci", "items": []map[string]string{{"name": "build", "state": "done"}, {"name": "test", "state": "running"}}}); err != nil {
				return err
			}
			return c.Result(ctx, "views shown")
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
	return hs.URL
}

// TestConsoleItemsInBrowser drives the rest of the console: a new thread
// started as an agent picked from GET /agents; markdown rendered and made
// harmless; a command's multi-line output kept as lines; a tool-side
// error shown failed; a sleep woken early shown as such, not as an error;
// views by their type; model and agent switches; the thread search; and
// times and durations on hover from the events' times.
func TestConsoleItemsInBrowser(t *testing.T) {
	b := newBrowser(t)
	dir := t.TempDir()
	for _, f := range []string{"alpha", "beta", "gamma"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script, err := model.ParseScript([]byte(consoleItemsScript))
	if err != nil {
		t.Fatal(err)
	}
	var cat model.Catalog
	if err := json.Unmarshal([]byte(`{"default": "a", "models": [
	  {"name": "a", "provider": "scripted", "model_id": "a", "context_window": 100000, "max_output_tokens": 100, "scripted": {"script": {"default": []}}},
	  {"name": "b", "provider": "scripted", "model_id": "b", "context_window": 100000, "max_output_tokens": 100,
	   "scripted": {"script": {"default": [{"text": "one"}, {"text": "from b"}, {"text": "b again"}]}}}]}`), &cat); err != nil {
		t.Fatal(err)
	}
	srv := startServerWith(t, Config{
		ToolServers:  []string{viewsTools(t)},
		ExampleTools: &ExampleTools{GetTime: true, RunCommand: &RunCommand{Allow: []string{"ls"}, Dir: dir}},
		Models:       &cat,
		Agents: []AgentConfig{
			{Agent: runtime.Agent{Name: "helper", Instructions: "Help."}},
			{Agent: runtime.Agent{Name: "writer", Instructions: "Write."}},
		},
		DefaultAgent: "helper",
	}, model.NewScripted(script))
	run, text, shot := b.run, b.text, b.shot

	// A new thread, as the agent picked.
	run("open the console", chromedp.Navigate(srv.URL()+"/"), chromedp.WaitVisible("#new-thread-agent"),
		poll(`[...document.querySelectorAll("#new-thread-agent option")].map(o => o.value).join() === "helper,writer"`),
		poll(`document.querySelector("#new-thread-agent").value === "helper"`))
	run("start thread md as writer", chromedp.SetValue("#new-thread-agent", "writer"), chromedp.SendKeys("#new-thread-id", "md"+kb.Enter),
		chromedp.WaitVisible("#composer-text:not([disabled])"), chromedp.SendKeys("#composer-text", "Show me markdown"+kb.Enter))

	// Markdown, rendered by the server, with nothing able to run.
	run("see the markdown", chromedp.WaitVisible(`#log [data-kind="turn"] .text.rendered strong`))
	if s := text(`#log [data-kind="turn"] .text strong`); s != "bold" {
		t.Fatalf("bold %q", s)
	}
	type mdView struct {
		Items, Codes, Scripts, Images, JSLinks int
		Pwned                                  bool
	}
	v := eval[mdView](b, `(() => { const t = document.querySelector('#log [data-kind="turn"] .text'); return {
		items: t.querySelectorAll("li").length, codes: t.querySelectorAll("code").length, scripts: document.querySelectorAll("#log script").length,
		images: t.querySelectorAll("img").length, jslinks: t.querySelectorAll('a[href^="javascript"]').length, pwned: window.pwned !== undefined }; })()`)
	if v.Items != 2 || v.Codes != 1 || v.Scripts != 0 || v.Images != 0 || v.JSLinks != 0 || v.Pwned {
		t.Fatalf("the rendered markdown: %+v", v)
	}
	if th := getThread(t, srv, "md"); th.State.Agent != "writer" {
		t.Fatalf("thread md runs as %q, want the agent picked, writer", th.State.Agent)
	}

	// Switch the model, then the agent: both recorded in the thread.
	run("see the switches", poll(`document.querySelector("#agent-switch").value === "writer" && document.querySelector("#model-switch").value === "a"`),
		poll(`!document.querySelector("#model-switch").disabled`))
	run("screenshot", shot("11-markdown"))
	run("switch the model", chromedp.SetValue("#model-switch", "b"),
		chromedp.WaitVisible(`#log [data-kind="model_switched"]`))
	run("switch the agent", chromedp.SetValue("#agent-switch", "helper"),
		chromedp.WaitVisible(`#log [data-kind="agent_switched"]`), poll(`document.querySelector("#agent-switch").value === "helper"`))
	waitIdle(t, srv)
	if th := getThread(t, srv, "md"); th.State.Model != "b" || th.State.Agent != "helper" {
		t.Fatalf("after the switches thread md runs %q as %q", th.State.Model, th.State.Agent)
	}

	// A command's output keeps its lines.
	postMessage(t, srv, "ls", `{"text":"List the files"}`)
	run("open ls", chromedp.Navigate(srv.URL()+"/#ls"),
		poll(`[...document.querySelectorAll('#log [data-kind="subscription_event"]')].some(li => li.innerText.includes("alpha\nbeta\ngamma"))`))
	if s := text(`#log details[data-kind="tool_call"] .mark`); s != "done" {
		t.Fatalf("run_command's mark %q", s)
	}
	run("screenshot", shot("12-command-output"))

	// A tool-side error ("error: ..." from get_time) is a failure.
	postMessage(t, srv, "tz", `{"text":"Time on Mars?"}`)
	run("open tz", chromedp.Navigate(srv.URL()+"/#tz"), chromedp.WaitVisible(`#log details[data-kind="tool_call"][data-state="failed"]`))
	if s := text(`#log details[data-kind="tool_call"] .mark`); s != "failed" {
		t.Fatalf("get_time's mark %q", s)
	}

	// A sleep woken early by a message is not an error; Stop and Close
	// apply while it sleeps.
	postMessage(t, srv, "nap", `{"text":"Take a nap"}`)
	run("open nap", chromedp.Navigate(srv.URL()+"/#nap"), chromedp.WaitVisible(`#log details[data-kind="sleep"]`),
		poll(`document.querySelector("#thread-status").textContent.startsWith("sleeping")`),
		poll(`!document.querySelector("#stop").disabled && !document.querySelector("#close").disabled`))
	run("wake it", chromedp.SendKeys("#composer-text", "Wake up"+kb.Enter), chromedp.WaitVisible(`#log details[data-kind="sleep"][data-state="woken"]`),
		poll(`[...document.querySelectorAll('#log [data-kind="turn"]')].some(e => e.textContent.includes("Awake."))`))
	if s, isErr := text(`#log details[data-kind="sleep"] .mark`), eval[bool](b, `document.querySelector('#log details[data-kind="sleep"]').classList.contains("error")`); s != "woken early" || isErr {
		t.Fatalf("the sleep woken early is marked %q (error class %v)", s, isErr)
	}
	run("screenshot", shot("13-sleep-woken"))

	// Views by their type: a diff as a diff, an unknown type as fields.
	postMessage(t, srv, "views", `{"text":"Show views"}`)
	run("open views", chromedp.Navigate(srv.URL()+"/#views"), chromedp.WaitVisible(`#views [data-view="diff"] .diff .add`),
		chromedp.WaitVisible(`#views [data-view="tasks"] table`))
	if s := text(`#views [data-view="diff"] .diff .path`); s != "x.go" {
		t.Fatalf("diff view's file %q", s)
	}
	if n := eval[int](b, `document.querySelectorAll('#views [data-view="tasks"] tbody tr').length`); n != 2 {
		t.Fatalf("tasks view has %d rows", n)
	}
	if s := text(`#views`); strings.Contains(s, "{") || strings.Contains(s, `"`) {
		t.Fatalf("views shown as JSON: %q", s)
	}
	run("screenshot", shot("14-views"))

	// The search box keeps the matching threads.
	run("search", chromedp.SendKeys("#thread-search", "na"),
		poll(`[...document.querySelectorAll("#tree > li[data-thread]")].filter(li => !li.hidden).map(li => li.dataset.thread).join() === "nap"`))
	run("screenshot", shot("15-search"))

	// Times and durations on hover, from the events' times (fed to the
	// page's renderer, as a server that sends them would).
	run("open a scratch thread", chromedp.Navigate(srv.URL()+"/#scratch"), chromedp.WaitVisible("#composer-text:not([disabled])"))
	title := eval[string](b, `(() => {
		render.message({id: "scratch#0", thread_id: "scratch", kind: "message", text: "hi", time: "2026-01-02T03:04:00Z"});
		render.tool_call({id: "scratch#1", thread_id: "scratch", kind: "tool_call", call_id: "c1", tool: "probe", args: "{}", time: "2026-01-02T03:04:05Z"});
		render.tool_result({id: "scratch#2", thread_id: "scratch", kind: "tool_result", call_id: "c1", tool: "probe", text: "ok", time: "2026-01-02T03:04:07.500Z"});
		return document.querySelector('#log details[data-call="c1"]').title; })()`)
	if !strings.Contains(title, "took 2.5 s") {
		t.Fatalf("the tool call's hover text %q, want its duration", title)
	}
	if n := eval[int](b, `document.querySelectorAll('#log [data-kind="message"] .who time').length`); n != 1 {
		t.Fatalf("the message shows %d times", n)
	}
	if n := eval[int](b, `(() => { render.turn({id: "scratch#3", kind: "turn", text: "no time"}); return document.querySelectorAll('#log [data-kind="turn"][title]').length; })()`); n != 0 {
		t.Fatalf("an event without a time has a hover time (%d)", n)
	}

	run("phone width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(srv.URL()+"/#md"), chromedp.WaitVisible(`#log [data-kind="turn"] .text.rendered`),
		poll(sendFits), shot("16-phone-markdown"))
	t.Logf("screenshots in %s", b.dir)
}

// TestConsoleForkFromHere: each history item of the console has a "fork
// from here" button; clicking the first reply's forks the thread after that
// reply (its first two items) and opens the fork.
func TestConsoleForkFromHere(t *testing.T) {
	b := newBrowser(t)
	srv := startServerWith(t, Config{}, newCountingModel(mustScripted(t, `{"default": [{"text": "First answer."}, {"text": "Second answer."}]}`)))
	const thread = "thr_forkui"
	postMessage(t, srv, thread, `{"text":"one"}`)
	waitIdle(t, srv)
	postMessage(t, srv, thread, `{"text":"two"}`)
	waitIdle(t, srv)
	b.run("open the thread", chromedp.Navigate(srv.URL()+"/#"+thread),
		poll(`[...document.querySelectorAll('#log [data-kind="turn"]')].some(e => e.textContent.includes("Second answer."))`),
		poll(`document.querySelectorAll('#log li button.fork').length >= 4`))
	b.run("fork after the first reply", js(`document.querySelector('#log li[data-kind="turn"] button.fork').click()`),
		poll(`location.hash.startsWith("#fork_")`), b.shot("fork-opened"))
	id := strings.TrimPrefix(eval[string](b, `decodeURIComponent(location.hash)`), "#")
	th := getThread(t, srv, id)
	if th.Inherited != 2 || th.State.Fork == nil || th.State.Fork.Thread != thread || len(th.Items) != 2 || th.Items[1].Text != "First answer." {
		t.Fatalf("the fork %s: inherited %d, state %+v, %s", id, th.Inherited, th.State, kinds(th.Items))
	}
}

func mustScripted(t *testing.T, script string) runtime.Model {
	t.Helper()
	s, err := model.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return model.NewScripted(s)
}
