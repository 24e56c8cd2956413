package server

import (
	"math"
	"net/http"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/timeline"
)

func getTimeline(t *testing.T, srv *Server, thread string) timelineResponse {
	t.Helper()
	var tl timelineResponse
	if code := do(t, http.MethodGet, srv.URL()+"/threads/"+thread+"/timeline", "", &tl); code != http.StatusOK {
		t.Fatalf("GET timeline of %s: status %d", thread, code)
	}
	return tl
}

// TestTimelineOfAToolWaitAcrossARestart: a thread waits on a real RAP
// tool; its timeline ends in an open waiting_tool interval; serve
// restarts on the same store; the result arrives and the timeline, read
// back from the committed history alone, has the wait closed at the
// result's arrival, the tool's latency, and the stats by tool and agent
// name it.
func TestTimelineOfAToolWaitAcrossARestart(t *testing.T) {
	t.Parallel()
	base, invocations := holdingTool(t)
	cfg := Config{Data: t.TempDir(), Script: testdata(t, "hold_script.json"), ToolServers: []string{base},
		CallbackKeys: "k1:c2FtZS1rZXlzLWFjcm9zcy1ib3RoLWNvbnZlcnNhdGlvbnMtIQ"}
	const thread = "tl"

	first := startServer(t, cfg)
	postMessage(t, first, thread, `{"text":"start the job","id":"m1"}`)
	inv := nextInvocation(t, invocations)
	waitIdle(t, first)
	tl := getTimeline(t, first, thread)
	last := tl.Intervals[len(tl.Intervals)-1]
	if last.Cause != timeline.WaitingTool || last.Tool != "hold" || !last.Open || last.End != tl.Now {
		t.Fatalf("while the tool holds the call, the last interval is %+v (now %v), want an open wait on hold", last, tl.Now)
	}
	first.Stop()

	second := startServer(t, cfg)
	if code := postCallback(t, second, inv.CallbackURL, thread, inv.ID, "held no more"); code != http.StatusOK {
		t.Fatalf("callback answered %d", code)
	}
	waitIdle(t, second)
	th := getThread(t, second, thread)
	var call, result *runtime.Item
	for i := range th.Items {
		switch it := &th.Items[i]; it.Kind {
		case runtime.ItemToolCall:
			call = it
		case runtime.ItemToolResult:
			result = it
		}
	}
	if call == nil || result == nil || result.Input == "" {
		t.Fatalf("history %s, want the call and its result", kinds(th.Items))
	}
	tl = getTimeline(t, second, thread)
	var wait *timeline.Interval
	for i := range tl.Intervals {
		if iv := &tl.Intervals[i]; iv.Cause == timeline.WaitingTool {
			wait = iv
		}
	}
	if wait == nil || wait.Tool != "hold" || wait.Open || wait.Start != call.At || wait.End != result.At {
		t.Fatalf("wait %+v, want hold's from the call's commit %v to the result's arrival %v", wait, call.At, result.At)
	}
	if len(tl.Tools) != 1 || tl.Tools[0].Tool != "hold" || tl.Tools[0].Ms != int64(result.At-call.At) {
		t.Fatalf("tool latencies %+v, want hold's %d ms", tl.Tools, result.At-call.At)
	}
	if len(tl.Queue) != 2 || tl.Queue[1].Tool != "hold" || tl.Queue[1].Ms != int64(result.Took) {
		t.Fatalf("queue delays %+v, want the message's and the result's (%d ms)", tl.Queue, result.Took)
	}
	if tl.WaitFraction <= 0 || tl.WaitFraction > 1 || math.Abs(tl.WaitFraction-tl.Totals.WaitFraction()) > 1e-6 || len(tl.Turns) != 1 {
		t.Fatalf("wait fraction %v, totals %v, turns %+v", tl.WaitFraction, tl.Totals, tl.Turns)
	}

	var byTool, byAgent statsResponse
	if code := do(t, http.MethodGet, second.URL()+"/stats?by=tool", "", &byTool); code != http.StatusOK {
		t.Fatalf("stats by tool: %d", code)
	}
	if len(byTool.Groups) != 1 || byTool.Groups[0].Key != "hold" || byTool.Groups[0].ToolLatency.Count != 1 ||
		math.Abs(byTool.Groups[0].Totals[timeline.WaitingTool]-wait.Seconds()) > 1e-6 {
		t.Fatalf("stats by tool %+v, want hold's wait", byTool.Groups)
	}
	if code := do(t, http.MethodGet, second.URL()+"/stats", "", &byAgent); code != http.StatusOK || byAgent.By != "agent" ||
		byAgent.Threads != 1 || math.Abs(byAgent.WaitFraction-tl.WaitFraction) > 1e-9 {
		// Summed in another order, the same fraction can differ in its last bits.
		t.Fatalf("stats by agent (%d): %+v, want the one thread's wait fraction %v", code, byAgent, tl.WaitFraction)
	}
	var bad apiError
	if code := do(t, http.MethodGet, second.URL()+"/stats?by=model", "", &bad); code != http.StatusBadRequest || bad.Field != "by" {
		t.Fatalf("stats by model: %d %+v, want 400 naming by", code, bad)
	}
}
