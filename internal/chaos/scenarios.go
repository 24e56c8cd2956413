package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Root is the root thread of every scenario.
const Root = "main"

// Step is one outside input of a scenario: user messages, a tool's answer,
// a subscription event, a timer firing. The driver runs slices until no
// thread has mail after each step.
type Step func(ctx context.Context, r *Run) error

// Scenario is a scripted conversation and the outside inputs that drive it.
type Scenario struct {
	Name   string
	Script *model.Script
	Limits runtime.Limits
	// Compaction, when set, is the engine's compaction policy.
	Compaction *runtime.CompactionPolicy
	Steps      []Step
	// SingleThread says only the root thread ever runs (such scenarios
	// also run on the embedded System, whose threads run concurrently).
	SingleThread bool
	// End is the state every run of the scenario must end in.
	End End
	// Liveness, when set, turns the engine's liveness on (deadlines and
	// status checks armed through the run's timers; Timeline fires them
	// with the run's clock).
	Liveness *runtime.Liveness
	// NoDedup runs the scenario without the backend's dedup store, so a
	// slice that dispatched a call records it with a second commit (the
	// "sent" commit path) instead of a dedup record.
	NoDedup bool
	// Wedged names a tool of the scenario that never answers: each call
	// to it must be closed by the engine (its deadline), never by a result.
	Wedged string
	// Reach lists the crash points the scenario must pass: the matrix
	// fails when a declared point is never crashed at in it.
	Reach []runtime.CrashPoint
	// Ledger turns budgets on: the engine admits each completion against
	// its thread's limit and, through a ledger of the run's (kept across
	// its crashes, as a durable one is), its tree's (budget.go).
	Ledger bool
}

func call(name, args string) *model.StepCall {
	return &model.StepCall{Name: name, Args: json.RawMessage(args)}
}

func user(id, text string) Step {
	return func(ctx context.Context, r *Run) error {
		return r.Send(ctx, runtime.Message{V: 1, ID: id, ThreadID: Root, Kind: runtime.KindUser, Text: text})
	}
}

// answerWork answers the n-th call of the "work" tool.
func answerWork(id string, n int, text string, subscription bool) Step {
	return func(ctx context.Context, r *Run) error {
		calls := r.Calls("work")
		if len(calls) <= n {
			return fmt.Errorf("work call %d was never dispatched (%d calls)", n, len(calls))
		}
		c := calls[n]
		return r.Send(ctx, runtime.Message{V: 1, ID: id, ThreadID: c.ThreadID, Kind: runtime.KindToolResult,
			ToolCallID: c.CallID, Text: text, Subscription: subscription})
	}
}

// notice sends an oauth/user-choice notice for the n-th "work" call.
func notice(id string, n int, text string) Step {
	return func(ctx context.Context, r *Run) error {
		calls := r.Calls("work")
		if len(calls) <= n {
			return fmt.Errorf("work call %d was never dispatched", n)
		}
		return r.Send(ctx, runtime.Message{V: 1, ID: id, ThreadID: Root, Kind: runtime.KindNotice,
			ToolCallID: calls[n].CallID, Text: text})
	}
}

// event sends a subscription event for the first "work" call.
func event(id, text string, associative, final bool) Step {
	return func(ctx context.Context, r *Run) error {
		calls := r.Calls("work")
		if len(calls) == 0 {
			return fmt.Errorf("no subscription was started")
		}
		return r.Send(ctx, runtime.Message{V: 1, ID: id, ThreadID: Root, Kind: runtime.KindEvent,
			ToolCallID: calls[0].CallID, Text: text, Associative: associative, Final: final})
	}
}

func fire(late bool) Step {
	return func(ctx context.Context, r *Run) error { return r.FireTimers(ctx, late) }
}

// errNothingDue is FireTimers' error when no wake-up is due.
var errNothingDue = errors.New("no wake-up is due")

