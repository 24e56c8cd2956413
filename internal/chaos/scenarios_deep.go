package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The scenarios with depth and repetition: three-level trees whose
// grandchildren send the reports and handle the threaded events, two of
// one thing in one thread (reports from one child, sleeps, asynchronous
// calls one after the other), a final event on a threaded subscription,
// and a wedged tool that answers "alive" to every status check until its
// deadline ends the call (liveness on, driven by the run's clock).
func init() {
	Register(grandchildReports)
	Register(grandchildEvent)
	Register(twoSleeps)
	Register(chainedCalls)
	Register(wedgedCall)
}

// grandchildReports: main spawns delta, delta spawns epsilon, epsilon
// reports twice (report_to_parent, then close_thread with a report, an
// asynchronous call between them so they reach delta in two slices), delta closes
// with its own report to main once both are in.
func grandchildReports() *Scenario {
	return &Scenario{Name: "grandchild_reports", End: End{Threads: 3, Closed: 2, Replies: 4},
		Reach: reach(base, dispatch, send),
		Script: &model.Script{
			Default: []model.Step{
				{ToolCall: call("spawn_thread", `{"instructions":"delta task: review the compiler","child_of":["main"]}`)},
				{Text: "Delta is on it."},
				{Text: "Delta reported: two bugs."},
			},
			Match: []model.MatchRule{
				{Contains: "delta task", Steps: []model.Step{
					{ToolCall: call("spawn_thread", `{"instructions":"epsilon task: read the lexer","child_of":["main","$THREAD"]}`)},
					{Text: "Epsilon reads the lexer."},
					{Text: "The first bug is noted."},
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"two bugs: lexer and parser"}`)},
				}},
				{Contains: "epsilon task", Steps: []model.Step{
					{ToolCall: call("report_to_parent", `{"report":"bug one: the lexer drops tabs"}`)},
					{Text: "Checking the parser.", ToolCall: call("work", `{"check":"parser"}`)},
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"bug two: the parser loops"}`)},
				}},
			},
		},
		Steps: []Step{user("u1", "review the compiler"), answerWork("r1", 0, "the parser loops on empty input", false)}}
}

// grandchildEvent: main spawns zeta, zeta subscribes to the deploy, and
// the deploy's one event, a final threaded one, is handled by a temporary
// grandchild that reports to zeta, which closes with a report to main. An
// event after the final one is refused.
func grandchildEvent() *Scenario {
	return &Scenario{Name: "grandchild_event", End: End{Threads: 3, Closed: 2, Replies: 3},
		Reach: reach(base, dispatch, send),
		Script: &model.Script{
			Default: []model.Step{
				{ToolCall: call("spawn_thread", `{"instructions":"zeta task: watch the deploy","child_of":["main"]}`)},
				{Text: "Zeta watches the deploy."},
				{Text: "Zeta says the deploy is live."},
			},
			Match: []model.MatchRule{
				{Contains: "zeta task", Steps: []model.Step{
					{Text: "Subscribing.", ToolCall: call("work", `{"watch":"deploy"}`)},
					{Text: "Subscribed to the deploy."},
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"the deploy is live"}`)},
				}},
				{Contains: "deploy finished", Steps: []model.Step{
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"deploy finished: v2 is live"}`)},
				}},
			},
		},
		Steps: []Step{user("u1", "watch the deploy through zeta"), answerWork("sub-ok", 0, "watching deploy", true),
			eventFor("e1", 0, "deploy finished: v2", false, true), eventFor("e2", 0, "too late", false, false)}}
}

// twoSleeps: one thread sleeps, wakes, sleeps again and wakes again.
func twoSleeps() *Scenario {
	return &Scenario{Name: "two_sleeps", End: End{Threads: 1, Replies: 1}, Reach: reach(base, dispatch, schedule),
		SingleThread: true,
		Script: &model.Script{Default: []model.Step{
			{Text: "A first nap.", ToolCall: call("sleep", `{"seconds":60}`)},
			{Text: "A second nap.", ToolCall: call("sleep", `{"seconds":120}`)},
			{Text: "Rested twice."},
		}},
		Steps: []Step{user("u1", "nap twice"), fire(false), fire(false)}}
}

// chainedCalls: a result followed by a second asynchronous call in the
// same thread, then a third that the tool answers at once.
func chainedCalls() *Scenario {
	return &Scenario{Name: "chained_calls", End: End{Threads: 1, Replies: 1}, Reach: reach(base, dispatch),
		SingleThread: true,
		Script: &model.Script{Default: []model.Step{
			{Text: "Step one.", ToolCall: call("work", `{"step":1}`)},
			{Text: "Step two.", ToolCall: call("work", `{"step":2}`)},
			{Text: "Step three.", ToolCall: call("run_command", `{"command":"make step3"}`)},
			{Text: "All three steps are done."},
		}},
		Steps: []Step{user("u1", "run the three steps"), answerWork("r1", 0, "step 1 ok", false), answerWork("r2", 1, "step 2 ok", false)}}
}

// wedgedLiveness is the wedged scenario's liveness: checks at 10, 30 and
// 60 minutes, the deadline at 60.
var wedgedLiveness = runtime.Liveness{Deadline: time.Hour, CheckAfter: 10 * time.Minute, MaxCheckInterval: time.Hour}

// wedgedCall: a call to a tool that never answers and says "alive" at
// every status check ends at its deadline with an error the model reads.
// Without a dedup store: with one, the slice that dispatches records the
// call as sent in the dedup store and its deadline is counted from the
// first check instead (runtime's checkPending), so a crash that forces the
// second commit moves the deadline by up to CheckAfter.
func wedgedCall() *Scenario {
	return &Scenario{Name: "wedged_tool", End: End{Threads: 1, Replies: 1}, Reach: reach(noDedup, dispatch, schedule),
		SingleThread: true, Liveness: &wedgedLiveness, Wedged: "migrate", NoDedup: true,
		Script: &model.Script{Default: []model.Step{
			{Text: "Migrating.", ToolCall: call("migrate", `{"db":"orders"}`)},
			{Text: "The migration timed out; I will look at the database."},
		}},
		Steps: []Step{user("u1", "migrate the orders database"), timeline()}}
}

// eventFor sends a subscription event for the n-th "work" call, to the
// thread that made it.
func eventFor(id string, n int, text string, associative, final bool) Step {
	return func(ctx context.Context, r *Run) error {
		calls := r.Calls("work")
		if len(calls) <= n {
			return fmt.Errorf("work call %d was never dispatched (%d calls)", n, len(calls))
		}
		c := calls[n]
		return r.Send(ctx, runtime.Message{V: 1, ID: id, ThreadID: c.ThreadID, Kind: runtime.KindEvent,
			ToolCallID: c.CallID, Text: text, Associative: associative, Final: final})
	}
}

func timeline() Step {
	return func(ctx context.Context, r *Run) error { return r.Timeline(ctx) }
}
