package server

import (
	"github.com/agentslice/agentslice/internal/runtime"
)

// threadStatus is s.status with what history and the provider wait say:
// an idle thread whose model provider is down is "waiting_for_provider"
// (reason: the provider's latest error), and one whose latest item is a
// failure (a completion that failed for good, runtime.IsFailure) is
// "failed" (reason: the failure's text). A failure stays the status until
// the thread goes on (a new message, a redrive).
func (s *Server) threadStatus(th *runtime.Thread) (status, reason string) {
	var last *runtime.Item
	if own := th.Own(); len(own) > 0 {
		last = &own[len(own)-1]
	}
	return s.statusOf(th.ID, th.State, last)
}

// statusOf is threadStatus given the thread's latest own item (nil: none).
func (s *Server) statusOf(thread string, st runtime.ThreadState, last *runtime.Item) (status, reason string) {
	status = s.status(thread, st)
	if status != "idle" {
		return status, ""
	}
	if w := st.ModelWait; w != nil {
		return "waiting_for_provider", w.Error
	}
	if last != nil && runtime.IsFailure(last) {
		return "failed", last.Text
	}
	return status, ""
}
