package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

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
	// The choice, answered before the reload, shows its question and answer.
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
		chromedp.WaitVisible(`#log [data-kind="stopped"]`), chromedp.WaitVisible(`#log .sys.error`))
	if s := text(`#log .sys.error`); !strings.Contains(s, "stopped by the user") {
		t.Fatalf("error line %q", s)
	}
	waitIdle(t, srv)
	run("see it idle", poll(`document.querySelector("#thread-status").textContent === "idle"`))
	run("screenshot", shot("05-stopped"))

	run("phone width", chromedp.EmulateViewport(390, 844), poll(sendFits), shot("06-phone"))
	run("phone width, typing", chromedp.SendKeys("#composer-text", "a long message that wraps over the lines of the box at phone width"),
		poll(sendFits+` && !document.querySelector("#send").disabled`), shot("07-phone-typing"))
	t.Logf("screenshots in %s", b.dir)
}
