package timeline

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// MarshalJSON writes every cause, zero or not, in the order of Causes.
func (t Totals) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range Causes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(string(c)))
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(t[c], 'f', 3, 64))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Quantiles summarises durations.
type Quantiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_seconds"`
	P99   float64 `json:"p99_seconds"`
}

// QuantilesOf returns the count and the nearest-rank p50 and p99 of ms
// (milliseconds); it sorts ms.
func QuantilesOf(ms []int64) Quantiles {
	q := Quantiles{Count: len(ms)}
	if len(ms) == 0 {
		return q
	}
	slices.Sort(ms)
	rank := func(p float64) float64 {
		i := int(p*float64(len(ms))+0.999999) - 1
		return float64(ms[min(max(i, 0), len(ms)-1)]) / 1000
	}
	q.P50, q.P99 = rank(0.50), rank(0.99)
	return q
}

// Group is the figures of the threads of one agent, or of one tool.
type Group struct {
	// Key is the agent's or the tool's name.
	Key     string `json:"key"`
	Threads int    `json:"threads"`
	// Totals is seconds by cause: of the group's threads (by agent), or
	// of the intervals spent on the tool (by tool: waiting on it, or
	// running it inline).
	Totals Totals `json:"totals"`
	// WaitFraction is, by agent, the wait fraction of the agent's threads
	// together; by tool, the share of all threads' active time spent
	// waiting on this tool.
	WaitFraction float64 `json:"wait_fraction"`
	// QueueDelay is of the messages the group's threads consumed (by
	// tool: of the tool's results).
	QueueDelay Quantiles `json:"queue_delay"`
	// ToolLatency is of the tool calls (by agent: all the agent's calls).
	ToolLatency Quantiles `json:"tool_latency"`

	queue, lat []int64
}

// Stats is the figures over many threads.
type Stats struct {
	By           string    `json:"by"`
	Threads      int       `json:"threads"`
	Totals       Totals    `json:"totals"`
	WaitFraction float64   `json:"wait_fraction"`
	QueueDelay   Quantiles `json:"queue_delay"`
	ToolLatency  Quantiles `json:"tool_latency"`
	Groups       []*Group  `json:"groups"`
}

// Aggregate sums timelines by agent or by tool.
type Aggregate struct {
	byTool bool
	all    Group
	groups map[string]*Group
}

// NewAggregate returns an empty aggregate grouping by "agent" or "tool".
func NewAggregate(by string) *Aggregate {
	return &Aggregate{byTool: by == "tool", all: Group{Totals: Totals{}}, groups: map[string]*Group{}}
}

func (a *Aggregate) group(key string) *Group {
	g := a.groups[key]
	if g == nil {
		g = &Group{Key: key, Totals: Totals{}}
		a.groups[key] = g
	}
	return g
}

// Add adds one thread's timeline, of a thread running as agent.
func (a *Aggregate) Add(agent string, tl *Timeline) {
	a.all.Threads++
	a.all.Totals.Add(tl.Totals)
	for _, s := range tl.Queue {
		a.all.queue = append(a.all.queue, s.Ms)
	}
	for _, s := range tl.Tools {
		a.all.lat = append(a.all.lat, s.Ms)
	}
	if !a.byTool {
		g := a.group(agent)
		g.Threads++
		g.Totals.Add(tl.Totals)
		for _, s := range tl.Queue {
			g.queue = append(g.queue, s.Ms)
		}
		for _, s := range tl.Tools {
			g.lat = append(g.lat, s.Ms)
		}
		return
	}
	used := map[string]bool{}
	for _, s := range tl.Tools {
		g := a.group(s.Tool)
		g.lat = append(g.lat, s.Ms)
		if !used[s.Tool] {
			used[s.Tool] = true
			g.Threads++
		}
	}
	for _, s := range tl.Queue {
		if s.Tool != "" {
			g := a.group(s.Tool)
			g.queue = append(g.queue, s.Ms)
		}
	}
	for _, iv := range tl.Intervals {
		if iv.Tool != "" {
			a.group(iv.Tool).Totals[iv.Cause] += iv.Seconds()
		}
	}
}

// Stats returns the figures, groups by key.
func (a *Aggregate) Stats() Stats {
	by := "agent"
	if a.byTool {
		by = "tool"
	}
	active := a.all.Totals.Active()
	st := Stats{By: by, Threads: a.all.Threads, Totals: a.all.Totals, WaitFraction: a.all.Totals.WaitFraction(),
		QueueDelay: QuantilesOf(a.all.queue), ToolLatency: QuantilesOf(a.all.lat), Groups: []*Group{}}
	for _, g := range a.groups {
		g.QueueDelay, g.ToolLatency = QuantilesOf(g.queue), QuantilesOf(g.lat)
		if a.byTool {
			var w float64
			for c, s := range g.Totals {
				if c.Waiting() {
					w += s
				}
			}
			if active > 0 {
				g.WaitFraction = w / active
			}
		} else {
			g.WaitFraction = g.Totals.WaitFraction()
		}
		st.Groups = append(st.Groups, g)
	}
	slices.SortFunc(st.Groups, func(x, y *Group) int {
		if x.Key < y.Key {
			return -1
		}
		if x.Key > y.Key {
			return 1
		}
		return 0
	})
	return st
}

var _ json.Marshaler = Totals{}
