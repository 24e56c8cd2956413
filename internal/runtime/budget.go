package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Budgets: every completion is admitted before the model is called.
//
//   - A thread's own limit (ThreadState.Budget.Limit, else its agent's
//     Agent.Budget) is checked in the slice against the thread's committed
//     spend: a thread's slices are serialised, so nothing else spends on
//     it meanwhile.
//   - A tree's limit (a root thread and all its descendants counted
//     together) is shared by slices running at once, so it lives in the
//     Ledger: the completion reserves an estimate (the request's size and
//     the model's max output tokens) and settles the real usage after.
//
// When a limit would be passed the thread does not fail: it commits a
// user_choice marker ("budget of X reached: raise by Y / stop") and a
// BudgetWait, and the model does not run until the wait ends: an answer
// to the choice (KindAnswer on the wait's call), a KindBudget message
// raising the limit, or, for a tree, the wake-up the thread that raised
// the tree's limit sends every thread of the tree waiting on it.
//
// Crash safety: a reservation carries the completion's ID, which a retried
// slice derives again; the ledger keeps at most one reservation per thread
// (a thread runs one completion at a time), so a retried completion finds
// its own reservation and a later one releases an abandoned one. A
// reservation of a thread that never runs again stays held: at most one
// reservation per such thread.

// Budget is a spending limit. A zero field sets no limit on its measure.
type Budget struct {
	// Tokens is the most tokens (input, output and cached, as the provider
	// counts its total).
	Tokens int64 `json:"tokens,omitempty"`
	// USD is the most US dollars, at the model catalog's prices.
	USD float64 `json:"usd,omitempty"`
}

// IsZero reports whether b limits nothing.
func (b Budget) IsZero() bool { return b.Tokens == 0 && b.USD == 0 }

// Validate checks b; field prefixes the names in its error.
func (b Budget) Validate(field string) error {
	if b.Tokens < 0 {
		return fmt.Errorf("%s.tokens: must not be negative (got %d)", field, b.Tokens)
	}
	if b.USD < 0 || math.IsNaN(b.USD) || math.IsInf(b.USD, 0) {
		return fmt.Errorf("%s.usd: must be a non-negative amount (got %v)", field, b.USD)
	}
	return nil
}

func (b Budget) String() string {
	switch {
	case b.Tokens > 0 && b.USD > 0:
		return fmt.Sprintf("%d tokens / $%.4g", b.Tokens, b.USD)
	case b.USD > 0:
		return fmt.Sprintf("$%.4g", b.USD)
	default:
		return fmt.Sprintf("%d tokens", b.Tokens)
	}
}

// micros is b.USD in millionths of a dollar, 0 for no limit.
func (b Budget) micros() int64 { return int64(math.Round(b.USD * 1e6)) }

// Spend is what was used: tokens and millionths of a US dollar.
type Spend struct {
	Tokens int64 `json:"tokens,omitempty"`
	Micros int64 `json:"usd_micros,omitempty"`
}

// Add returns a + b.
func (a Spend) Add(b Spend) Spend {
	return Spend{Tokens: a.Tokens + b.Tokens, Micros: a.Micros + b.Micros}
}

// USD is the dollars of a.
func (a Spend) USD() float64 { return float64(a.Micros) / 1e6 }

// Exceeds reports whether a passes the limit b.
func (a Spend) Exceeds(b Budget) bool {
	return (b.Tokens > 0 && a.Tokens > b.Tokens) || (b.USD > 0 && a.Micros > b.micros())
}

// Budget scopes.
const (
	BudgetThread = "thread"
	BudgetTree   = "tree"
)

// BudgetChange is what a KindBudget message (or a user message creating a
// thread) does to a limit: set it to Limit, or, with Add, raise it by
// Limit. A KindBudget message without one wakes a thread waiting on its
// tree's budget (sent by the thread that raised it).
type BudgetChange struct {
	// Scope is BudgetThread (default) or BudgetTree (the limit of the
	// thread's whole tree, kept in the Ledger).
	Scope string `json:"scope,omitempty"`
	Limit Budget `json:"limit"`
	Add   bool   `json:"add,omitempty"`
}

func (c *BudgetChange) validate() error {
	switch c.Scope {
	case "", BudgetThread, BudgetTree:
	default:
		return fmt.Errorf("budget.scope: unknown scope %q (want %q or %q)", c.Scope, BudgetThread, BudgetTree)
	}
	return c.Limit.Validate("budget.limit")
}

