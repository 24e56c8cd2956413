package client

import (
	"context"
	"net/url"
	"time"
)

// The causes a thread's time is split into (docs/timeline.md). The wait
// fraction counts waiting_tool, waiting_person, sleeping and
// waiting_children over every cause but idle.
const (
	CauseGenerating      = "generating"
	CauseInSlice         = "in_slice"
	CauseQueued          = "queued"
	CauseWaitingTool     = "waiting_tool"
	CauseWaitingPerson   = "waiting_person"
	CauseSleeping        = "sleeping"
	CauseWaitingChildren = "waiting_children"
	CauseIdle            = "idle"
)

// Causes lists every cause, in the order the API writes totals.
var Causes = []string{CauseGenerating, CauseInSlice, CauseQueued, CauseWaitingTool, CauseWaitingPerson, CauseSleeping, CauseWaitingChildren, CauseIdle}

// Interval is a stretch of a thread's time with one cause.
type Interval struct {
	Cause string    `json:"cause"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Tool names the tool waited on (waits) or run inline (in_slice).
	Tool string `json:"tool,omitempty"`
	// Open says the thread still waits: the interval ends at the
	// timeline's Now.
	Open bool `json:"open,omitempty"`
}

// Quantiles summarises durations.
type Quantiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_seconds"`
	P99   float64 `json:"p99_seconds"`
}

// Sample is one measured duration (a queue delay, a tool's latency).
type Sample struct {
	Tool string `json:"tool,omitempty"`
	Ms   int64  `json:"ms"`
}

// Turn is one user turn's figures.
type Turn struct {
	Start        time.Time          `json:"start"`
	End          time.Time          `json:"end"`
	WaitFraction float64            `json:"wait_fraction"`
	Totals       map[string]float64 `json:"totals"`
}

// Timeline is the answer of GET /threads/{id}/timeline: where a
// thread's time went, derived from its committed history.
type Timeline struct {
	ThreadID  string     `json:"thread_id"`
	Agent     string     `json:"agent,omitempty"`
	Now       time.Time  `json:"now"`
	Intervals []Interval `json:"intervals"`
	// Totals is seconds by cause (every cause present).
	Totals       map[string]float64 `json:"totals"`
	WaitFraction float64            `json:"wait_fraction"`
	Turns        []Turn             `json:"turns"`
	Queue        []Sample           `json:"queue"`
	Tools        []Sample           `json:"tools"`
	QueueDelay   Quantiles          `json:"queue_delay"`
	ToolLatency  Quantiles          `json:"tool_latency"`
}

// Timeline reads where a thread's time went. A thread without history is
// an *APIError 404 (see IsNotFound).
func (c *Client) Timeline(ctx context.Context, thread string) (*Timeline, error) {
	var t Timeline
	if err := c.getJSON(ctx, "/threads/"+url.PathEscape(thread)+"/timeline", nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// StatsGroup is the figures of one agent's threads, or of one tool.
type StatsGroup struct {
	Key          string             `json:"key"`
	Threads      int                `json:"threads"`
	Totals       map[string]float64 `json:"totals"`
	WaitFraction float64            `json:"wait_fraction"`
	QueueDelay   Quantiles          `json:"queue_delay"`
	ToolLatency  Quantiles          `json:"tool_latency"`
}

// Stats is the answer of GET /stats.
type Stats struct {
	By           string             `json:"by"`
	Threads      int                `json:"threads"`
	Truncated    bool               `json:"truncated,omitempty"`
	Totals       map[string]float64 `json:"totals"`
	WaitFraction float64            `json:"wait_fraction"`
	QueueDelay   Quantiles          `json:"queue_delay"`
	ToolLatency  Quantiles          `json:"tool_latency"`
	Groups       []StatsGroup       `json:"groups"`
}

// Stats reads the figures over every thread, grouped by "agent" (the
// default, for "") or by "tool".
func (c *Client) Stats(ctx context.Context, by string) (*Stats, error) {
	var q url.Values
	if by != "" {
		q = url.Values{"by": {by}}
	}
	var s Stats
	if err := c.getJSON(ctx, "/stats", q, &s); err != nil {
		return nil, err
	}
	return &s, nil
}
