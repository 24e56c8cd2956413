package runtime

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
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
	// MaxSummaryBytes caps a summary: a longer reply of the compaction
	// child is cut at a character boundary, with a note saying so.
	// Default (0): as many bytes as the window has tokens, about a
	// quarter of the window.
	MaxSummaryBytes int
}

// maxSummaryBytes is the cap on a summary under p (see MaxSummaryBytes).
func (p *CompactionPolicy) maxSummaryBytes() int {
	if p == nil {
		return 0
	}
	if p.MaxSummaryBytes > 0 {
		return p.MaxSummaryBytes
	}
	return p.ContextWindow
}

// capSummary cuts text to at most limit bytes (0: no limit), at a UTF-8
// character boundary, ending with a note of what was cut.
func capSummary(text string, limit int) string {
	if limit <= 0 || len(text) <= limit {
		return text
	}
	note := fmt.Sprintf(" [summary cut at %d of %d bytes]", limit, len(text))
	n := max(0, limit-len(note))
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + note
}

const defaultCompactionInstructions = "Summarise the conversation above for your own later use: the task, " +
	"what has been done, decisions and their reasons, open questions, and anything a tool call in flight is " +
	"waiting for. Reply with the summary only; it will replace the conversation up to this point."

// maybeCompact starts a compaction child when the thread's last completion
// used most of the context window. The child inherits the view up to the
// covered position and replies with a summary; the summary is appended to
// this thread's history tagged with the position it covers. A pending call
// is never cut off: the covered part ends before it.
//
// A thread whose view reaches more ancestors than Limits.MaxInheritedDepth
// (foldDue) compacts whatever its token count: its summary covers its
// whole view, inherited part included, so that its later slices, and the
// children it spawns after the summary, load none of its ancestors' items.
func (s *slice) maybeCompact() {
	p := s.e.Compaction
	if s.st.Compaction || s.st.Compacting != "" || s.st.Closed {
		return
	}
	if !s.foldDue() && !s.compactionDue(p) {
		return
	}
	s.startCompaction(p)
}

// compactionDue reports whether the thread's last completion used enough
// of the context window under p to compact; a compaction that did not
// shrink the context stops here (stopCompaction) and is never due again.
func (s *slice) compactionDue(p *CompactionPolicy) bool {
	if p == nil || p.ContextWindow <= 0 {
		return false
	}
	window, threshold := s.compactionWindow(p)
	if threshold <= 0 || threshold > 1 {
		threshold = 0.8
	}
	if float64(s.st.Tokens) < threshold*float64(window) {
		return false
	}
	if q := s.ownSummary(); q >= 0 {
		if compactionStopped(s.view[q+1:]) {
			return false // a compaction failed to shrink the context: never again on its own
		}
		if CountCompletions(s.view[q+1:]) <= 1 {
			// The first completion after this thread's latest summary is
			// still above the threshold: the summary did not shrink the
			// context (too long, or the window too small). Compacting again
			// would loop; stop with an error a person can read.
			s.stopCompaction(window, threshold)
			return false
		}
	}
	return true
}

// foldDue reports whether the thread's view reaches more ancestors than
// Limits.MaxInheritedDepth: its chain of uncompacted ancestors is too deep
// and the view is to be folded into one summary. A summary covers at
// least the inherited part (its covers is past every inherited item), so
// after it the view reaches no ancestor and folding is not due again. A
// temporary child (one subscription event) is not folded: it ends soon,
// and its summary would come too late to be of use.
func (s *slice) foldDue() bool {
	n := s.lim.MaxInheritedDepth
	return n > 0 && s.st.Reach > n && !s.st.Temporary && s.reachesAncestors()
}

// reachesAncestors reports whether the model's view of the thread holds
// inherited items: the loaded view has some, and its view start is before
// their end.
func (s *slice) reachesAncestors() bool {
	return s.th.Inherited > 0 && s.st.ViewStart < s.th.Base+s.th.Inherited
}

// childReach is ThreadState.Reach of a child whose view starts at start (a
// position in this thread's full view): one more than this thread's when
// start is in this thread's inherited part, else one.
func (s *slice) childReach(start int) int {
	if s.th.Inherited > 0 && start < s.th.Base+s.th.Inherited {
		return s.st.Reach + 1
	}
	return 1
}