// Apply returns the limit cur becomes.
func (c BudgetChange) Apply(cur Budget) Budget {
	if !c.Add {
		return c.Limit
	}
	if c.Limit.Tokens > 0 {
		cur.Tokens += c.Limit.Tokens
	}
	if c.Limit.USD > 0 {
		cur.USD += c.Limit.USD
	}
	return cur
}

// BudgetState is a thread's budget bookkeeping, committed with its turns.
type BudgetState struct {
	// Limit is the thread's own limit, when one was set (at creation or
	// through a KindBudget message); nil: the agent's, if any.
	Limit *Budget `json:"limit,omitempty"`
	// Micros is the thread's cost in millionths of a dollar (its tokens
	// are ThreadState.Usage).
	Micros int64 `json:"usd_micros,omitempty"`
	// Wait is set while the thread waits for a person to raise a limit.
	Wait *BudgetWait `json:"wait,omitempty"`
}

// BudgetWait is a thread waiting on a budget.
type BudgetWait struct {
	// Call is the ID of the user_choice asking for the raise.
	Call  string `json:"call"`
	Scope string `json:"scope"`
	// Limit is the limit that would be passed; Raise the raise offered.
	Limit Budget    `json:"limit"`
	Raise Budget    `json:"raise"`
	Since time.Time `json:"since"`
}

// Reservation is what a completion asks the ledger for.
type Reservation struct {
	Tree, Thread string
	// ID is the completion's (CompletionRequest.ID): a retried slice asks
	// with the same one.
	ID     string
	Amount Spend
}

// Ledger keeps the spend and limit of trees of threads (a root and its
// descendants), shared by the slices of one tree running at once. A tree
// has an account from the first Change of its limit on: a tree whose limit
// was never set is admitted without one (nothing kept, nothing written),
// and a tree's spend counts from when its limit was set.
// Implementations: internal/local (memory), internal/disk (serve's data
// directory), internal/dsql (serve's PostgreSQL store), internal/dedup
// (DynamoDB). All pass
// runtime/storetest.RunLedger.
type Ledger interface {
	// Reserve admits r against its tree's limit and holds r.Amount until
	// Settle. It is idempotent per (thread, ID), after Settle too: the
	// completion done again by a slice that died after settling and before
	// its commit is admitted and settled no second time, so a tree's spend
	// is what its threads commit. A different reservation
	// the thread still holds (its slice crashed) is released first. ok
	// false: the tree's limit would be passed; nothing is reserved and the
	// thread is recorded as waiting on the tree.
	Reserve(ctx context.Context, r Reservation) (ok bool, err error)
	// Settle replaces the thread's reservation id with what the completion
	// really used. Settling a reservation not held (settled already, or
	// released) is a no-op returning nil.
	Settle(ctx context.Context, tree, thread, id string, used Spend) error
	// Change applies c to the tree's limit once per id (a retried slice
	// changes it once) and returns the threads waiting on the tree, which
	// the caller wakes.
	Change(ctx context.Context, tree, id string, c BudgetChange) (waiting []string, err error)
}

// Account is a tree's state in a Ledger.
type Account struct {
	Limit    Budget   `json:"limit"`
	Spent    Spend    `json:"spent"`
	Reserved Spend    `json:"reserved"`
	Waiting  []string `json:"waiting,omitempty"`
}

// ModelPrice is a model's prices in US dollars per million tokens, and the
// largest completion it makes (for reservations).
type ModelPrice struct {
	Input, Output, CacheRead, CacheWrite float64
	// InputIncludesCached says the provider counts cache reads in
	// Usage.Input (OpenAI's prompt_tokens do; Bedrock's inputTokens do
	// not).
	InputIncludesCached bool
	MaxOutputTokens     int
}

// Cost is what u costs at p, in millionths of a dollar (a price per
// million tokens times tokens is millionths).
func (p ModelPrice) Cost(u Usage) int64 {
	in := u.Input
	if p.InputIncludesCached {
		in = max(in-u.Cached, 0)
	}
	c := float64(in)*p.Input + float64(u.Output)*p.Output + float64(u.Cached)*p.CacheRead + float64(u.CacheWrite)*p.CacheWrite
	return int64(math.Ceil(c))
}

