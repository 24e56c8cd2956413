package chaos

import (
	"context"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The budget scenarios (issue 32): a thread, and a tree with a child,
// paused by a budget's user_choice, raised by the answer, and going on;
// every completion uses 100 tokens. They reach the ledger's crash points:
// after a reservation, around a settlement, after a limit change (the
// tree's limit set by the first message, raised by the answer).
func init() {
	Register(budgetThread)
	Register(budgetTree)
}

// spent is a scripted step that uses 100 tokens.
func spent(st model.Step) model.Step {
	st.Usage = &runtime.Usage{Input: 60, Output: 40, Total: 100}
	return st
}

// ledgerPoints are the ledger's crash points.
var ledgerPoints = []runtime.CrashPoint{CrashAfterReserve, CrashBeforeSettle, CrashAfterSettle, CrashAfterBudgetChange}

// budgetThread: a thread with a limit of its own and one on its tree
// answers once; its second message would pass its own limit, so it asks
// (user_choice) and waits; the answer raises the limit and the model
// answers the waiting message.
func budgetThread() *Scenario {
	return &Scenario{Name: "budget_thread", End: End{Threads: 1, Replies: 2}, Reach: reach(base, ledgerPoints),
		SingleThread: true, Ledger: true,
		Script: &model.Script{Default: []model.Step{
			spent(model.Step{Text: "Hello; this costs tokens."}),
			spent(model.Step{Text: "Raised, so here is the rest."}),
		}},
		Steps: []Step{
			userWithBudget("u1", "hello", runtime.BudgetChange{Scope: runtime.BudgetTree, Limit: runtime.Budget{Tokens: 100_000}}),
			func(ctx context.Context, r *Run) error {
				return r.Send(ctx, runtime.Message{V: 1, ID: "b1", ThreadID: Root, Kind: runtime.KindBudget,
					Budget: &runtime.BudgetChange{Limit: runtime.Budget{Tokens: 200}}})
			},
			user("u2", "and the rest?"),
			answerBudget("a1", Root, 0),
		}}
}

// budgetTree: main spawns kappa under a tree limit of 400 tokens. Kappa's
// second completion (after its tool's answer) would pass it, and so would
// main's answer to a second message: both pause. The answer to main's
// pause raises the tree's limit; main's commit wakes kappa, and both go on:
// kappa closes with its report, which main answers.
func budgetTree() *Scenario {
	return &Scenario{Name: "budget_tree", End: End{Threads: 2, Closed: 1, Replies: 3}, Reach: reach(base, dispatch, send, ledgerPoints),
		Ledger: true,
		Script: &model.Script{
			Default: []model.Step{
				spent(model.Step{ToolCall: call("spawn_thread", `{"instructions":"kappa task: tally the costs","child_of":["main"]}`)}),
				spent(model.Step{Text: "Kappa is on it."}),
				spent(model.Step{Text: "Still waiting for kappa."}),
				spent(model.Step{Text: "Kappa reported: the costs are tallied."}),
			},
			Match: []model.MatchRule{{Contains: "kappa task", Steps: []model.Step{
				spent(model.Step{Text: "Tallying.", ToolCall: call("work", `{"tally":"costs"}`)}),
				spent(model.Step{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"the costs come to 42"}`)}),
			}}},
		},
		Steps: []Step{
			userWithBudget("u1", "tally the costs", runtime.BudgetChange{Scope: runtime.BudgetTree, Limit: runtime.Budget{Tokens: 400}}),
			answerWork("r1", 0, "costs: 40 and 2", false),
			user("u2", "how is it going?"),
			answerBudget("a1", Root, 0),
		}}
}
