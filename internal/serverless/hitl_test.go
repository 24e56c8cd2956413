package serverless_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless/lambdatest"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// deployTool is a RAP tool that shows a view, asks the user to choose a
// stage (user_choice, answered at its own response_url) and returns the
// chosen stage as its result.
type deployTool struct {
	srv     *httptest.Server
	answers chan rap.ChoiceResponse
}

var deployStages = []string{"staging", "production"}

func newDeployTool(t *testing.T) *deployTool {
	d := &deployTool{answers: make(chan rap.ChoiceResponse, 4)}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a rap.ChoiceResponse
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil || r.Method != http.MethodPost {
			http.Error(w, "want a POSTed {id, selected}", http.StatusBadRequest)
			return
		}
		d.answers <- a
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *deployTool) tool() rap.Tool {
	return rap.Tool{Name: "deploy", Description: "Deploys to a stage the user chooses.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Run: func(ctx context.Context, c *rap.Call) error {
			if err := c.View(ctx, "deploy", map[string]string{"stage": "choosing"}); err != nil {
				return err
			}
			if err := c.Choice(ctx, "Deploy to which stage?", deployStages, 0, d.srv.URL+"/choices/"+c.ID); err != nil {
				return err
			}
			select {
			case a := <-d.answers:
				if a.ID != c.ID || a.Selected < 0 || a.Selected >= len(deployStages) {
					return c.Result(ctx, fmt.Sprintf("error: answer %+v does not fit the choice of call %s", a, c.ID))
				}
				return c.Result(ctx, "deployed to "+deployStages[a.Selected])
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
}

// outputsOf waits until thread's events on the output queue satisfy done
// and returns them by kind (their texts, in arrival order).
func (p *inProcess) outputsOf(t *testing.T, thread string, done func(map[string][]string) bool) map[string][]string {
	t.Helper()
	var by map[string][]string
	err := p.outputs.WaitFor(30*time.Second, func(got []lambdatest.Received) bool {
		by = map[string][]string{}
		seen := map[string]bool{}
		for _, r := range got {
			ev, err := sqsq.DecodeOutput(r.Body)
			if err != nil || ev.ThreadID != thread || seen[ev.ID] {
				continue
			}
			seen[ev.ID] = true
			by[ev.Kind] = append(by[ev.Kind], ev.Text)
		}
		return done(by)
	})
	if err != nil {
		t.Fatalf("output events of %s: %v (have %q)", thread, err, by)
	}
	return by
}

// TestChoiceAndViewOnAWS: a tool's view_update and user_choice go
// through the AWS receiver (no 422) into the thread's history in the
// database, the output queue tells of both, the choice is answered the
// way `agentslice choose -queue-url` does (rap.AnswerChoice: the pending
// choice read from history, {id, selected} to the tool's response_url, a
// KindAnswer message on the input queue), and the thread goes on: the
// tool's result and the model's reply.
func TestChoiceAndViewOnAWS(t *testing.T) {
	p := startInProcess(t)
	thread := "hitl-" + time.Now().Format("150405.000")
	ctx := context.Background()

	p.send(t, thread, "m1", "please deploy")
	by := p.outputsOf(t, thread, func(by map[string][]string) bool { return len(by["view"]) > 0 && len(by["notice"]) > 0 })
	if v := by["view"][0]; v != `{"view_type":"deploy","content":{"stage":"choosing"}}` {
		t.Fatalf("view output %q", v)
	}
	if n := by["notice"][0]; !strings.Contains(n, "Deploy to which stage?") || !strings.Contains(n, "1. production") {
		t.Fatalf("notice output %q, want the choice and its options", n)
	}

	// The notice is published after its commit: the choice is in history.
	th, err := p.fn.Engine.History.Load(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if th.State.Pending == nil || th.State.Pending.Name != "deploy" {
		t.Fatalf("pending %+v, want the deploy call", th.State.Pending)
	}
	call := th.State.Pending.ID
	if v := runtime.LatestViews(th.Items); v["deploy"] == nil {
		t.Fatalf("no deploy view in history: %+v", v)
	}

	// Bad answers are refused before anything reaches the tool.
	if _, err := rap.AnswerChoice(ctx, http.DefaultClient, p.fn.Engine.History, p.queue, thread, call, 2, rap.RetryPolicy{}); !rap.IsAnswerError(err) ||
		!strings.Contains(err.Error(), "selected") {
		t.Fatalf("answer 2 of 2 options: %v, want an error naming selected", err)
	}
	if _, err := rap.AnswerChoice(ctx, http.DefaultClient, p.fn.Engine.History, p.queue, thread, "call_nope", 0, rap.RetryPolicy{}); !rap.IsAnswerError(err) ||
		!strings.Contains(err.Error(), "call") {
		t.Fatalf("answer on an unknown call: %v, want an error naming the call", err)
	}

	c, err := rap.AnswerChoice(ctx, http.DefaultClient, p.fn.Engine.History, p.queue, thread, "", 1, rap.RetryPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != call || c.Prompt != "Deploy to which stage?" {
		t.Fatalf("answered choice %+v, want the deploy call's", c)
	}
	p.outputsOf(t, thread, func(by map[string][]string) bool { return len(by["reply"]) > 0 })
	// The tool may post its result before the answer message is sent:
	// wait for the slice that consumed the answer, whichever came first.
	p.waitConsumed(t, thread, rap.AnswerMessage(th, call, c, 1).ID)

	th, err = p.fn.Engine.History.Load(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	var answered bool
	var result, last string
	for _, it := range th.Items {
		switch {
		case it.Kind == runtime.ItemMarker && it.Name == runtime.AnswerMarkerName && it.CallID == call:
			answered = it.Args == fmt.Sprintf(`{"id":%q,"selected":1}`, call)
		case it.Kind == runtime.ItemToolResult && it.CallID == call:
			result = it.Text
		case it.Kind == runtime.ItemAssistant:
			last = it.Text
		}
	}
	if !answered || result != "deployed to production" || last != "Deployed." || th.State.Pending != nil {
		t.Fatalf("after the answer: answer marker %v, result %q, last reply %q, pending %+v", answered, result, last, th.State.Pending)
	}
	if _, ok := rap.PendingChoiceOf(th, call); ok {
		t.Fatal("the choice is still pending after its answer")
	}
}

// waitConsumed waits for the slice line of thread that consumed message id.
func (p *inProcess) waitConsumed(t *testing.T, thread, id string) {
	t.Helper()
	for n := 1; ; n++ {
		got, err := p.logs.WaitSlices(thread, n, 30*time.Second)
		if err != nil {
			t.Fatalf("no slice of %s consumed %s: %v", thread, id, err)
		}
		for _, sl := range got {
			for _, m := range sl.MessageIDs {
				if m == id {
					return
				}
			}
		}
		n = len(got)
	}
}
