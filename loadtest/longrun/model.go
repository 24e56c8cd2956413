package main

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// orchestrator is the simulated model: the root thread answers each user
// turn (spawning a child every SpawnEvery turns, opening a subscription and
// cancelling it later), children work two completions and report, and a
// compaction child answers with a summary of SummaryBytes. It reports as
// input tokens a quarter of the bytes it is sent, so compaction starts at
// the policy's window as it would with a real model.
type orchestrator struct {
	root         string
	replyBytes   int
	summaryBytes int
	window       float64 // tokens at which the engine compacts (window x threshold)

	mu          sync.Mutex
	sub         string // the active subscription's call ID ("" when none)
	completions int
	tokens      int64 // input tokens of every completion
	compactions int
	loops       int
	lastSummary string // the summary the root's previous completion started from
	sawSummary  bool   // that completion was the first after a new summary
}

const compactionMark = "Summarise the conversation"

// counts returns the totals so far.
func (o *orchestrator) counts() (completions int, tokens int64, compactions, loops int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.completions, o.tokens, o.compactions, o.loops
}

func (o *orchestrator) setSubscription(id string) {
	o.mu.Lock()
	o.sub = id
	o.mu.Unlock()
}

func (o *orchestrator) subscription() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sub
}

// Complete implements runtime.Model.
func (o *orchestrator) Complete(_ context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	in := 0
	for i := range req.History {
		it := &req.History[i]
		if it.Kind == runtime.ItemSummary {
			in += len(it.Text) // providers send a summary's text only
			continue
		}
		in += len(it.Text) + len(it.Args) + len(it.Reasoning) + len(it.Name)
	}
	in = in/4 + 200 // the tools' specs and framing
	var last *runtime.Item
	if n := len(req.History); n > 0 {
		last = &req.History[n-1]
	}
	out := ""
	switch {
	case last != nil && last.Kind == runtime.ItemUser && strings.Contains(last.Text, compactionMark):
		o.mu.Lock()
		o.compactions++
		o.mu.Unlock()
		out = "SUMMARY of the orchestration so far. " + filler(o.summaryBytes)
		w.Text(out)
	case req.ThreadID != o.root:
		// A child: a progress report, then close with the final report.
		if req.Turn() == 0 {
			w.Text("Working on the child task. " + filler(o.replyBytes/2))
			w.ToolCall("", "report_to_parent", `{"report":"halfway there"}`)
		} else {
			w.ToolCall("", "close_thread", fmt.Sprintf(`{"thread_id":%q,"report_to_parent":"done: the part is built"}`, req.ThreadID))
		}
	default:
		o.rootTurn(req, last, w, in)
	}
	w.Usage(runtime.Usage{Input: in, Output: len(out)/4 + 20, Total: in + len(out)/4 + 20})
	o.mu.Lock()
	o.completions++
	o.tokens += int64(in)
	o.mu.Unlock()
	return nil
}

// rootTurn is the orchestrator's own completion.
func (o *orchestrator) rootTurn(req *runtime.CompletionRequest, last *runtime.Item, w runtime.TurnWriter, in int) {
	o.mu.Lock()
	// A loop: the first completion after a new summary is still above the
	// compaction threshold, so compaction starts again at once.
	if len(req.History) > 0 && req.History[0].Kind == runtime.ItemSummary {
		if s := req.History[0].Input; s != o.lastSummary {
			o.lastSummary = s
			if float64(in) >= o.window {
				o.loops++
			}
		}
	}
	sub := o.sub
	o.mu.Unlock()
	var turn int
	if last != nil && last.Kind == runtime.ItemUser {
		fmt.Sscanf(last.Text, "turn %d", &turn)
	}
	switch {
	case turn > 0 && turn%spawnEvery == 0:
		w.Text("Delegating a part.")
		w.ToolCall("", "spawn_thread", fmt.Sprintf(`{"instructions":"child task %d: build part %d","child_of":[%q]}`, turn, turn/spawnEvery, o.root))
	case turn > 0 && turn%subEvery == subOpenAt && sub == "":
		w.Text("Watching the pipeline.")
		w.ToolCall("", "watch", `{"pipeline":"main"}`)
	case turn > 0 && turn%subEvery == subCloseAt && sub != "":
		w.Text("Done watching.")
		w.ToolCall("", "cancel_subscription", fmt.Sprintf(`{"tool_call_id":%q}`, sub))
		o.setSubscription("")
	case last != nil && last.Kind == runtime.ItemToolResult:
		w.Text("Noted. " + filler(o.replyBytes/4))
	default:
		w.Text(fmt.Sprintf("Answer to turn %d. ", turn) + filler(o.replyBytes))
	}
}

// The workload's rhythm, in user turns.
const (
	spawnEvery = 50
	subEvery   = 100
	subOpenAt  = 25
	subCloseAt = 45
	eventAt1   = 30 // subscription events arrive at these turns
	eventAt2   = 38
)

// watchTool is the asynchronous tool that opens a subscription; the driver
// answers its calls.
type watchTool struct {
	mu    sync.Mutex
	calls []runtime.Invocation
}

func (t *watchTool) Dispatch(_ context.Context, inv runtime.Invocation) error {
	t.mu.Lock()
	t.calls = append(t.calls, inv)
	t.mu.Unlock()
	return nil
}

// take returns the calls dispatched since the last take.
func (t *watchTool) take() []runtime.Invocation {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.calls
	t.calls = nil
	return c
}

const words = "the build of the parser finished and the tests of the scheduler ran against the durable store while " +
	"the orchestrator planned the next part of the migration with the children reporting their progress "

// filler returns n bytes of prose-like text.
func filler(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words)
	}
	return b.String()[:n]
}
