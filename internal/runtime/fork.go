package runtime

import (
	"crypto/rand"
	"fmt"
	"io"
)

// A fork is a new root thread whose history starts as a prefix of another
// thread's view. It inherits that prefix by position, the way a child
// inherits its parent's view up to the spawn point: stores read the
// source's items, they copy none. The fork is a root (no Parent, its own
// stack): it reports to nobody, and nothing of the source after the fork
// point (a pending call, subscriptions, children) is its.

// ForkPoint is where a forked thread's history comes from.
type ForkPoint struct {
	// Thread is the source thread.
	Thread string `json:"thread"`
	// At is the length of the source's full view (inherited and own) the
	// fork inherits: the source's items [0, At).
	At int `json:"at"`
}

// Upgrade policies (ThreadState.Upgrade).
const (
	UpgradeLatest = "latest"
	UpgradePinned = "pinned"
)

// ValidUpgrade reports whether p is an upgrade policy ("" is latest).
func ValidUpgrade(p string) bool { return p == "" || p == UpgradeLatest || p == UpgradePinned }

// Inherits returns the thread a state's view inherits from and how much of
// that thread's view: the parent and spawnAt for a child, the source and
// Fork.At for a fork, "" for a root. Stores call it where they read the
// inherited part of a view.
func (s *ThreadState) Inherits(spawnAt int) (string, int) {
	switch {
	case s.Parent != "":
		return s.Parent, spawnAt
	case s.Fork != nil:
		return s.Fork.Thread, s.Fork.At
	}
	return "", 0
}

// ForkCut checks that a fork of a thread whose full view is items may cut
// it at at: within the view and not between a tool call and its result
// (every call in a history has its result, invariant 6). The error says
// which positions would do.
func ForkCut(items []Item, at int) error {
	if at < 0 || at > len(items) {
		return fmt.Errorf("position %d is outside the thread's history of %d items", at, len(items))
	}
	open := map[string]int{}
	for i := range items[:at] {
		switch it := &items[i]; it.Kind {
		case ItemToolCall:
			open[it.CallID] = i
		case ItemToolResult:
			delete(open, it.CallID)
		}
	}
	id, pos := "", at
	for c, p := range open {
		if p < pos {
			id, pos = c, p
		}
	}
	if id == "" {
		return nil
	}
	next := at
	for next < len(items) && (items[next].Kind != ItemToolResult || items[next].CallID != id) {
		next++
	}
	if next == len(items) {
		return fmt.Errorf("position %d follows tool call %s (at %d), which has no result yet: fork at %d", at, id, pos, pos)
	}
	return fmt.Errorf("position %d splits tool call %s (at %d) from its result (at %d): fork at %d or at %d or later", at, id, pos, next, pos, next+1)
}

// NewFork returns the first commit of thread id, a fork of src at at (a
// position in src's full view, checked with ForkCut). The fork runs as
// src's agent and model with src's class and upgrade policy, a pinned
// thread on src's version; it has a random incarnation of its own
// (entropy nil: crypto/rand) and nothing of src's state after the fork
// point: no pending call, subscriptions, children, outbox or usage. Its
// view starts (ViewStart) at what the latest summary before at covers, as
// a child's does, so a fork after a compaction loads the summary, not what
// it replaced; its Reach counts src (and src's reach when the fork's
// view starts in src's inherited part). The caller may change Agent, AgentHash and Model before
// committing.
func NewFork(src *Thread, id string, at int, entropy io.Reader) (*Commit, error) {
	if err := ForkCut(src.Items, at); err != nil {
		return nil, err
	}
	if entropy == nil {
		entropy = rand.Reader
	}
	inc, err := newIncarnation(entropy, id)
	if err != nil {
		return nil, err
	}
	st := ThreadState{Version: 1, Stack: []string{id}, Fork: &ForkPoint{Thread: src.ID, At: at},
		Class: src.State.Class, Agent: src.State.Agent, AgentHash: src.State.AgentHash, Model: src.State.Model,
		Upgrade: src.State.Upgrade, Incarnation: inc, ViewStart: viewStartIn(src.Items, src.Base, at)}
	st.Reach = 1 // its view reaches src, and src's ancestors when it starts in src's inherited part
	if src.Inherited > 0 && st.ViewStart < src.Base+src.Inherited {
		st.Reach = src.State.Reach + 1
	}
	return &Commit{ThreadID: id, Expected: 0, State: st}, nil
}
