package timeline

import (
	"strings"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Cause says what a thread was doing during an Interval.
type Cause string

// The causes, in the order Causes lists them.
const (
	Generating      Cause = "generating"
	InSlice         Cause = "in_slice"
	Queued          Cause = "queued"
	WaitingTool     Cause = "waiting_tool"
	WaitingPerson   Cause = "waiting_person"
	Sleeping        Cause = "sleeping"
	WaitingChildren Cause = "waiting_children"
	Idle            Cause = "idle"
)

// Causes lists every cause.
var Causes = []Cause{Generating, InSlice, Queued, WaitingTool, WaitingPerson, Sleeping, WaitingChildren, Idle}

// Waiting reports whether c is a wait outside the runtime (counted in the
// wait fraction).
func (c Cause) Waiting() bool {
	switch c {
	case WaitingTool, WaitingPerson, Sleeping, WaitingChildren:
		return true
	}
	return false
}

// Interval is a stretch of a thread's time with one cause.
type Interval struct {
	Cause Cause         `json:"cause"`
	Start runtime.Stamp `json:"start"`
	End   runtime.Stamp `json:"end"`
	// Tool names the tool waited on (waits) or run inline (in_slice).
	Tool string `json:"tool,omitempty"`
	// Open marks the last interval of a thread that still waits: it
	// ends at the time the timeline was derived, and is empty when that
	// is the millisecond of the last commit (or before it: a commit's
	// durations laid end to end may reach past its stamp).
	Open bool `json:"open,omitempty"`
}

// Seconds is the interval's length.
func (iv Interval) Seconds() float64 { return float64(iv.End-iv.Start) / 1000 }

// Sample is one measured duration: a message's queue delay or a tool
// call's latency.
type Sample struct {
	// Tool is the tool a result or latency belongs to ("" for a queued
	// message that is not a tool's result).
	Tool string `json:"tool,omitempty"`
	// Ms is the duration in milliseconds.
	Ms int64 `json:"ms"`
}

// Totals is seconds by cause.
type Totals map[Cause]float64

// Active is the total of every cause but idle.
func (t Totals) Active() float64 {
	var a float64
	for c, s := range t {
		if c != Idle {
			a += s
		}
	}
	return a
}

// WaitFraction is the share of the active time spent waiting outside the
// runtime (see the package doc); 0 without active time.
func (t Totals) WaitFraction() float64 {
	a := t.Active()
	if a <= 0 {
		return 0
	}
	var w float64
	for c, s := range t {
		if c.Waiting() {
			w += s
		}
	}
	return w / a
}

// Add adds u's seconds to t's.
func (t Totals) Add(u Totals) {
	for c, s := range u {
		t[c] += s
	}
}

// Turn is one user turn: from a user's message to the start of the idle
// time after it (or the end of the timeline).
type Turn struct {
	Start        runtime.Stamp `json:"start"`
	End          runtime.Stamp `json:"end"`
	WaitFraction float64       `json:"wait_fraction"`
	Totals       Totals        `json:"totals"`
}

// Timeline is where one thread's time went.
type Timeline struct {
	Intervals []Interval `json:"intervals"`
	Totals    Totals     `json:"totals"`
	// WaitFraction is Totals.WaitFraction().
	WaitFraction float64 `json:"wait_fraction"`
	Turns        []Turn  `json:"turns"`
	// Queue is every consumed message's queue delay, in history order.
	Queue []Sample `json:"queue"`
	// Tools is every tool call's latency (dispatch to result for an
	// asynchronous tool, run time for a synchronous one), in history order.
	Tools []Sample `json:"tools"`
}

// Of derives the timeline of a thread from its own items (not the
// inherited ones). now, when not 0, is the current time: a thread still
// waiting gets an open last interval up to it.
func Of(items []runtime.Item, now runtime.Stamp) *Timeline {
	b := builder{tl: &Timeline{Intervals: []Interval{}, Totals: Totals{}, Turns: []Turn{}, Queue: []Sample{}, Tools: []Sample{}},
		open: map[string]call{}}
	for i := 0; i < len(items); {
		it := &items[i]
		switch {
		case it.At == 0, skipped(it):
			i++
		case it.Input != "":
			b.input(it)
			i++
		default:
			i = b.commit(items, i)
		}
	}
	if now != 0 && b.cursor != 0 {
		// The thread waits from the cursor on. Stamps are milliseconds, so
		// now may be the last commit's own stamp (a timeline asked for just
		// after the turn ended): the wait is then open and still empty.
		c, tool := b.waitCause()
		end := max(now, b.cursor)
		b.add(c, b.cursor, end, tool)
		ivs := b.tl.Intervals
		if n := len(ivs); n == 0 || ivs[n-1].End != end || ivs[n-1].Cause != c || ivs[n-1].Tool != tool {
			b.tl.Intervals = append(ivs, Interval{Cause: c, Start: end, End: end, Tool: tool})
		}
		b.tl.Intervals[len(b.tl.Intervals)-1].Open = true
	}
	b.endTurn()
	b.tl.WaitFraction = b.tl.Totals.WaitFraction()
	return b.tl
}

// skipped reports whether an item carries no time of its own: a display
// marker has its result's arrival, and a synthetic event's call is timed
// by its result.
func skipped(it *runtime.Item) bool {
	return (it.Kind == runtime.ItemMarker && it.Name == runtime.DisplayMarkerName) ||
		(it.Kind == runtime.ItemToolCall && runtime.IsSynthetic(it))
}

// call is an asynchronous call waiting for its result.
type call struct {
	name       string
	dispatched runtime.Stamp
	person     bool // a person was asked (user_choice, OAuth)
}

type builder struct {
	tl     *Timeline
	cursor runtime.Stamp
	open   map[string]call
	last   string // the latest open call
	// children counts spawned children that have not reported.
	children int
	turn     *Turn
	// closing are calls closed by a commit of results alone (an
	// interrupted call, a tool gone): the slice made them while folding
	// the message that follows them in history, so they close after the
	// wait for that message is accounted.
	closing []string
}

// settle closes the calls in closing.
func (b *builder) settle() {
	for _, id := range b.closing {
		b.close(id)
	}
	b.closing = b.closing[:0]
}

// add accounts [from, to) to cause c, from the cursor on.
func (b *builder) add(c Cause, from, to runtime.Stamp, tool string) {
	if b.cursor == 0 {
		b.cursor = from
	}
	from = max(from, b.cursor)
	if to <= from {
		return
	}
	b.cursor = to
	sec := float64(to-from) / 1000
	b.tl.Totals[c] += sec
	if b.turn != nil {
		if c == Idle {
			b.endTurnAt(from)
		} else {
			b.turn.Totals[c] += sec
			b.turn.End = to
		}
	}
	ivs := b.tl.Intervals
	if n := len(ivs); n > 0 && ivs[n-1].Cause == c && ivs[n-1].Tool == tool && ivs[n-1].End == from {
		ivs[n-1].End = to
		return
	}
	b.tl.Intervals = append(ivs, Interval{Cause: c, Start: from, End: to, Tool: tool})
}

// waitCause is what the thread waits on between slices.
func (b *builder) waitCause() (Cause, string) {
	if c, ok := b.open[b.last]; ok {
		switch {
		case c.person:
			return WaitingPerson, c.name
		case c.name == "sleep_until_event_or_input" && b.children > 0:
			return WaitingChildren, ""
		case strings.HasPrefix(c.name, "sleep"):
			return Sleeping, c.name
		}
		return WaitingTool, c.name
	}
	if b.children > 0 {
		return WaitingChildren, ""
	}
	return Idle, ""
}

// input accounts an item that consumed a message: the wait until it
// arrived, then its queueing until its slice began.
func (b *builder) input(it *runtime.Item) {
	arrived := it.At
	began := arrived + runtime.Stamp(it.Took)
	if b.cursor != 0 {
		c, tool := b.waitCause()
		b.add(c, b.cursor, arrived, tool)
	}
	b.settle()
	if it.Kind == runtime.ItemUser && b.turn == nil {
		b.turn = &Turn{Start: max(arrived, b.cursor), End: max(arrived, b.cursor), Totals: Totals{}}
	}
	b.add(Queued, arrived, began, "")
	if b.cursor < began {
		b.cursor = began
	}
	sample := Sample{Ms: int64(it.Took)}
	switch it.Kind {
	case runtime.ItemToolResult:
		if c, ok := b.open[it.CallID]; ok {
			sample.Tool = c.name
			b.tl.Tools = append(b.tl.Tools, Sample{Tool: c.name, Ms: int64(arrived - c.dispatched)})
			b.close(it.CallID)
		} else if runtime.IsSynthetic(it) && strings.HasPrefix(it.Text, "Report from child thread") && b.children > 0 {
			b.children--
		}
	case runtime.ItemMarker:
		if c, ok := b.open[it.CallID]; ok && (it.Name == runtime.ChoiceMarkerName || strings.HasPrefix(it.Input, "oauth_")) {
			c.person = true
			b.open[it.CallID] = c
		}
	}
	b.tl.Queue = append(b.tl.Queue, sample)
}

func (b *builder) close(callID string) {
	delete(b.open, callID)
	if b.last == callID {
		b.last = ""
	}
}

// commit accounts the items of one commit, from items[i] on (those
// after it without an input of their own and with the same time), and
// returns the index after them: the time before the commit is in_slice,
// but for its completions and synchronous tools, laid end to end up to
// the commit's time.
func (b *builder) commit(items []runtime.Item, i int) int {
	at := items[i].At
	j := i
	var busy runtime.Stamp
	closures := true
	for ; j < len(items) && items[j].Input == "" && (items[j].At == at || skipped(&items[j])); j++ {
		if it := &items[j]; !skipped(it) {
			busy += runtime.Stamp(it.Took)
			if c, ok := b.open[it.CallID]; it.Kind != runtime.ItemToolResult || !ok || c.dispatched == at {
				closures = false
			}
		}
	}
	if closures && j < len(items) && items[j].Input != "" && items[j].At <= at {
		for k := i; k < j; k++ {
			if !skipped(&items[k]) {
				b.closing = append(b.closing, items[k].CallID)
			}
		}
		return j
	}
	b.settle()
	if b.cursor == 0 {
		b.cursor = at - busy
	}
	x := max(at-busy, b.cursor)
	b.add(InSlice, b.cursor, x, "")
	for k := i; k < j; k++ {
		it := &items[k]
		if skipped(it) {
			continue
		}
		d := runtime.Stamp(it.Took)
		switch it.Kind {
		case runtime.ItemAssistant:
			b.add(Generating, x, x+d, "")
		case runtime.ItemToolCall:
			b.add(Generating, x, x+d, "")
			b.open[it.CallID] = call{name: it.Name, dispatched: at}
			b.last = it.CallID
			if it.Name == "spawn_thread" {
				b.children++
			}
		case runtime.ItemToolResult:
			if c, ok := b.open[it.CallID]; ok {
				if d > 0 || c.dispatched == at {
					b.add(InSlice, x, x+d, c.name)
					b.tl.Tools = append(b.tl.Tools, Sample{Tool: c.name, Ms: int64(d)})
				}
				b.close(it.CallID)
			}
		}
		x += d
	}
	b.add(InSlice, b.cursor, at, "")
	return j
}

func (b *builder) endTurnAt(end runtime.Stamp) {
	t := b.turn
	b.turn = nil
	if t.End < end {
		t.End = end
	}
	t.WaitFraction = t.Totals.WaitFraction()
	b.tl.Turns = append(b.tl.Turns, *t)
}

func (b *builder) endTurn() {
	if b.turn != nil {
		b.endTurnAt(b.turn.End)
	}
}
