package chaos

import (
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The inherited-view chain bounded (issue 31): with
// Limits.MaxInheritedDepth 1, a grandchild's view reaches two uncompacted
// ancestors, so it is folded into one summary (it compacts on its first
// slice, with no compaction policy and no token pressure) while it
// reports to its parent and waits for a call; its later slices load none
// of its ancestors' items, and its reports, its pending call and its
// close go on as without the fold.
func init() {
	Register(inheritedFold)
}

// inheritedFold: main spawns theta, theta spawns iota; iota, folded,
// reports, calls work, and closes with a report once the call is answered;
// theta closes with its own report to main.
func inheritedFold() *Scenario {
	return &Scenario{Name: "inherited_fold", End: End{Threads: 4, Closed: 3, Replies: 4},
		Reach:  reach(base, dispatch, send),
		Limits: runtime.Limits{MaxInheritedDepth: 1},
		Script: &model.Script{
			Default: []model.Step{
				{ToolCall: call("spawn_thread", `{"instructions":"theta task: review the linker","child_of":["main"]}`)},
				{Text: "Theta is on it."},
				{Text: "Theta reported: two bugs."},
			},
			Match: []model.MatchRule{
				{Contains: "Summarise the conversation", Steps: []model.Step{
					{Text: "SUMMARY: iota reads the symbol table for theta."}}},
				{Contains: "iota task", Steps: []model.Step{
					{ToolCall: call("report_to_parent", `{"report":"bug one: symbols clash"}`)},
					{Text: "Checking the relocations.", ToolCall: call("work", `{"check":"relocations"}`)},
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"bug two: relocations overflow"}`)},
				}},
				{Contains: "theta task", Steps: []model.Step{
					{ToolCall: call("spawn_thread", `{"instructions":"iota task: read the symbol table","child_of":["main","$THREAD"]}`)},
					{Text: "Iota reads the symbol table."},
					{Text: "The first bug is noted."},
					{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"two bugs: symbols and relocations"}`)},
				}},
			},
		},
		Steps: []Step{user("u1", "review the linker"), answerWork("r1", 0, "relocations overflow at 2 GiB", false)}}
}