// errOnlyRepeats is FireTimers' error when every timer it fired had
// delivered its wake-up before.
var errOnlyRepeats = errors.New("no new wake-up is due: every timer that fired had fired before (re-armed by a restart)")

func subscribeSteps(after ...model.Step) []model.Step {
	return append([]model.Step{
		{Text: "Watching the build.", ToolCall: call("work", `{"watch":"ci"}`)},
		{Text: "Subscribed."},
	}, after...)
}

// Scenarios returns every scenario, the seven the reliability claim names
// first (plain turn, tool call, sync tool loop-back, spawn and report,
// threaded event, associative event, sleep), then the ones that reach the
// remaining paths (interruptions, cancelled timers, deferred reports,
// continuations), then the ones other files Register, in registration
// order. Each call builds them anew.
func Scenarios() []*Scenario {
	out := builtinScenarios()
	for _, f := range registered {
		out = append(out, f())
	}
	return out
}

// registered holds the scenarios other files of this package add.
var registered []func() *Scenario

// Register adds a scenario to Scenarios, and so to every matrix. Call it
// from an init function in the scenario's own file; give the scenario its
// End, its Reach and a golden snapshot (run the tests once with
// AGENTSLICE_CHAOS_UPDATE_GOLDEN=1 and review testdata/golden/<name>.json).
func Register(f func() *Scenario) { registered = append(registered, f) }

