package runtime

import (
	"encoding/json"
	"strconv"
)

// CompactionPolicy says when and how a thread is summarised.
type CompactionPolicy struct {
	// ContextWindow is the model's context window in tokens.
	ContextWindow int
	// Threshold is the fraction of the window (total tokens of the latest
	// completion, cached ones included) at which compaction starts.
	// Default 0.8.
	Threshold float64
	// Instructions for the compaction child; a default is used when empty.
	Instructions string
}

const defaultCompactionInstructions = "Summarise the conversation above for your own later use: the task, " +
	"what has been done, decisions and their reasons, open questions, and anything a tool call in flight is " +
	"waiting for. Reply with the summary only; it will replace the conversation up to this point."

// maybeCompact starts a compaction child when the thread's last completion
// used most of the context window. The child inherits the view up to the
// covered position and replies with a summary; the summary is appended to
// this thread's history tagged with the position it covers. A pending call
// is never cut off: the covered part ends before it.
func (s *slice) maybeCompact() {
	p := s.e.Compaction
	if p == nil || p.ContextWindow <= 0 || s.st.Compaction || s.st.Compacting != "" || s.st.Closed {
		return
	}
	window, threshold := s.compactionWindow(p)
	if threshold <= 0 || threshold > 1 {
		threshold = 0.8
	}
	if float64(s.st.Tokens) < threshold*float64(window) {
		return
	}
	covers := len(s.view)
	if pc := s.st.Pending; pc != nil {
		for i := len(s.view) - 1; i >= 0; i-- {
			if s.view[i].Kind == ItemToolCall && s.view[i].CallID == pc.ID {
				covers = i
				break
			}
		}
	}
	child := incarnationID("cmp_", s.st.Incarnation, s.threadID, strconv.FormatInt(s.version+1, 10))
	stack := append(append([]string(nil), s.st.Stack...), child)
	st := ThreadState{Parent: s.threadID, Stack: stack, Temporary: true, Compaction: true, Covers: covers,
		Agent: s.st.Agent, AgentHash: s.st.AgentHash, Upgrade: s.st.Upgrade, ParentClass: s.st.Class.OrDefault(),
		Incarnation: childIncarnation(s.st.Incarnation, child)}
	st.Class = childClass(st.ParentClass, st)
	s.children = append(s.children, ChildThread{ID: child, SpawnAt: covers, State: st})
	text := p.Instructions
	if text == "" {
		text = defaultCompactionInstructions
	}
	start := Message{V: MessageVersion, ID: DeriveID("start_", child), ThreadID: child, Kind: KindStart, Text: text, Class: st.Class}
	s.addOutbox(OutboxEntry{Message: &start})
	s.st.Compacting = child
}

// deliverSummary ends a compaction child: its reply goes to the parent as
// the summary, and the child closes.
func (s *slice) deliverSummary(text string) {
	m := Message{V: MessageVersion, ID: DeriveID("sum_", s.threadID), ThreadID: s.st.Parent, Kind: KindSummary,
		From: s.threadID, Text: text, Covers: s.st.Covers}
	s.addOutbox(OutboxEntry{Message: &m})
	s.st.Closed = true
}

// EffectiveView returns what a model sees of a view: everything, or, when
// the view holds a summary, the summary followed by what it does not cover.
// inherited is how many leading items come from ancestors; the second
// result is the same count for the returned slice.
func EffectiveView(view []Item, inherited int) ([]Item, int) {
	q := -1
	for i := len(view) - 1; i >= 0; i-- {
		if view[i].Kind == ItemSummary {
			q = i
			break
		}
	}
	if q < 0 {
		return view, inherited
	}
	var meta struct {
		Covers int `json:"covers"`
	}
	if err := json.Unmarshal([]byte(view[q].Args), &meta); err != nil || meta.Covers < 0 || meta.Covers > q {
		return view, inherited
	}
	out := make([]Item, 0, 1+len(view)-meta.Covers)
	out = append(out, view[q])
	out = append(out, view[meta.Covers:q]...)
	out = append(out, view[q+1:]...)
	inh := 0
	if q < inherited {
		inh = 1 + max(0, min(inherited, q)-meta.Covers) + max(0, inherited-q-1)
	} else {
		inh = max(0, inherited-meta.Covers)
	}
	return out, inh
}

// CountCompletions counts the completions committed in items (a thread's
// own history): every assistant item, and every tool call the model made
// that does not directly follow an assistant item. Synthetic events are not
// completions.
func CountCompletions(items []Item) int {
	n := 0
	for i := range items {
		it := &items[i]
		switch {
		case it.Kind == ItemAssistant:
			n++
		case it.Kind == ItemToolCall && !IsSynthetic(it):
			if i == 0 || items[i-1].Kind != ItemAssistant {
				n++
			}
		}
	}
	return n
}
