package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// usageModel answers "ok" and reports 100 input and 50 output tokens; it
// counts its calls.
type usageModel struct {
	mu    sync.Mutex
	calls int
}

func (m *usageModel) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	w.Text("ok")
	w.Usage(runtime.Usage{Input: 100, Output: 50, Total: 150})
	return nil
}

func (m *usageModel) n() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// flatPrice prices every model at $1 per million input tokens, $2 per
// million output tokens, with completions of at most 50 tokens.
type flatPrice struct{}

func (flatPrice) Price(string) (runtime.ModelPrice, bool) {
	return runtime.ModelPrice{Input: 1, Output: 2, MaxOutputTokens: 50}, true
}

type budgetRig struct {
	e      *runtime.Engine
	q      *sink
	store  runtime.HistoryStore
	model  *usageModel
	ledger *local.Ledger
}

func newBudgetRig() *budgetRig {
	r := &budgetRig{store: local.NewHistoryStore(), model: &usageModel{}, ledger: local.NewLedger()}
	r.e, r.q = newEngine(r.store, r.model)
	r.e.Budgets = &runtime.Budgets{Ledger: r.ledger, Prices: flatPrice{}}
	return r
}

func (r *budgetRig) run(t *testing.T, thread string, msgs ...runtime.Message) {
	t.Helper()
	if _, err := r.e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: thread, Messages: msgs}); err != nil {
		t.Fatalf("slice of %s: %v", thread, err)
	}
}

