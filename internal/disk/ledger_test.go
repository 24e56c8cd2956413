package disk

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
)

func TestLedgerConformance(t *testing.T) {
	storetest.RunLedger(t, func(t *testing.T) storetest.Ledger { return open(t, t.TempDir()).Ledger() })
}

// tokenModel answers with 100 tokens of usage and counts its calls.
type tokenModel struct{ calls int }

func (m *tokenModel) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	m.calls++
	w.Text("ok")
	w.Usage(runtime.Usage{Input: 60, Output: 40, Total: 100})
	return nil
}

type dropQueue struct{}

func (dropQueue) Send(context.Context, ...runtime.Message) error { return nil }

// A tree's budget pause is durable: the thread waits through a restart of
// the data directory (its wait in its state, the choice in history, the
// tree's spend in the ledger), and the answer given after it raises the
// limit and runs the model.
func TestBudgetPauseAndRaiseThroughRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m := &tokenModel{}
	engine := func(d *DB) *runtime.Engine {
		return &runtime.Engine{History: d.History(), Queue: dropQueue{}, Model: m, Tools: runtime.NewToolbox(),
			Budgets: &runtime.Budgets{Ledger: d.Ledger(), DefaultMaxOutputTokens: 40}}
	}
	d := open(t, dir)
	e := engine(d)
	run := func(msg runtime.Message) {
		t.Helper()
		if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "root", Messages: []runtime.Message{msg}}); err != nil {
			t.Fatal(err)
		}
	}
	first := runtime.Message{V: 1, ID: "u1", ThreadID: "root", Kind: runtime.KindUser, Text: "hello",
		Budget: &runtime.BudgetChange{Scope: runtime.BudgetTree, Limit: runtime.Budget{Tokens: 150}}}
	run(first)
	run(runtime.Message{V: 1, ID: "u2", ThreadID: "root", Kind: runtime.KindUser, Text: "again"})
	if m.calls != 1 {
		t.Fatalf("model calls = %d, want 1 (the second passes the tree's 150 tokens)", m.calls)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = open(t, dir)
	e = engine(d)
	th, err := d.History().Load(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}
	if th.State.Budget == nil || th.State.Budget.Wait == nil {
		t.Fatalf("the budget wait did not survive the restart: %+v", th.State.Budget)
	}
	call := th.State.Budget.Wait.Call
	if _, ok := runtime.PendingChoice(th.Items, call); !ok {
		t.Fatal("the budget choice is not pending in history after the restart")
	}
	acc, err := d.Ledger().Account(ctx, "root")
	if err != nil || acc.Spent.Tokens != 100 || len(acc.Waiting) != 1 {
		t.Fatalf("ledger after restart: %+v (%v), want 100 spent and root waiting", acc, err)
	}
	run(runtime.Message{V: 1, ID: "a1", ThreadID: "root", Kind: runtime.KindAnswer, ToolCallID: call,
		Choice: fmt.Sprintf(`{"id":%q,"selected":0}`, call), Text: "raise"})
	if m.calls != 2 {
		t.Fatalf("model calls = %d after the raise, want 2", m.calls)
	}
	acc, _ = e.Budgets.Ledger.(*Ledger).Account(ctx, "root")
	if acc.Limit.Tokens <= 150 || acc.Spent.Tokens != 200 {
		t.Fatalf("ledger after the raise: %+v", acc)
	}
}