// startCompaction starts the compaction child (see maybeCompact).
func (s *slice) startCompaction(p *CompactionPolicy) {
	covers := s.th.Base + len(s.view) // a position in the full view
	if pc := s.st.Pending; pc != nil {
		for i := len(s.view) - 1; i >= 0; i-- {
			if s.view[i].Kind == ItemToolCall && s.view[i].CallID == pc.ID {
				covers = s.th.Base + i
				break
			}
		}
	}
	// The child's ID comes from the thread's own history length, not from
	// its version: a sent-only commit lost in a crash (Commit.SentOnly)
	// changes the version the same history is at, and the summary of that
	// history is the same compaction. Each compaction appends a summary,
	// so two never start at the same length.
	child := incarnationID("cmp_", s.st.Incarnation, s.threadID, "at", strconv.Itoa(s.ownPos()))
	stack := append(append([]string(nil), s.st.Stack...), child)
	st := ThreadState{Parent: s.threadID, Stack: stack, Temporary: true, Compaction: true, Covers: covers,
		Agent: s.st.Agent, AgentHash: s.st.AgentHash, Upgrade: s.st.Upgrade, ParentClass: s.st.Class.OrDefault(),
		Incarnation: childIncarnation(s.st.Incarnation, child)}
	st.Class = childClass(st.ParentClass, st)
	s.children = append(s.children, ChildThread{ID: child, SpawnAt: covers, State: st})
	text := ""
	if p != nil {
		text = p.Instructions
	}
	if text == "" {
		text = defaultCompactionInstructions
	}
	text += s.owed()
	start := Message{V: MessageVersion, ID: DeriveID("start_", child), ThreadID: child, Kind: KindStart, Text: text, Class: st.Class}
	s.addOutbox(OutboxEntry{Message: &start})
	s.st.Compacting = child
}

// CompactionMarkerName is the Name of the error item (an ItemMarker with
// IsError) that stops compaction of a thread whose summary did not shrink
// its context: after it the thread is not compacted again on its own.
const CompactionMarkerName = "compaction"

// ownSummary returns the index in the view of the thread's own latest
// summary, or -1.
func (s *slice) ownSummary() int {
	for i := len(s.view) - 1; i >= s.th.Inherited; i-- {
		if s.view[i].Kind == ItemSummary {
			return i
		}
	}
	return -1
}

// compactionStopped reports whether items hold the error item of a
// compaction that did not shrink the context.
func compactionStopped(items []Item) bool {
	for i := range items {
		if it := &items[i]; it.Kind == ItemMarker && it.IsError && it.Name == CompactionMarkerName {
			return true
		}
	}
	return false
}

// stopCompaction records that compaction stopped: an error item in history
// and an error event for the user.
func (s *slice) stopCompaction(window int, threshold float64) {
	text := fmt.Sprintf("compaction stopped: the context is still %d tokens after the summary, above the compaction threshold "+
		"of %.0f tokens (%.0f%% of a %d-token window); the summary did not shrink it, so this thread is not compacted again",
		s.st.Tokens, threshold*float64(window), threshold*100, window)
	s.appendItem(Item{Kind: ItemMarker, IsError: true, Name: CompactionMarkerName, Text: text})
	s.addOutbox(OutboxEntry{Output: &OutputEvent{
		ID: incarnationID("out_", s.st.Incarnation, s.threadID, strconv.Itoa(s.ownPos()), "compaction"), ThreadID: s.threadID,
		Kind: "error", Text: text}})
}

// deliverSummary ends a compaction child: its reply goes to the parent as
// the summary, and the child closes.
func (s *slice) deliverSummary(text string) {
	m := Message{V: MessageVersion, ID: DeriveID("sum_", s.threadID), ThreadID: s.st.Parent, Kind: KindSummary,
		From: s.threadID, Text: capSummary(text, s.e.Compaction.maxSummaryBytes()), Covers: s.st.Covers}
	s.addOutbox(OutboxEntry{Message: &m})
	s.st.Closed = true
}