// Pricer returns the prices of a model by catalog name ("" is the
// default model); ok false when it has none (its cost counts as 0).
type Pricer interface {
	Price(model string) (p ModelPrice, ok bool)
}

// Budgets configures admission of completions (Engine.Budgets).
type Budgets struct {
	// Ledger keeps the trees' limits and spend; nil: thread and agent
	// limits only, and tree limits cannot be set.
	Ledger Ledger
	// Prices turn usage into cost; nil: every cost is 0 (token limits
	// still apply).
	Prices Pricer
	// DefaultMaxOutputTokens is the output a reservation plans for when
	// the model's price says nothing. Default 4096.
	DefaultMaxOutputTokens int
}

func tokensOf(u Usage) int64 {
	if u.Total > 0 {
		return int64(u.Total)
	}
	return int64(u.Input + u.Output + u.Cached + u.CacheWrite)
}

// ThreadSpend is what th has spent (tokens and cost), from its state.
func ThreadSpend(st *ThreadState) Spend {
	sp := Spend{Tokens: tokensOf(st.Usage)}
	if st.Budget != nil {
		sp.Micros = st.Budget.Micros
	}
	return sp
}

// TreeOf returns the root of st's tree (the thread itself for a root).
func TreeOf(threadID string, st *ThreadState) string {
	if len(st.Stack) > 0 {
		return st.Stack[0]
	}
	return threadID
}

// budgetOn reports whether the slice admits completions at all.
func (s *slice) budgetOn() bool {
	if s.e.Budgets != nil {
		return true
	}
	if s.st.Budget != nil && s.st.Budget.Limit != nil {
		return true
	}
	v := s.agent.v
	return v != nil && v.Agent.Budget != nil
}

// threadLimit is the thread's own limit: set on it, else its agent's.
func (s *slice) threadLimit() *Budget {
	if s.st.Budget != nil && s.st.Budget.Limit != nil {
		return s.st.Budget.Limit
	}
	if v := s.agent.v; v != nil && v.Agent.Budget != nil {
		return v.Agent.Budget
	}
	return nil
}

func (s *slice) budgetState() *BudgetState {
	if s.st.Budget == nil {
		s.st.Budget = &BudgetState{}
	} else {
		b := *s.st.Budget // copy-on-write: the loaded state may be shared
		s.st.Budget = &b
	}
	s.changed()
	return s.st.Budget
}

// modelName is the catalog name of the model the completion runs.
func (s *slice) modelName() string {
	if s.st.Model != "" {
		return s.st.Model
	}
	if v := s.agent.v; v != nil {
		return v.Agent.Model
	}
	return ""
}

func (s *slice) price() (ModelPrice, bool) {
	if s.e.Budgets == nil || s.e.Budgets.Prices == nil {
		return ModelPrice{}, false
	}
	return s.e.Budgets.Prices.Price(s.modelName())
}

// estimate is the most the next completion is planned to spend: the
// latest completion's tokens (the view it saw and what it said), what
// came since (a quarter token per byte, generously), and a whole
// completion of output.
func (s *slice) estimate() Spend {
	p, _ := s.price()
	out := p.MaxOutputTokens
	if out <= 0 {
		out = 4096
		if s.e.Budgets != nil && s.e.Budgets.DefaultMaxOutputTokens > 0 {
			out = s.e.Budgets.DefaultMaxOutputTokens
		}
	}
	var bytes int
	from := s.mark
	if s.st.Tokens == 0 {
		from = 0 // no completion yet: the whole view is new
		bytes = len(s.req.System)
	}
	for i := from; i < len(s.view); i++ {
		it := &s.view[i]
		bytes += len(it.Text) + len(it.Args) + len(it.Reasoning)
	}
	in := s.st.Tokens + bytes/3 + 1
	return Spend{Tokens: int64(in + out), Micros: int64(math.Ceil(float64(in)*p.Input + float64(out)*p.Output))}
}