func builtinScenarios() []*Scenario {
	return []*Scenario{
		{Name: "plain_turn", End: End{Threads: 1, Replies: 2}, Reach: reach(base),
			SingleThread: true,
			Script:       &model.Script{Default: []model.Step{{Text: "Hello there."}, {Text: "Still here."}}},
			Steps:        []Step{user("u1", "hi"), user("u2", "are you there?")}},
		{Name: "tool_call", End: End{Threads: 1, Replies: 1}, Reach: reach(base, dispatch),
			SingleThread: true,
			Script: &model.Script{Default: []model.Step{
				{Text: "Listing.", ToolCall: call("run_command", `{"command":"ls"}`)},
				{Text: "Listed."},
			}},
			Steps: []Step{user("u1", "list the files")}},
		{Name: "sync_loop_back", End: End{Threads: 1, Replies: 1}, Reach: reach(base),
			SingleThread: true,
			Script: &model.Script{Default: []model.Step{
				{ToolCall: call("echo", `{"x":1}`)},
				{Text: "Once more.", ToolCall: call("echo", `{"x":2}`)},
				{Text: "Echoed twice."},
			}},
			Steps: []Step{user("u1", "echo twice")}},
		{Name: "spawn_report", End: End{Threads: 2, Closed: 1, Replies: 2}, Reach: reach(base, send),

			Script: &model.Script{
				Default: []model.Step{
					{Text: "Splitting the work.", ToolCall: call("spawn_thread", `{"instructions":"alpha task: check the parser","child_of":["main"]}`)},
					{Text: "The child is working."},
					{Text: "Alpha reported."},
				},
				Match: []model.MatchRule{{Contains: "alpha task", Steps: []model.Step{
					{ToolCall: call("report_to_parent", `{"report":"the parser is fine"}`)},
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD"}`)},
				}}},
			},
			Steps: []Step{user("u1", "check everything")}},
		{Name: "threaded_event", End: End{Threads: 3, Closed: 2, Subscriptions: []string{"main work"}, Replies: 2}, Reach: reach(base, dispatch, send),

			Script: &model.Script{
				Default: subscribeSteps(model.Step{Text: "The build failed; looking into it."}),
				Match: []model.MatchRule{
					{Contains: "build failed", Steps: []model.Step{
						{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"the build failed on main"}`)},
					}},
					{Contains: "heartbeat", Steps: []model.Step{
						{ToolCall: call("close_thread", `{"thread_id":"$THREAD"}`)},
					}},
				},
			},
			Steps: []Step{user("u1", "watch the build"), answerWork("sub-ok", 0, "watching ci", true),
				event("e1", "heartbeat: all green", false, false), event("e2", "build failed: 3 tests", false, false)}},
		{Name: "associative_event", End: End{Threads: 1, Replies: 3}, Reach: reach(base, dispatch),
			SingleThread: true,
			Script: &model.Script{Default: subscribeSteps(
				model.Step{Text: "Line 1 noted."},
				model.Step{Text: "The build exited with 0."},
			)},
			Steps: []Step{user("u1", "watch the build"), answerWork("sub-ok", 0, "watching ci", true),
				event("e1", "line 1: compiling", true, false), event("e2", "exit code 0", true, true),
				event("e3", "too late", true, false)}},
		{Name: "sleep", End: End{Threads: 1, Replies: 1}, Reach: reach(base, dispatch, schedule),
			SingleThread: true,
			Script: &model.Script{Default: []model.Step{
				{Text: "Waiting for the deploy.", ToolCall: call("sleep", `{"seconds":600}`)},
				{Text: "Awake; the deploy should be done."},
			}},
			Steps: []Step{user("u1", "wait ten minutes"), fire(false)}},
		{Name: "interrupted_sleep", End: End{Threads: 1, Replies: 1}, Reach: reach(base, dispatch, schedule, cancel),
			SingleThread: true,
			Script: &model.Script{Default: []model.Step{
				{Text: "Waiting.", ToolCall: call("sleep", `{"seconds":600}`)},
				{Text: "Awake early: what is up?"},
			}},
			Steps: []Step{user("u1", "wait ten minutes"), user("u2", "actually, check now"), fire(true)}},
		{Name: "interrupted_tool", End: End{Threads: 1, Replies: 2}, Reach: reach(base, dispatch),
			SingleThread: true,
			Script: &model.Script{Default: []model.Step{
				{Text: "Starting the build.", ToolCall: call("work", `{"job":"build"}`)},
				{Text: "Understood, stopping."},
				{Text: "The build finished after all."},
			}},
			Steps: []Step{user("u1", "build it"), user("u2", "never mind"), answerWork("r1", 0, "build ok", false)}},
		{Name: "deferred_report", End: End{Threads: 2, Closed: 1, Replies: 1}, Reach: reach(base, dispatch, send),

			Script: &model.Script{
				Default: []model.Step{
					{ToolCall: call("spawn_thread", `{"instructions":"beta task: count the tests","child_of":["main"]}`)},
					{Text: "Building meanwhile.", ToolCall: call("work", `{"job":"build"}`)},
					{Text: "Build done and beta reported."},
				},
				Match: []model.MatchRule{{Contains: "beta task", Steps: []model.Step{
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"412 tests"}`)},
				}}},
			},
			Steps: []Step{user("u1", "count and build"), answerWork("r1", 0, "build ok", false)}},
		{Name: "continuation", End: End{Threads: 1, Replies: 1}, Reach: reach(base, send),
			SingleThread: true, Limits: runtime.Limits{MaxCompletions: 2},
			Script: &model.Script{Default: []model.Step{
				{ToolCall: call("echo", `{"n":1}`)},
				{ToolCall: call("echo", `{"n":2}`)},
				{ToolCall: call("echo", `{"n":3}`)},
				{Text: "All echoed."},
			}},
			Steps: []Step{user("u1", "echo three times")}},
		{Name: "event_wakes_sleep", End: End{Threads: 1, Subscriptions: []string{"main work"}, Replies: 2}, Reach: reach(base, dispatch, schedule, cancel),
			SingleThread: true,
			Script: &model.Script{Default: subscribeSteps(
				model.Step{Text: "Sleeping until something happens.", ToolCall: call("sleep", `{"seconds":3600}`)},
				model.Step{Text: "Woken by the build event."},
			)},
			Steps: []Step{user("u1", "watch the build"), answerWork("sub-ok", 0, "watching ci", true),
				user("u2", "sleep for an hour"), event("e1", "build finished", true, false), fire(true)}},
		{Name: "notice", End: End{Threads: 1, Replies: 1}, Reach: reach(base, dispatch),
			SingleThread: true,
			Script: &model.Script{Default: []model.Step{
				{Text: "Connecting the calendar.", ToolCall: call("work", `{"service":"calendar"}`)},
				{Text: "Connected."},
			}},
			Steps: []Step{user("u1", "connect my calendar"), notice("n1", 0, "open https://auth.example/xyz to sign in"),
				answerWork("r1", 0, "connected", false)}},
		{Name: "parent_message", End: End{Threads: 2, Closed: 1, Replies: 4}, Reach: reach(base, send),

			Script: &model.Script{
				Default: []model.Step{
					{ToolCall: call("spawn_thread", `{"instructions":"gamma task: wait for my go","child_of":["main"]}`)},
					{Text: "Gamma waits."},
					{ToolCall: call("send_message_to_child", `{"thread_id":"$CHILD","message":"go"}`)},
					{Text: "Told gamma to go."},
					{Text: "Gamma finished."},
				},
				Match: []model.MatchRule{{Contains: "gamma task", Steps: []model.Step{
					{Text: "Waiting for the go."},
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"gone"}`)},
				}}},
			},
			Steps: []Step{user("u1", "start gamma"), user("u2", "tell gamma to go")}},
		{Name: "cancel_subscription", End: End{Threads: 1, Replies: 2}, Reach: reach(base, dispatch),
			SingleThread: true,
			Script: &model.Script{Default: subscribeSteps(
				model.Step{ToolCall: call("cancel_subscription", `{"tool_call_id":"$CALL:work"}`)},
				model.Step{Text: "Stopped watching."},
			)},
			Steps: []Step{user("u1", "watch the build"), answerWork("sub-ok", 0, "watching ci", true),
				user("u2", "stop watching"), event("e1", "line after cancel", true, false)}},
		{Name: "compaction", End: End{Threads: 2, Closed: 1, Replies: 1}, Reach: reach(base, dispatch, send),

			Compaction: &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8},
			Script: &model.Script{
				Default: []model.Step{
					{Text: "Starting the long build.", ToolCall: call("work", `{"job":"build"}`),
						Usage: &runtime.Usage{Input: 850, Output: 50, Total: 900}},
					{Text: "The build is done."},
				},
				Match: []model.MatchRule{{Contains: "Summarise the conversation", Steps: []model.Step{
					{Text: "SUMMARY: the user asked for a build; it is running."},
				}}},
			},
			Steps: []Step{user("u1", "build it"), answerWork("r1", 0, "build ok", false)}},
	}
}

// Crash point groups for Scenario.Reach.
var (
	base     = append(slices.Clip(noDedup), CrashBeforeDedupMark, runtime.CrashAfterDedupMark)
	noDedup  = []runtime.CrashPoint{runtime.CrashAfterLoad, runtime.CrashAfterCompletion, CrashBeforeCommit, runtime.CrashAfterCommit, CrashAfterPublish}
	dispatch = []runtime.CrashPoint{runtime.CrashBeforeDispatch, runtime.CrashAfterDispatch}
	send     = []runtime.CrashPoint{runtime.CrashAfterSend}
	schedule = []runtime.CrashPoint{CrashBeforeTimerSchedule, CrashAfterTimerSchedule}
	cancel   = []runtime.CrashPoint{CrashBeforeTimerCancel, CrashAfterTimerCancel}
)

func reach(groups ...[]runtime.CrashPoint) []runtime.CrashPoint {
	var out []runtime.CrashPoint
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// ScenarioNamed returns the scenario called name, or nil.
func ScenarioNamed(name string) *Scenario {
	for _, sc := range Scenarios() {
		if sc.Name == name {
			return sc
		}
	}
	return nil
}