// EffectiveView returns what a model sees of a view: everything, or, when
// the view holds a summary, the summary followed by what it does not cover.
// inherited is how many leading items come from ancestors; the second
// result is the same count for the returned slice.
func EffectiveView(view []Item, inherited int) ([]Item, int) {
	return ModelView(view, inherited, 0)
}

// ModelView is EffectiveView of a view whose first item is at position
// base of the thread's full view (Thread.Base): a summary's covers is a
// full-view position. A view that starts after what its latest summary
// covers (it cannot rebuild the model's view) is returned as it is.
func ModelView(view []Item, inherited, base int) ([]Item, int) {
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
	meta, ok := summaryPosOf(&view[q])
	c := meta.Covers - base
	if !ok || c < 0 || c > q {
		return view, inherited
	}
	out := make([]Item, 0, 1+len(view)-c)
	out = append(out, view[q])
	out = append(out, view[c:q]...)
	out = append(out, view[q+1:]...)
	inh := 0
	if q < inherited {
		inh = 1 + max(0, min(inherited, q)-c) + max(0, inherited-q-1)
	} else {
		inh = max(0, inherited-c)
	}
	return out, inh
}

// summaryMeta is the Args of a summary item. Covers is the position in the
// full view up to which the summary stands for the history; Turns is how
// many completions the thread's own items before Covers hold, and Joined
// whether the last of them is an assistant item (so that a slice loaded
// from Covers counts its turns as a full load would: Turn). Summaries
// written before Turns existed have neither; a thread with one is loaded
// whole (ViewStart 0) until its next summary.
//
// Calls are the tool calls before Covers the thread still owes or is owed
// something for: its active subscriptions, its pending call, and the
// spawn_thread calls of its latest children (at most SummaryChildren),
// with what each was asked (Args), so that an event, a result or a
// child's report tied to one of them is matched without the history the
// summary replaced (findCall).
//
// Title is the thread's title (ThreadTitle) when the summary was made, so
// that it outlives the items it came from.
type summaryMeta struct {
	Covers int           `json:"covers"`
	Turns  int           `json:"turns,omitempty"`
	Joined bool          `json:"joined,omitempty"`
	Calls  []summaryCall `json:"calls,omitempty"`
	Title  string        `json:"title,omitempty"`
}

// TitleMax is the length, in runes, ThreadTitle trims a title to.
const TitleMax = 80

// ThreadTitle is a thread's title: its first own user message (a
// child's: its instructions), on one line, trimmed to TitleMax runes.
func ThreadTitle(own []Item) string {
	for i := range own {
		if own[i].Kind != ItemUser {
			continue
		}
		t := strings.Join(strings.Fields(own[i].Text), " ")
		if utf8.RuneCountInString(t) <= TitleMax {
			return t
		}
		r := []rune(t)
		return strings.TrimSpace(string(r[:TitleMax-1])) + "…"
	}
	return ""
}

// title is the thread's title from the loaded view: ThreadTitle of its
// own items when the load holds them all, else as its latest summary
// kept it.
func (s *slice) title() string {
	if s.th.Base == 0 || s.th.Inherited > 0 {
		return ThreadTitle(s.view[s.th.Inherited:])
	}
	for i := len(s.view) - 1; i >= 0; i-- {
		if s.view[i].Kind == ItemSummary {
			return gjson.Get(s.view[i].Args, "title").String()
		}
	}
	return ""
}

// summaryCall is a tool call a summary keeps.
type summaryCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args,omitempty"`
}

// SummaryChildren is how many of a thread's latest spawn_thread calls a
// summary keeps (summaryMeta.Calls); a report from an older child is
// matched against the whole history, loaded for it.
const SummaryChildren = 16

