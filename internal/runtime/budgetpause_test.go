package runtime

import (
	"context"
	"testing"
)

// accountLedger is a ledger that only answers Account (the pause asks it
// for the tree's current limit); its other methods are not called here.
type accountLedger struct {
	Ledger
	acc Account
}

func (l accountLedger) Account(ctx context.Context, tree string) (Account, error) { return l.acc, nil }

// A pause on the tree's budget offers a raise from the tree's limit as the
// ledger has it now (another thread may have raised it), not from the limit
// the thread last saw.
func TestTreeBudgetPauseUsesTheLedgersLimit(t *testing.T) {
	t.Parallel()
	led := accountLedger{acc: Account{Limit: Budget{Tokens: 1000}}}
	s := &slice{e: &Engine{Budgets: &Budgets{Ledger: led}}, th: &Thread{}, threadID: "t1", res: &SliceResult{}}
	s.st.Stack = []string{"t1"}
	s.pauseForBudget(context.Background(), BudgetTree, Budget{Tokens: 100}, Spend{Tokens: 50})
	w := s.budgetWait()
	if w == nil {
		t.Fatal("no budget wait after a pause")
	}
	if w.Limit.Tokens != 1000 || w.Raise.Tokens != 1000 {
		t.Fatalf("the pause has limit %d, raise %d; want the ledger's 1000 for both", w.Limit.Tokens, w.Raise.Tokens)
	}
}

// A pause on a dollar-only limit offers a raise in dollars only.
func TestDollarBudgetPauseRaisesDollarsOnly(t *testing.T) {
	t.Parallel()
	s := &slice{e: &Engine{}, th: &Thread{}, threadID: "t1", res: &SliceResult{}}
	s.st.Stack = []string{"t1"}
	s.pauseForBudget(context.Background(), BudgetThread, Budget{USD: 2}, Spend{Tokens: 50, Micros: 10})
	w := s.budgetWait()
	if w == nil {
		t.Fatal("no budget wait after a pause")
	}
	if w.Raise.Tokens != 0 || w.Raise.USD != 2 {
		t.Fatalf("the pause offers a raise of %+v, want 2 dollars and no tokens", w.Raise)
	}
}
