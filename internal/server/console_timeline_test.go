package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// pacedModel is a scripted model that takes a fixed time per completion,
// as a real one takes some: the timeline bar then has generating time to
// show. (The test waits on signals, never on this pace.)
type pacedModel struct {
	inner runtime.Model
	pace  time.Duration
}

func (m pacedModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	t := time.NewTimer(m.pace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return m.inner.Complete(ctx, req, w)
}

// TestConsoleTimelineInBrowser: the console shows a thread's timeline as
// a bar, with a live wait on a tool while the tool holds the call and
// the wait closed with the model's time around it once the result is in,
// and the overview per agent in the side bar. Its screenshot
// (timeline.png in the artifact directory) is docs/img/console-timeline.png.
func TestConsoleTimelineInBrowser(t *testing.T) {
	b := newBrowser(t)
	base, invocations := holdingTool(t)
	script, err := model.ParseScript([]byte(`{"default": [{"text": "Starting the job.", "tool_call": {"name": "hold", "args": {}}}, {"text": "The job is done."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := startServerWith(t, Config{ToolServers: []string{base}}, pacedModel{inner: model.NewScripted(script), pace: 400 * time.Millisecond})
	run, text, shot := b.run, b.text, b.shot

	const thread = "thr_timeline"
	postMessage(t, srv, thread, `{"text":"Run the job, please."}`)
	inv := nextInvocation(t, invocations)
	run("open the thread", chromedp.Navigate(srv.URL()+"/#"+thread), chromedp.WaitVisible("#timeline"),
		poll(`!!document.querySelector('#timeline .tl-seg[data-cause="waiting_tool"]')`))
	if s := text("#timeline .tl-head"); !strings.Contains(s, "Where the time went") || !strings.Contains(s, "wait fraction") {
		t.Fatalf("timeline head %q", s)
	}

	if code := postCallback(t, srv, inv.CallbackURL, thread, inv.ID, "job output"); code != 200 {
		t.Fatalf("callback answered %d", code)
	}
	waitIdle(t, srv)
	run("see the finished turn's bar", poll(`document.querySelectorAll('#timeline .tl-seg[data-cause="generating"]').length === 2`),
		poll(`document.querySelector('#timeline .tl-seg[data-cause="waiting_tool"]').title.startsWith("waiting on tools (hold)")`))
	// The bar is in the order of the turn: generating, the wait, generating.
	order := eval[[]string](b, `[...document.querySelectorAll('#timeline .tl-seg')].map(s => s.dataset.cause).filter(c => c !== "in_slice" && c !== "queued")`)
	if len(order) != 3 || order[0] != "generating" || order[1] != "waiting_tool" || order[2] != "generating" {
		t.Fatalf("bar segments %v, want generating, waiting_tool, generating", order)
	}
	run("see the agents overview", chromedp.Reload(), chromedp.WaitVisible(`#agents-overview li .tl-bar`),
		chromedp.WaitVisible(`#timeline .tl-bar`))
	if s := text("#agents-overview li"); !strings.Contains(s, "waiting") {
		t.Fatalf("agents overview %q", s)
	}
	run("screenshot", shot("timeline"))
	t.Logf("screenshots in %s", b.dir)
}