// keptCalls returns the calls a summary covering the loaded view up to
// index end keeps: those of the previous summary and those in
// view[:end] that are still owed something (see summaryMeta).
func (s *slice) keptCalls(end int) []summaryCall {
	var cand []summaryCall
	for i := end - 1; i >= 0; i-- {
		if s.view[i].Kind == ItemSummary {
			if meta, ok := summaryMetaOf(&s.view[i]); ok {
				cand = append(cand, meta.Calls...)
			}
			break
		}
	}
	for i := range s.view[:end] {
		if it := &s.view[i]; it.Kind == ItemToolCall && !IsSynthetic(it) {
			cand = append(cand, summaryCall{ID: it.CallID, Name: it.Name, Args: it.Args})
		}
	}
	live := func(id string) bool {
		if p := s.st.Pending; p != nil && p.ID == id {
			return true
		}
		return s.subscribed(id)
	}
	var out []summaryCall
	children := 0
	for i := len(cand) - 1; i >= 0; i-- { // latest first
		c := cand[i]
		switch {
		case live(c.ID):
		case c.Name == "spawn_thread" && children < SummaryChildren:
			children++
		default:
			continue
		}
		out = append(out, c)
	}
	slices.Reverse(out)
	return out
}

// owed lists, for the compaction child's instructions, what the thread
// still owes and is owed (the calls a summary keeps, keptCalls) and its
// usage so far, so that the summary carries them on; "" when nothing.
func (s *slice) owed() string {
	var b strings.Builder
	if t := s.title(); t != "" {
		fmt.Fprintf(&b, "\n- the thread's title: %s", t)
	}
	for _, c := range s.keptCalls(len(s.view)) {
		switch {
		case s.st.Pending != nil && s.st.Pending.ID == c.ID:
			fmt.Fprintf(&b, "\n- the call %s (%s) is waiting for its result; it was called with %s", c.ID, c.Name, clip(c.Args))
		case s.subscribed(c.ID):
			fmt.Fprintf(&b, "\n- the subscription started by %s (%s, called with %s) is active: its events will keep arriving", c.ID, c.Name, clip(c.Args))
		default:
			fmt.Fprintf(&b, "\n- child thread %s (spawned by %s) was asked: %s", ChildThreadID(s.threadID, c.ID), c.ID,
				clip(gjson.Get(c.Args, "instructions").String()))
		}
	}
	if u := s.st.Usage; u.Total > 0 {
		fmt.Fprintf(&b, "\n- tokens used so far: %d (%d in, %d out)", u.Total, u.Input, u.Output)
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n\nKeep in the summary what this thread still owes and is owed:" + b.String()
}

// clip shortens s for a list line, at a character boundary.
func clip(s string) string {
	const n = 300
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// summaryCallIn returns, as a tool call item, a call the latest summary
// in view keeps, or nil.
func summaryCallIn(view []Item, id string) *Item {
	for i := len(view) - 1; i >= 0; i-- {
		if view[i].Kind != ItemSummary {
			continue
		}
		var found *Item
		gjson.Get(view[i].Args, "calls").ForEach(func(_, c gjson.Result) bool {
			if c.Get("id").String() != id {
				return true
			}
			found = &Item{Kind: ItemToolCall, CallID: id, Name: c.Get("name").String(), Args: c.Get("args").String()}
			return false
		})
		return found
	}
	return nil
}

// summaryMetaOf decodes a summary's Args whole, its kept calls included:
// for a compaction (keptCalls), not for every load (summaryPosOf).
func summaryMetaOf(it *Item) (summaryMeta, bool) {
	var m summaryMeta
	if err := json.Unmarshal([]byte(it.Args), &m); err != nil || m.Covers < 0 {
		return m, false
	}
	return m, true
}

// summaryPos is what every slice reads of its latest summary's Args: the
// position it covers and the turns before it.
type summaryPos struct {
	Covers, Turns int
	Joined        bool
}

// summaryPosOf reads a summary's covers, turns and joined without
// decoding the rest of its Args. A slice reads them on every load and
// every completion (loadedTurns, ModelView), and the rest, the kept calls
// with their instructions, is the larger part (16 spawn calls: about
// 2.7 KB, against 230 bytes in a young thread's first summary); decoding
// it all with encoding/json was a fifth of the durable store's process CPU
// in loadtest/longrun (docs/longrun.md).
// ok is false where summaryMetaOf's is, for Args that are not a JSON
// object or fields of the wrong type or a negative covers; unlike it, it
// does not check the JSON after the fields it reads (the engine writes
// these Args with json.Marshal).
func summaryPosOf(it *Item) (summaryPos, bool) {
	var p summaryPos
	if !gjson.Parse(it.Args).IsObject() {
		return p, false
	}
	r := gjson.GetMany(it.Args, "covers", "turns", "joined")
	for i, dst := range []*int{&p.Covers, &p.Turns} {
		if r[i].Type == gjson.Null { // absent, or null: as encoding/json, 0
			continue
		}
		n := r[i].Int()
		if r[i].Type != gjson.Number || float64(n) != r[i].Num {
			return p, false
		}
		*dst = int(n)
	}
	if j := r[2]; j.Type != gjson.Null {
		if j.Type != gjson.True && j.Type != gjson.False {
			return p, false
		}
		p.Joined = j.Bool()
	}
	return p, p.Covers >= 0
}

// summaryItem is the item a summary message becomes, and the view start
// it gives the thread: its covers, or 0 when the loaded view cannot count
// the turns before it (a covers position before the loaded part).
func (s *slice) summaryItem(m Message) (Item, int) {
	meta := summaryMeta{Covers: m.Covers}
	start := m.Covers
	switch own := s.th.Inherited; {
	case m.Covers < s.th.Base:
		start = 0 // not reached: a compaction covers at least the view start it began with
	case m.Covers == s.th.Base:
		meta.Turns, meta.Joined = s.turnBase, s.joined
	default:
		end := min(len(s.view), m.Covers-s.th.Base)
		if end > own {
			meta.Turns = s.turnBase + countCompletions(s.view[own:end], s.joined)
			meta.Joined = s.view[end-1].Kind == ItemAssistant
		}
		// else: the summary covers only inherited items; no own turn precedes it.
		meta.Calls = s.keptCalls(end)
	}
	meta.Title = s.title()
	js, _ := json.Marshal(meta) // ints, strings and a bool: cannot fail
	return Item{Kind: ItemSummary, Input: m.ID, Text: m.Text, Args: string(js)}, start
}

// viewStartAt is the view start of a child that inherits the view up to
// position pos: what the latest summary before pos covers, or 0 (the
// whole view; always right) when no loaded summary precedes pos.
func (s *slice) viewStartAt(pos int) int { return viewStartIn(s.view, s.th.Base, pos) }

// viewStartIn is viewStartAt for a view whose first item is at position
// base of the full view.
func viewStartIn(view []Item, base, pos int) int {
	for i := min(len(view), pos-base) - 1; i >= 0; i-- {
		if view[i].Kind != ItemSummary {
			continue
		}
		if meta, ok := summaryPosOf(&view[i]); ok && meta.Covers <= base+i {
			return meta.Covers
		}
		return 0
	}
	return 0
}

// loadedTurns derives, for a view loaded from Thread.Base, how many
// completions the own items left out hold (see summaryMeta): from the
// latest own summary, whose covers is the base.
func (s *slice) loadedTurns() {
	s.turnBase, s.joined = 0, false
	if s.th.Base == 0 || s.th.Inherited > 0 {
		return // every own item is loaded
	}
	for i := len(s.view) - 1; i >= 0; i-- {
		if s.view[i].Kind == ItemSummary {
			if meta, ok := summaryPosOf(&s.view[i]); ok && meta.Covers == s.th.Base {
				s.turnBase, s.joined = meta.Turns, meta.Joined
			}
			return
		}
	}
}

// CountCompletions counts the completions committed in items (a thread's
// own history): every assistant item, and every tool call the model made
// that does not directly follow an assistant item. Synthetic events are not
// completions.
func CountCompletions(items []Item) int { return countCompletions(items, false) }

// countCompletions is CountCompletions of items that follow an assistant
// item when afterAssistant.
func countCompletions(items []Item, afterAssistant bool) int {
	n := 0
	for i := range items {
		it := &items[i]
		switch {
		case it.Kind == ItemAssistant:
			n++
		case it.Kind == ItemToolCall && !IsSynthetic(it):
			prev := afterAssistant
			if i > 0 {
				prev = items[i-1].Kind == ItemAssistant
			}
			if !prev {
				n++
			}
		}
	}
	return n
}
