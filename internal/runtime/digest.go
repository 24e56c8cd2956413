package runtime

import "encoding/json"

// Digest is what a listing of threads shows of one thread (a row of
// serve's GET /threads), and what it filters and counts by, kept small
// enough that a store can hold it beside the thread and answer a listing
// without loading the thread (the sqlite store's tree index). DigestOf
// makes it from a whole thread, Advance from the previous digest and one
// commit's new items; the two agree (TestDigestAdvanceAgreesWithDigestOf).
type Digest struct {
	Parent   string   `json:"p,omitempty"`
	Children []string `json:"c,omitempty"` // as the state lists them
	// Title is ThreadTitle of the own items; Titled says they hold a user
	// message (so that a later commit does not look for one again).
	Title  string `json:"t,omitempty"`
	Titled bool   `json:"tt,omitempty"`
	// Agent and AgentHash are the state's; Versioned says the thread has
	// committed (Version > 0), for which a thread without an agent runs
	// as the default one.
	Agent     string `json:"a,omitempty"`
	AgentHash string `json:"h,omitempty"`
	Pinned    bool   `json:"pin,omitempty"`
	Versioned bool   `json:"v,omitempty"`
	Temporary bool   `json:"tmp,omitempty"`
	Length    int    `json:"n,omitempty"`
	Tokens    int    `json:"tok,omitempty"`
	// LastActivity is the latest item time of the own items.
	LastActivity Stamp `json:"at,omitempty"`
	Closed       bool  `json:"x,omitempty"`
	// BudgetCall is the call of a budget pause; PendingID and PendingName
	// the pending call's; Choice the Args of the user_choice it waits on
	// (PendingChoice), when it offers one.
	BudgetCall  string `json:"b,omitempty"`
	PendingID   string `json:"pid,omitempty"`
	PendingName string `json:"pn,omitempty"`
	Choice      string `json:"ch,omitempty"`
	// Watching says the state holds an active subscription (a background
	// command, a watch): with no call out, the thread is watching.
	Watching bool `json:"w,omitempty"`
}

// DigestOf is the digest of a thread of state st whose own items are own
// (all of them).
func DigestOf(st *ThreadState, own []Item) Digest {
	return Digest{}.Advance(st, own)
}

// Advance is the digest after a commit that left state st and appended
// the own items added to those d was made of.
func (d Digest) Advance(st *ThreadState, added []Item) Digest {
	n := StateDigest(st)
	n.Title, n.Titled, n.LastActivity = d.Title, d.Titled, d.LastActivity
	if !n.Titled {
		for i := range added {
			if added[i].Kind == ItemUser {
				n.Title, n.Titled = ThreadTitle(added[i:]), true
				break
			}
		}
	}
	for i := range added {
		n.LastActivity = max(n.LastActivity, added[i].At)
	}
	if p := st.Pending; p != nil {
		if args, decided := lastChoice(added, p.ID); decided {
			n.Choice = args
		} else if d.PendingID == p.ID {
			n.Choice = d.Choice
		}
	}
	return n
}

// StateDigest is what the state alone says of a digest: everything but
// the title, the last activity and the pending call's choice, which come
// from items. serve's status of a loaded thread is this with the choice
// read from its history (Digest.Status), so a listing and a thread's own
// status cannot disagree.
func StateDigest(st *ThreadState) Digest {
	d := Digest{Parent: st.Parent, Children: st.Children, Agent: st.Agent, AgentHash: st.AgentHash,
		Pinned: st.Upgrade == UpgradePinned, Versioned: st.Version > 0, Temporary: st.Temporary,
		Length: st.Length, Tokens: st.Tokens, Closed: st.Closed, Watching: len(st.Subscriptions) > 0}
	if b := st.Budget; b != nil && b.Wait != nil {
		d.BudgetCall = b.Wait.Call
	}
	if p := st.Pending; p != nil {
		d.PendingID, d.PendingName = p.ID, p.Name
	}
	return d
}

// lastChoice is PendingChoice over items, and whether items decide it
// (hold the call, its choice or its answer): when they do not, the items
// before them do.
func lastChoice(items []Item, call string) (string, bool) {
	for i := len(items) - 1; i >= 0; i-- {
		it := &items[i]
		if it.CallID != call {
			continue
		}
		switch {
		case it.Kind == ItemToolCall, it.Kind == ItemMarker && it.Name == AnswerMarkerName:
			return "", true
		case it.Kind == ItemMarker && it.Name == ChoiceMarkerName:
			return it.Args, true
		}
	}
	return "", false
}

// OffersChoice reports whether a choice marker's Args offer a choice: a
// user_choice with at least one choice (what serve shows as one).
func OffersChoice(args string) bool {
	var u struct {
		Choices []string `json:"choices"`
	}
	return args != "" && json.Unmarshal([]byte(args), &u) == nil && len(u.Choices) > 0
}

// The statuses of a thread as stored (DurableStatus); serve adds
// "running" for a thread a slice is running on.
const (
	StatusClosed   = "closed"
	StatusChoice   = "waiting_for_choice"
	StatusSleeping = "sleeping"
	StatusTool     = "waiting_for_tool"
	StatusWatching = "watching"
	StatusIdle     = "idle"
)

// Status is the thread's status given which of its calls a person's
// answer is on its way to (answering): closed, a budget pause
// (waiting_for_choice), a sleep (sleeping, a call of one of sleeps), a
// choice offered (waiting_for_choice), another pending call
// (waiting_for_tool), an active subscription with no call out
// (watching), else idle.
func (d *Digest) Status(sleeps map[string]bool, answering func(call string) bool) string {
	switch {
	case d.Closed:
		return StatusClosed
	case d.BudgetCall != "" && !answering(d.BudgetCall):
		return StatusChoice
	case d.PendingID != "" && sleeps[d.PendingName]:
		return StatusSleeping
	case d.PendingID != "" && OffersChoice(d.Choice) && !answering(d.PendingID):
		return StatusChoice
	case d.PendingID != "":
		return StatusTool
	case d.Watching:
		return StatusWatching
	}
	return StatusIdle
}

// SleepToolNames are the names of the built-in tools whose calls are sleeps.
var SleepToolNames = map[string]bool{"sleep": true, "sleep_until": true, "sleep_until_event_or_input": true}

// DurableStatus is Status with no answer on its way: what a store indexes.
func (d *Digest) DurableStatus() string {
	return d.Status(SleepToolNames, func(string) bool { return false })
}
