package chaos

import (
	"context"
	"fmt"
	"sort"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Budgets in the chaos runs (Scenario.Ledger): the engine admits every
// completion against its thread's limit and its tree's, the tree's in the
// backend's ledger (Backend.Ledger: the disk store's, DynamoDB's) or one
// of the run's (local.Ledger, which a crash does not reset: a durable
// ledger's state survives its process), crashed around by
// crashLedger: after a reservation, around a settlement and after a limit
// change, the places where a slice that dies must neither lose nor double
// what it did when the batch comes again.

// budgetMaxOutput is the output a reservation plans for in the runs.
const budgetMaxOutput = 40

// crashLedger crashes around the ledger's operations.
type crashLedger struct {
	inner Ledger
	f     *faults
}

func (c crashLedger) Reserve(ctx context.Context, r runtime.Reservation) (bool, error) {
	ok, err := c.inner.Reserve(ctx, r)
	c.f.point(CrashAfterReserve, r.Thread)
	return ok, err
}

func (c crashLedger) Settle(ctx context.Context, tree, thread, id string, used runtime.Spend) error {
	c.f.point(CrashBeforeSettle, thread)
	err := c.inner.Settle(ctx, tree, thread, id, used)
	c.f.point(CrashAfterSettle, thread)
	return err
}

func (c crashLedger) Change(ctx context.Context, tree, id string, ch runtime.BudgetChange) ([]string, error) {
	w, err := c.inner.Change(ctx, tree, id, ch)
	c.f.point(CrashAfterBudgetChange, tree)
	return w, err
}

// Account lets the engine read the tree's limit for its pause's prompt.
func (c crashLedger) Account(ctx context.Context, tree string) (runtime.Account, error) {
	return c.inner.Account(ctx, tree)
}

// userWithBudget sends the root a user message that sets a limit.
func userWithBudget(id, text string, c runtime.BudgetChange) Step {
	return func(ctx context.Context, r *Run) error {
		return r.Send(ctx, runtime.Message{V: 1, ID: id, ThreadID: Root, Kind: runtime.KindUser, Text: text, Budget: &c})
	}
}

// answerBudget answers the budget pause thread waits in: 0 raises.
func answerBudget(id, thread string, selected int) Step {
	return func(ctx context.Context, r *Run) error {
		th, err := r.store.Load(ctx, thread)
		if err != nil {
			return err
		}
		b := th.State.Budget
		if b == nil || b.Wait == nil {
			return fmt.Errorf("thread %s waits on no budget", thread)
		}
		call := b.Wait.Call
		return r.Send(ctx, runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindAnswer, ToolCallID: call,
			Choice: fmt.Sprintf(`{"id":%q,"selected":%d}`, call, selected), Text: fmt.Sprintf("choice %d", selected)})
	}
}

// isBudgetWake is a tree's wake-up (a KindBudget message without a
// change): a thread not waiting consumes it without an item.
func isBudgetWake(m runtime.Message) bool { return m.Kind == runtime.KindBudget && m.Budget == nil }

// budgetMeaning checks the budgets' end state by meaning (see meaning):
//
//   - no thread ends paused on a budget, and every pause a thread's
//     history shows (a user_choice marker of its budget) was ended once
//     (a budget marker on the same call);
//   - each tree's account holds no reservation at the end, and records no
//     thread as waiting;
//   - the tree's spend covers what its threads committed (no committed
//     completion went unsettled), and equals it in a run nothing disturbed
//     (a completion done again after a crash or by a racing duplicate is
//     spent again: the model was called again).
func (r *Run) budgetMeaning(s *Snapshot, bad func(format string, args ...any)) {
	committed := map[string]int64{}
	for _, ts := range s.Threads {
		if b := ts.State.Budget; b != nil && b.Wait != nil {
			bad("thread %s ends paused on its %s budget (choice %s)", ts.ID, b.Wait.Scope, b.Wait.Call)
		}
		pauses, ends := map[string]bool{}, map[string]int{}
		for _, it := range ts.Items {
			switch {
			case it.Kind == runtime.ItemMarker && it.Name == runtime.ChoiceMarkerName && it.CallID != "":
				pauses[it.CallID] = true
			case it.Kind == runtime.ItemMarker && it.Name == runtime.BudgetMarkerName && it.CallID != "":
				ends[it.CallID]++
			}
		}
		for call := range pauses {
			if n := ends[call]; n != 1 && !(n == 0 && ts.State.Budget != nil && ts.State.Budget.Wait != nil && ts.State.Budget.Wait.Call == call) {
				bad("thread %s's budget pause %s ended %d times, want once", ts.ID, call, n)
			}
		}
		committed[runtime.TreeOf(ts.ID, &ts.State)] += runtime.ThreadSpend(&ts.State).Tokens
	}
	if r.ledger == nil {
		return
	}
	trees := make([]string, 0, len(committed))
	for t := range committed {
		trees = append(trees, t)
	}
	sort.Strings(trees)
	r.mu.Lock()
	disturbed := r.crashes > 0 || r.conflicts > 0
	r.mu.Unlock()
	for _, tree := range trees {
		a, _ := r.ledger.Account(context.Background(), tree)
		if a.Limit.IsZero() {
			continue // no account
		}
		if a.Reserved != (runtime.Spend{}) {
			bad("tree %s ends with %d tokens reserved, want every reservation settled", tree, a.Reserved.Tokens)
		}
		if len(a.Waiting) > 0 {
			bad("tree %s ends with threads recorded waiting on it: %v", tree, a.Waiting)
		}
		switch c := committed[tree]; {
		case a.Spent.Tokens < c:
			bad("tree %s's ledger spent %d tokens, less than its threads committed (%d): a completion went unsettled", tree, a.Spent.Tokens, c)
		case a.Spent.Tokens != c && !disturbed:
			bad("tree %s's ledger spent %d tokens in an undisturbed run, its threads committed %d", tree, a.Spent.Tokens, c)
		}
	}
}
