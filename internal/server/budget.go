package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Budgets (runtime/budget.go) on serve:
//
//	POST /threads/{id}/budget  {"tokens"?, "usd"?, "scope"?: "thread"|"tree", "add"?, "id"?} → 202 {"id", "thread_id"}
//	GET  /threads/{id}         "budget": the thread's limit and spend, and its tree's (the ledger)
//
// A thread that would pass a limit waits on a user_choice answered through
// POST /threads/{id}/choices/{call} like a tool's (hitl.go).

// budgetRequest is the body of POST /threads/{id}/budget.
type budgetRequest struct {
	Tokens int64   `json:"tokens,omitempty"`
	USD    float64 `json:"usd,omitempty"`
	// Scope is "thread" (default) or "tree" (the thread's root and all
	// its descendants together).
	Scope string `json:"scope,omitempty"`
	// Add raises the limit by tokens/usd instead of setting it.
	Add bool   `json:"add,omitempty"`
	ID  string `json:"id,omitempty"`
}

func (s *Server) setBudget(w http.ResponseWriter, r *http.Request) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	var req budgetRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if req.Tokens == 0 && req.USD == 0 && !req.Add {
		writeError(w, http.StatusBadRequest, "tokens", "missing: give tokens and/or usd (a limit of nothing would stop the thread at once)")
		return
	}
	msg := runtime.Message{V: runtime.MessageVersion, ID: req.ID, ThreadID: thread, Kind: runtime.KindBudget,
		Budget: &runtime.BudgetChange{Scope: req.Scope, Add: req.Add, Limit: runtime.Budget{Tokens: req.Tokens, USD: req.USD}}}
	if !s.sendSwitch(w, r, &msg) {
		return
	}
	writeJSON(w, http.StatusAccepted, messageResponse{ID: msg.ID, ThreadID: thread})
}

// spendView is a spend as the API shows it.
type spendView struct {
	Tokens int64   `json:"tokens"`
	USD    float64 `json:"usd"`
}

func viewSpend(sp runtime.Spend) spendView { return spendView{Tokens: sp.Tokens, USD: sp.USD()} }

// budgetView is the "budget" of GET /threads/{id}.
type budgetView struct {
	// Limit is the thread's own limit (set on it or its agent's), if any.
	Limit *runtime.Budget `json:"limit,omitempty"`
	Spent spendView       `json:"spent"`
	// Waiting is the scope ("thread" or "tree") of the limit the thread
	// waits on a person to raise, if any.
	Waiting string    `json:"waiting,omitempty"`
	Tree    *treeView `json:"tree,omitempty"`
}

type treeView struct {
	Root     string          `json:"root"`
	Limit    *runtime.Budget `json:"limit,omitempty"`
	Spent    spendView       `json:"spent"`
	Reserved spendView       `json:"reserved"`
	Waiting  []string        `json:"waiting,omitempty"`
}

// ledger is a runtime.Ledger that shows a tree's account.
type ledger interface {
	runtime.Ledger
	Account(ctx context.Context, tree string) (runtime.Account, error)
}

// openLedger returns the ledger of the server's store: the data
// directory's, the PostgreSQL store's (table tree_ledger), else one in
// memory (the memory store's, lost at a restart like its threads).
func (s *Server) openLedger() ledger {
	if s.db != nil {
		return s.db.Ledger()
	}
	if pg, ok := s.store.(pgThreads); ok {
		return pg.Store.Ledger()
	}
	return local.NewLedger()
}

// budgetOf is what GET /threads/{id} shows of th's budgets.
func (s *Server) budgetOf(ctx context.Context, th *runtime.Thread) *budgetView {
	st := &th.State
	v := &budgetView{Spent: viewSpend(runtime.ThreadSpend(st))}
	if b := st.Budget; b != nil {
		v.Limit = b.Limit
		if b.Wait != nil {
			v.Waiting = b.Wait.Scope
		}
	}
	if v.Limit == nil && s.agents != nil {
		if a, ok := s.agents.Agent(st.Agent); ok && a.Agent.Budget != nil {
			v.Limit = a.Agent.Budget
		}
	}
	if s.ledger != nil {
		root := runtime.TreeOf(th.ID, st)
		if acc, err := s.ledger.Account(ctx, root); err == nil && (!acc.Limit.IsZero() || acc.Spent != (runtime.Spend{})) {
			tv := &treeView{Root: root, Spent: viewSpend(acc.Spent), Reserved: viewSpend(acc.Reserved), Waiting: acc.Waiting}
			if !acc.Limit.IsZero() {
				l := acc.Limit
				tv.Limit = &l
			}
			v.Tree = tv
		}
	}
	return v
}

// budgetChoice is the user_choice of th's budget wait, if it has one: read
// from the choice marker its pause committed (runtime.PendingChoice).
func budgetChoice(th *runtime.Thread) *choiceView {
	b := th.State.Budget
	if b == nil || b.Wait == nil {
		return nil
	}
	args, ok := runtime.PendingChoice(th.Items, b.Wait.Call)
	if !ok {
		return nil
	}
	var c struct {
		Prompt  string   `json:"prompt"`
		Choices []string `json:"choices"`
		Default *int     `json:"default"`
	}
	if json.Unmarshal([]byte(args), &c) != nil || len(c.Choices) == 0 {
		return nil
	}
	return &choiceView{CallID: b.Wait.Call, Prompt: c.Prompt, Choices: c.Choices, Default: c.Default, id: b.Wait.Call, budget: true}
}

// pricer prices the server's models: the catalog's, or the one model it
// runs.
type pricer struct{ s *Server }

func (p pricer) Price(name string) (runtime.ModelPrice, bool) {
	if name == "" || name == p.s.set.model.Name {
		return p.s.set.model.ModelPrice()
	}
	if p.s.cfg.Models != nil {
		return p.s.cfg.Models.Price(name)
	}
	return runtime.ModelPrice{}, false
}

var _ runtime.Pricer = pricer{}
