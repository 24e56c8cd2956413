package server

import (
	"net/http"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/timeline"
)

// Where the time goes (docs/timeline.md): a thread's timeline and the
// figures over every thread, derived from committed history
// (internal/timeline), so that they are the same on every store and
// after any restart.
//
//	GET /threads/{id}/timeline  the thread's intervals by cause, totals, wait fraction, turns
//	GET /stats?by=agent|tool    totals, wait fraction, queue delay and tool latency p50/p99 by group

// timelineResponse is a thread's timeline.
type timelineResponse struct {
	ThreadID string `json:"thread_id"`
	Agent    string `json:"agent,omitempty"`
	// Now is the time the open interval (if any) ends at.
	Now runtime.Stamp `json:"now"`
	*timeline.Timeline
	QueueDelay  timeline.Quantiles `json:"queue_delay"`
	ToolLatency timeline.Quantiles `json:"tool_latency"`
}

func (s *Server) getTimeline(w http.ResponseWriter, r *http.Request) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	th, err := s.store.Load(r.Context(), thread)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", thread, err)
		return
	}
	if th.State.Version == 0 {
		writeError(w, http.StatusNotFound, "thread_id", "thread %s has no history yet", thread)
		return
	}
	now := runtime.StampOf(s.sys.Engine().Clock())
	tl := timeline.Of(th.Own(), now)
	writeJSON(w, http.StatusOK, timelineResponse{ThreadID: thread, Agent: s.agentOf(&th.State), Now: now, Timeline: tl,
		QueueDelay: timeline.QuantilesOf(samplesMs(tl.Queue)), ToolLatency: timeline.QuantilesOf(samplesMs(tl.Tools))})
}

func samplesMs(ss []timeline.Sample) []int64 {
	ms := make([]int64, len(ss))
	for i, s := range ss {
		ms[i] = s.Ms
	}
	return ms
}

// statsResponse is the figures over the listed threads.
type statsResponse struct {
	timeline.Stats
	// Truncated says more threads exist than a listing reads
	// (limits.max_listed); the figures are of the first ones.
	Truncated bool `json:"truncated,omitempty"`
}

func (s *Server) getStats(w http.ResponseWriter, r *http.Request) {
	by := r.URL.Query().Get("by")
	switch by {
	case "":
		by = "agent"
	case "agent", "tool":
	default:
		writeError(w, http.StatusBadRequest, "by", "%q is neither agent nor tool", by)
		return
	}
	ids := s.store.Threads()
	var resp statsResponse
	if len(ids) > s.set.maxListed {
		ids, resp.Truncated = ids[:s.set.maxListed], true
	}
	now := runtime.StampOf(s.sys.Engine().Clock())
	agg := timeline.NewAggregate(by)
	for _, id := range ids {
		th, err := s.store.Load(r.Context(), id)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", id, err)
			return
		}
		if th.State.Version == 0 {
			continue
		}
		agent := s.agentOf(&th.State)
		if agent == "" {
			agent = "(none)"
		}
		agg.Add(agent, timeline.Of(th.Own(), now))
	}
	resp.Stats = agg.Stats()
	writeJSON(w, http.StatusOK, resp)
}
