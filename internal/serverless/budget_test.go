package serverless_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// TestTreeBudgetPauseAndRaiseOnAWS: on the AWS path (PostgreSQL history,
// the DynamoDB Local ledger, fauxqs queues) a thread created with a tree
// budget pauses at it: a notice on the output queue, the wait committed,
// the model not called; answering the choice as `agentslice choose` does
// (rap.AnswerChoice: the answer message through the input queue) raises the
// tree's limit in DynamoDB and the model runs.
func TestTreeBudgetPauseAndRaiseOnAWS(t *testing.T) {
	t.Setenv(lambdafn.EnvTreeBudgets, "on")
	p := startInProcess(t)
	ctx := context.Background()
	thread := "budget-" + time.Now().Format("150405.000")
	first := runtime.Message{V: 1, ID: "m1", ThreadID: thread, Kind: runtime.KindUser, Text: "costly",
		Budget: &runtime.BudgetChange{Scope: runtime.BudgetTree, Limit: runtime.Budget{Tokens: 1500}}}
	if err := p.queue.Send(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := p.replies(t, thread, 1); got[0] != "reply: Costly one." {
		t.Fatalf("first reply %q", got[0])
	}
	p.send(t, thread, "m2", "costly again")
	got := p.replies(t, thread, 2)
	if !strings.HasPrefix(got[1], "notice: the budget of the thread's tree of 1500 tokens is reached") {
		t.Fatalf("second event %q, want the budget notice", got[1])
	}
	th, err := p.fn.Engine.History.Load(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if th.State.Budget == nil || th.State.Budget.Wait == nil {
		t.Fatalf("no budget wait committed: %+v", th.State.Budget)
	}
	l := p.fn.Engine.Budgets.Ledger.(*dedup.Ledger)
	if acc, err := l.Account(ctx, thread); err != nil || acc.Spent.Tokens != 1000 || len(acc.Waiting) != 1 {
		t.Fatalf("DynamoDB account %+v (%v), want 1000 spent and the thread waiting", acc, err)
	}
	if _, err := rap.AnswerChoice(ctx, http.DefaultClient, p.fn.Engine.History, p.queue, thread, "", 0, rap.RetryPolicy{}); err != nil {
		t.Fatal(err)
	}
	if got := p.replies(t, thread, 3); got[2] != "reply: Costly two." {
		t.Fatalf("after the raise %q", got[2])
	}
	acc, err := l.Account(ctx, thread)
	if err != nil || acc.Spent.Tokens != 2000 || acc.Limit.Tokens <= 1500 || len(acc.Waiting) != 0 {
		t.Fatalf("DynamoDB account after the raise %+v (%v)", acc, err)
	}
}
