package chaos

import (
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The scenarios of compaction across a tree (issue 31): a child spawned
// before its parent compacts reports after it (its spawn call is matched
// through the summary, the history before it left out of the parent's
// loads), a child spawned after it inherits the summary, and the parent's
// scripted turns stay in step (Turn counted across the compaction point);
// a compaction that does not shrink the context stops once, with an
// error item, instead of looping; and messages delivered again long after
// the compaction point (a user message and a tool result the summary
// replaced) are recognised, though the loads leave their items out.
func init() {
	Register(compactionTree)
	Register(compactionStops)
	Register(compactionRedelivery)
}

var bigUsage = &runtime.Usage{Input: 850, Output: 50, Total: 900}

// compactionTree: main spawns early, which starts a build; main's next
// completion fills the window and is compacted; the build's result lets
// early close with a report to main; main then spawns late, which inherits
// the summary and closes with a report at once.
func compactionTree() *Scenario {
	return &Scenario{Name: "compaction_tree", End: End{Threads: 4, Closed: 3, Replies: 4},
		Reach:      reach(base, dispatch, send),
		Compaction: &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8},
		Script: &model.Script{
			Default: []model.Step{
				{ToolCall: call("spawn_thread", `{"instructions":"early task: build the parser","child_of":["main"]}`)},
				{Text: "Early is building.", Usage: bigUsage},
				{Text: "Early reported."},
				{ToolCall: call("spawn_thread", `{"instructions":"late task: check the build","child_of":["main"]}`)},
				{Text: "Late is checking."},
				{Text: "Late reported."},
			},
			Match: []model.MatchRule{
				{Contains: "Summarise the conversation", Steps: []model.Step{
					{Text: "SUMMARY: early builds the parser."}}},
				{Contains: "early task", Steps: []model.Step{
					{Text: "Building.", ToolCall: call("work", `{"build":"parser"}`)},
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"the parser is built"}`)},
				}},
				{Contains: "late task", Steps: []model.Step{
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"the build checks out"}`)},
				}},
			},
		},
		Steps: []Step{user("u1", "build the parser"), answerWork("r1", 0, "parser built", false), user("u2", "now check it")}}
}

// compactionStops: the summary does not shrink the context (the model
// reports the same usage after it): the next completion stops compaction
// with an error item, and the one after does not start it again.
func compactionStops() *Scenario {
	return &Scenario{Name: "compaction_stops", End: End{Threads: 2, Closed: 1, Replies: 3},
		Reach:        reach(base, send),
		SingleThread: false,
		Compaction:   &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8},
		Script: &model.Script{
			Default: []model.Step{
				{Text: "One.", Usage: bigUsage},
				{Text: "Two, still full.", Usage: bigUsage},
				{Text: "Three, still full.", Usage: bigUsage},
			},
			Match: []model.MatchRule{{Contains: "Summarise the conversation", Steps: []model.Step{
				{Text: "SUMMARY: a summary as long as what it replaced."}}}},
		},
		Steps: []Step{user("u1", "go"), user("u2", "go on"), user("u3", "and on")}}
}

// compactionRedelivery: main's first turn calls work; its answer to the
// result fills the window and compaction summarises the whole view; then the user message and the tool result from before the
// summary arrive again as first deliveries (a producer that retried past
// the queue's deduplication window), between two new user messages. The
// slices' loads start at the summary, so only the store's consumed-input
// check (or a full load) can tell they were consumed: each must be dropped,
// not folded a second time. It runs without a dedup store, so history is
// the only line on every backend (with one, a first delivery skips it
// too; without one, the slice that dispatched work commits "sent", and
// the compaction child's ID, derived from the version, is the same on
// every backend only so).
func compactionRedelivery() *Scenario {
	return &Scenario{Name: "compaction_redelivery", End: End{Threads: 2, Closed: 1, Replies: 3},
		Reach:      reach(noDedup, dispatch, send),
		NoDedup:    true,
		Compaction: &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8},
		Script: &model.Script{
			Default: []model.Step{
				{Text: "Starting the build.", ToolCall: call("work", `{"job":"build"}`)},
				{Text: "The build is done.", Usage: bigUsage},
				{Text: "Second answer."},
				{Text: "Third answer."},
			},
			Match: []model.MatchRule{{Contains: "Summarise the conversation", Steps: []model.Step{
				{Text: "SUMMARY: a build ran and passed."}}}},
		},
		Steps: []Step{user("u1", "build it"), answerWork("r1", 0, "build ok", false),
			user("u2", "and now?"), user("u1", "build it"), answerWork("r1", 0, "build ok", false),
			user("u3", "and then?")}}
}