// admit checks the completion about to run against the thread's and the
// tree's limits. held reports a ledger reservation to settle; paused that
// the thread now waits on a budget (the completion must not run).
func (s *slice) admit(ctx context.Context) (held, paused bool, err error) {
	if !s.budgetOn() {
		return false, false, nil
	}
	est := s.estimate()
	if lim := s.threadLimit(); lim != nil && ThreadSpend(&s.st).Add(est).Exceeds(*lim) {
		s.pauseForBudget(ctx, BudgetThread, *lim, est)
		return false, true, nil
	}
	if s.e.Budgets == nil || s.e.Budgets.Ledger == nil {
		return false, false, nil
	}
	tree := TreeOf(s.threadID, &s.st)
	ok, err := s.e.Budgets.Ledger.Reserve(ctx, Reservation{Tree: tree, Thread: s.threadID, ID: s.req.ID(), Amount: est})
	if err != nil {
		return false, false, fmt.Errorf("runtime: reserving budget for thread %s in tree %s: %w", s.threadID, tree, err)
	}
	if !ok {
		s.pauseForBudget(ctx, BudgetTree, Budget{}, est)
		return false, true, nil
	}
	return true, false, nil
}

// settle records what the completion used: the thread's cost in its state,
// and the tree's spend in the ledger when a reservation is held.
func (s *slice) settle(ctx context.Context, held bool, used Usage) error {
	var cost int64
	if p, ok := s.price(); ok {
		cost = p.Cost(used)
	}
	if cost != 0 {
		s.budgetState().Micros += cost
	}
	if !held {
		return nil
	}
	tree := TreeOf(s.threadID, &s.st)
	if err := s.e.Budgets.Ledger.Settle(ctx, tree, s.threadID, s.req.ID(), Spend{Tokens: tokensOf(used), Micros: cost}); err != nil {
		return fmt.Errorf("runtime: settling budget for thread %s in tree %s: %w", s.threadID, tree, err)
	}
	return nil
}

// budgetChoice is the Args of a budget pause's choice marker: the shape of
// a tool's user_choice, so that every client shows it as one.
type budgetChoice struct {
	ID      string   `json:"id"`
	Prompt  string   `json:"prompt"`
	Choices []string `json:"choices"`
	Default *int     `json:"default"`
	Budget  string   `json:"budget"` // the scope
}

// BudgetMarkerName is the Name of the marker items saying that a budget
// wait ended (raised or stopped); the pause itself is a user_choice marker
// (ChoiceMarkerName) whose CallID is BudgetWait.Call.
const BudgetMarkerName = "budget"

// pauseForBudget makes the thread wait for a person: a user_choice marker
// offering to raise the limit by what the completion needs (at least the
// limit again, so a person is not asked at every turn), and the wait.
func (s *slice) pauseForBudget(ctx context.Context, scope string, limit Budget, est Spend) {
	if scope == BudgetTree && s.e.Budgets != nil {
		if a, ok := s.e.Budgets.Ledger.(interface {
			Account(ctx context.Context, tree string) (Account, error)
		}); ok {
			if acc, err := a.Account(ctx, TreeOf(s.threadID, &s.st)); err == nil {
				limit = acc.Limit
			}
		}
	}
	raise := Budget{}
	if limit.Tokens > 0 {
		raise.Tokens = max(limit.Tokens, est.Tokens)
	}
	if limit.USD > 0 {
		raise.USD = max(limit.USD, Spend{Micros: est.Micros}.USD())
	}
	if raise.IsZero() {
		raise.Tokens = est.Tokens
	}
	call := incarnationID("budget_", s.st.Incarnation, s.threadID, strconv.Itoa(s.ownPos()))
	what := "the thread's budget"
	if scope == BudgetTree {
		what = "the budget of the thread's tree"
	}
	def := 1
	ch := budgetChoice{ID: call, Prompt: fmt.Sprintf("%s of %s is reached", what, limit), Budget: scope,
		Choices: []string{"raise by " + raise.String(), "stop"}, Default: &def}
	js, _ := json.Marshal(ch) // strings and ints: cannot fail
	s.appendItem(Item{Kind: ItemMarker, CallID: call, Name: ChoiceMarkerName, Args: string(js), Text: ch.Prompt})
	s.budgetState().Wait = &BudgetWait{Call: call, Scope: scope, Limit: limit, Raise: raise, Since: s.e.now()}
	s.addOutbox(OutboxEntry{Output: &OutputEvent{ID: DeriveID("out_", s.threadID, call), ThreadID: s.threadID,
		Kind: "notice", Text: ch.Prompt + ": raise it or stop (choice " + call + ")"}})
	s.observe(ctx, Event{Type: EventBudgetWaiting, ThreadID: s.threadID, Reason: ch.Prompt})
}