func (r *budgetRig) load(t *testing.T, thread string) *runtime.Thread {
	t.Helper()
	th, err := r.store.Load(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func budgetWait(th *runtime.Thread) *runtime.BudgetWait {
	if th.State.Budget == nil {
		return nil
	}
	return th.State.Budget.Wait
}

func answer(thread, call string, selected int) runtime.Message {
	return runtime.Message{V: 1, ID: "ans-" + call, ThreadID: thread, Kind: runtime.KindAnswer, ToolCallID: call,
		Choice: fmt.Sprintf(`{"id":%q,"selected":%d}`, call, selected), Text: "answered"}
}

// A thread whose next completion would pass its limit commits a user_choice
// and waits without calling the model, messages included; answering
// "raise" raises the limit by the offer and the model runs again.
func TestBudgetPausesThreadAndRaiseResumes(t *testing.T) {
	r := newBudgetRig()
	first := userMsg("t", "u1")
	first.Budget = &runtime.BudgetChange{Limit: runtime.Budget{Tokens: 400}}
	r.run(t, "t", first)
	r.run(t, "t", userMsg("t", "u2"))
	if r.model.n() != 2 {
		t.Fatalf("model calls = %d before the limit, want 2", r.model.n())
	}
	r.run(t, "t", userMsg("t", "u3")) // 300 spent + ~205 planned > 400
	th := r.load(t, "t")
	w := budgetWait(th)
	if w == nil || w.Scope != runtime.BudgetThread {
		t.Fatalf("no thread budget wait after passing the limit: %+v", th.State.Budget)
	}
	if r.model.n() != 2 {
		t.Fatalf("the model ran past the limit: %d calls", r.model.n())
	}
	if _, ok := runtime.PendingChoice(th.Items, w.Call); !ok {
		t.Fatalf("no user_choice marker for call %s in history", w.Call)
	}
	if got := runtime.ThreadSpend(&th.State); got.Tokens != 300 || got.Micros != 2*(100+100) {
		t.Fatalf("spend = %+v, want 300 tokens and 400 micro-dollars", got)
	}
	r.run(t, "t", userMsg("t", "u4")) // waits at no cost
	if r.model.n() != 2 || budgetWait(r.load(t, "t")) == nil {
		t.Fatalf("a message during the wait ran the model (%d calls) or ended the wait", r.model.n())
	}
	r.run(t, "t", answer("t", w.Call, 0))
	th = r.load(t, "t")
	if r.model.n() != 3 || budgetWait(th) != nil {
		t.Fatalf("after raising: %d calls (want 3), wait %+v", r.model.n(), budgetWait(th))
	}
	if l := th.State.Budget.Limit; l == nil || l.Tokens != 800 {
		t.Fatalf("limit after raise = %+v, want 800 tokens", l)
	}
	if _, ok := runtime.PendingChoice(th.Items, w.Call); ok {
		t.Fatal("the choice is still pending after its answer")
	}
}

// Answering "stop" ends the wait without running the model.
func TestBudgetStopEndsWait(t *testing.T) {
	r := newBudgetRig()
	first := userMsg("t", "u1")
	first.Budget = &runtime.BudgetChange{Limit: runtime.Budget{Tokens: 10}}
	r.run(t, "t", first)
	w := budgetWait(r.load(t, "t"))
	if w == nil || r.model.n() != 0 {
		t.Fatalf("wait %+v, calls %d: want a wait before any call", w, r.model.n())
	}
	r.run(t, "t", answer("t", w.Call, 1))
	if th := r.load(t, "t"); budgetWait(th) != nil || r.model.n() != 0 {
		t.Fatalf("stop: wait %+v, calls %d", budgetWait(th), r.model.n())
	}
}

// commitChild writes a child of root directly, as a spawn would.
func commitChild(t *testing.T, s runtime.HistoryStore, root, child string) {
	t.Helper()
	err := s.Commit(context.Background(), &runtime.Commit{ThreadID: child, Expected: 0,
		State: runtime.ThreadState{Version: 1, Parent: root, Stack: []string{root, child}}})
	if err != nil {
		t.Fatal(err)
	}
}

// Children of a tree whose budget is spent wait, and wake together when
// the tree's limit is raised (the raising thread sends each a wake-up).
func TestTreeBudgetChildrenWaitAndWakeTogether(t *testing.T) {
	r := newBudgetRig()
	commitChild(t, r.store, "root", "c1")
	commitChild(t, r.store, "root", "c2")
	first := userMsg("root", "u1")
	first.Budget = &runtime.BudgetChange{Scope: runtime.BudgetTree, Limit: runtime.Budget{Tokens: 300}}
	r.run(t, "root", first)
	r.run(t, "c1", userMsg("c1", "x1")) // 150 spent + ~52 planned fits
	r.run(t, "c2", userMsg("c2", "x1")) // 300 spent: waits
	r.run(t, "c1", userMsg("c1", "x2")) // waits too
	if r.model.n() != 2 {
		t.Fatalf("model calls = %d, want 2 (the tree's limit admits two)", r.model.n())
	}
	for _, c := range []string{"c1", "c2"} {
		if w := budgetWait(r.load(t, c)); w == nil || w.Scope != runtime.BudgetTree {
			t.Fatalf("%s does not wait on the tree's budget: %+v", c, w)
		}
	}
	acc, _ := r.ledger.Account(context.Background(), "root")
	if acc.Spent.Tokens != 300 || len(acc.Waiting) != 2 || acc.Reserved != (runtime.Spend{}) {
		t.Fatalf("account %+v: want 300 spent, two waiting, nothing reserved", acc)
	}
	r.q.msgs = nil
	r.run(t, "root", runtime.Message{V: 1, ID: "raise1", ThreadID: "root", Kind: runtime.KindBudget,
		Budget: &runtime.BudgetChange{Scope: runtime.BudgetTree, Add: true, Limit: runtime.Budget{Tokens: 1000}}})
	wakes := map[string]runtime.Message{}
	for _, m := range r.q.msgs {
		if m.Kind == runtime.KindBudget {
			wakes[m.ThreadID] = m
		}
	}
	if len(wakes) != 2 {
		t.Fatalf("wake-ups sent: %v, want one to each of c1 and c2", r.q.msgs)
	}
	for _, c := range []string{"c1", "c2"} {
		r.run(t, c, wakes[c])
		if budgetWait(r.load(t, c)) != nil {
			t.Fatalf("%s still waits after the raise", c)
		}
	}
	if r.model.n() != 4 {
		t.Fatalf("model calls = %d after the wake-ups, want 4", r.model.n())
	}
}

// crashAfterCompletionOnce kills the first slice of a thread right after its completion:
// between the reservation and its settlement.
type crashAfterCompletionOnce struct {
	mu   sync.Mutex
	done bool
}

func (c *crashAfterCompletionOnce) Crash(p runtime.CrashPoint, _ string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p != runtime.CrashAfterCompletion || c.done {
		return false
	}
	c.done = true
	return true
}

// A slice that dies between reserving and settling leaks nothing: the
// retried slice's completion has the same ID and finds its reservation,
// and once settled the tree holds no reservation.
func TestTreeBudgetCrashBetweenReserveAndSettle(t *testing.T) {
	r := newBudgetRig()
	r.e.Faults = &crashAfterCompletionOnce{}
	first := userMsg("root", "u1")
	first.Budget = &runtime.BudgetChange{Scope: runtime.BudgetTree, Limit: runtime.Budget{Tokens: 1000}}
	if _, err := r.e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "root", Messages: []runtime.Message{first}}); err == nil {
		t.Fatal("the injected crash did not fail the slice")
	}
	acc, _ := r.ledger.Account(context.Background(), "root")
	if acc.Reserved.Tokens == 0 {
		t.Fatalf("no reservation held after the crash: %+v", acc)
	}
	r.run(t, "root", first) // redelivered
	acc, _ = r.ledger.Account(context.Background(), "root")
	if acc.Reserved != (runtime.Spend{}) || acc.Spent.Tokens != 150 {
		t.Fatalf("after the retry: %+v, want nothing reserved and 150 tokens spent once", acc)
	}
	// The tree's limit was set once although its message was folded twice.
	if acc.Limit.Tokens != 1000 {
		t.Fatalf("limit %+v, want 1000 tokens", acc.Limit)
	}
}

// An agent's budget is the limit of each of its threads, whether or not
// the engine has budgets of its own (without them, the agent's budget
// alone turns admission on: budgetOn). With the rig's prices a completion
// plans a small output, so the first runs and the second is stopped;
// without prices it plans 4,096 output tokens, past the limit at once.
func TestAgentBudgetLimitsItsThreads(t *testing.T) {
	for _, tc := range []struct {
		engineBudgets bool
		wantCalls     int
	}{{true, 1}, {false, 0}} {
		t.Run(fmt.Sprintf("engine budgets %v", tc.engineBudgets), func(t *testing.T) {
			r := newBudgetRig()
			if !tc.engineBudgets {
				r.e.Budgets = nil
			}
			set, err := runtime.NewAgentSet([]runtime.Agent{{Name: "frugal", Instructions: "be brief", Budget: &runtime.Budget{Tokens: 200}}}, "frugal", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.e.Agents = set
			r.run(t, "t", userMsg("t", "u1"))
			r.run(t, "t", userMsg("t", "u2"))
			if w := budgetWait(r.load(t, "t")); w == nil || w.Limit.Tokens != 200 || r.model.n() != tc.wantCalls {
				t.Fatalf("wait %+v after %d calls: want the agent's 200-token limit to stop the thread after %d", w, r.model.n(), tc.wantCalls)
			}
		})
	}
}