// budgetWait returns the thread's budget wait, nil when it has none.
func (s *slice) budgetWait() *BudgetWait {
	if s.st.Budget == nil {
		return nil
	}
	return s.st.Budget.Wait
}

// foldBudget applies a KindBudget message (a new limit, or a tree's
// wake-up). It reports whether the model should run.
func (s *slice) foldBudget(ctx context.Context, m Message) (bool, error) {
	if m.Budget == nil {
		// A wake-up: the tree's limit was raised by another thread.
		w := s.budgetWait()
		if w == nil || w.Scope != BudgetTree {
			s.consume(m.ID)
			return false, nil
		}
		s.endBudgetWait(m.ID, "the tree's budget was raised")
		return true, nil
	}
	if err := s.changeBudget(ctx, m.ID, *m.Budget); err != nil {
		return false, err
	}
	c := m.Budget
	scope := c.Scope
	if scope == "" {
		scope = BudgetThread
	}
	text := fmt.Sprintf("%s budget set to %s", scope, c.Limit)
	if c.Add {
		text = fmt.Sprintf("%s budget raised by %s", scope, c.Limit)
	}
	if w := s.budgetWait(); w != nil {
		s.endBudgetWait(m.ID, text)
		return true, nil
	}
	s.appendItem(Item{Kind: ItemMarker, Input: m.ID, Name: BudgetMarkerName, Text: text})
	return false, nil
}

// changeBudget applies c (message id) to the thread's or the tree's limit;
// a tree's change wakes the tree's waiting threads.
func (s *slice) changeBudget(ctx context.Context, id string, c BudgetChange) error {
	if c.Scope != BudgetTree {
		cur := Budget{}
		if l := s.threadLimit(); l != nil {
			cur = *l
		}
		nl := c.Apply(cur)
		s.budgetState().Limit = &nl
		s.changed()
		return nil
	}
	if s.e.Budgets == nil || s.e.Budgets.Ledger == nil {
		return Permanent(fmt.Errorf("runtime: this deployment keeps no ledger: a tree's budget cannot be set"))
	}
	tree := TreeOf(s.threadID, &s.st)
	waiting, err := s.e.Budgets.Ledger.Change(ctx, tree, id, c)
	if err != nil {
		return fmt.Errorf("runtime: changing the budget of tree %s: %w", tree, err)
	}
	for _, t := range waiting {
		if t == s.threadID {
			continue
		}
		wake := Message{V: MessageVersion, ID: DeriveID("bwake_", t, id), ThreadID: t, Kind: KindBudget, Class: s.st.Class.OrDefault()}
		s.addOutbox(OutboxEntry{Message: &wake})
	}
	s.changed()
	return nil
}

// foldBudgetAnswer applies a person's answer to a budget pause: 0 raises
// the limit by the raise offered, anything else stops. It reports whether
// the model should run.
func (s *slice) foldBudgetAnswer(ctx context.Context, m Message, w *BudgetWait) (bool, error) {
	s.appendItem(Item{Kind: ItemMarker, Input: m.ID, CallID: m.ToolCallID, Name: AnswerMarkerName, Args: m.Choice, Text: m.Text})
	var a struct {
		Selected int `json:"selected"`
	}
	_ = json.Unmarshal([]byte(m.Choice), &a) // validated: a numeric selected
	if a.Selected != 0 {
		s.endBudgetWait("", "stopped at the budget")
		return false, nil
	}
	if err := s.changeBudget(ctx, m.ID, BudgetChange{Scope: w.Scope, Limit: w.Raise, Add: true}); err != nil {
		return false, err
	}
	s.endBudgetWait("", fmt.Sprintf("%s budget raised by %s", w.Scope, w.Raise))
	return true, nil
}

// endBudgetWait clears the wait with a marker saying why.
func (s *slice) endBudgetWait(input, text string) {
	b := s.budgetState()
	call := ""
	if b.Wait != nil {
		call = b.Wait.Call
	}
	b.Wait = nil
	s.appendItem(Item{Kind: ItemMarker, Input: input, CallID: call, Name: BudgetMarkerName, Text: text})
}

// budgetRefused handles a failed budget change: a permanent one rejects
// the message, a transient one (the ledger) retries the slice.
func (s *slice) budgetRefused(ctx context.Context, m Message, err error) {
	if IsPermanent(err) {
		s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "budget", Reason: err.Error()})
		return
	}
	if s.foldErr == nil {
		s.foldErr = err
	}
}
