package server

import (
	"errors"
	"hash/maphash"
	"net/http"
	"strings"
	"sync"

	"github.com/agentslice/agentslice/internal/local"
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
	return s.statusOf(th, last)
}

// statusOf is threadStatus given the thread's latest own item (nil: none).
func (s *Server) statusOf(th *runtime.Thread, last *runtime.Item) (status, reason string) {
	st := &th.State
	status = s.status(th.ID, th)
	if status != "idle" && status != "watching" {
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

// deadLetterTarget finds the dead letter a request names: {id} in the
// path, and ?thread= when the ID is set aside for more than one thread.
func (s *Server) deadLetterTarget(w http.ResponseWriter, r *http.Request) (thread, id string, ok bool) {
	id, thread = r.PathValue("id"), r.URL.Query().Get("thread")
	all, _ := s.deadLetterList()
	var threads []string
	for _, d := range all {
		if d.Message.ID == id && (thread == "" || d.Message.ThreadID == thread) {
			threads = append(threads, d.Message.ThreadID)
		}
	}
	switch len(threads) {
	case 0:
		if thread != "" {
			writeError(w, http.StatusNotFound, "id", "no dead letter %s for thread %s", id, thread)
		} else {
			writeError(w, http.StatusNotFound, "id", "no dead letter %s", id)
		}
		return "", "", false
	case 1:
		return threads[0], id, true
	}
	writeError(w, http.StatusConflict, "thread", "message ID %s is a dead letter of threads %s: name one with ?thread=", id, strings.Join(threads, ", "))
	return "", "", false
}

// redriveResponse is the body of POST /dead_letters/{id}/redrive.
type redriveResponse struct {
	ID       string `json:"id"`
	ThreadID string `json:"thread_id"`
	Status   string `json:"status"`
}

// redriveDeadLetter sends a dead letter's message to its thread again,
// with its ID (history still deduplicates it): 202, the entry listed as
// redriven until it is consumed (resolved) or fails again (open); 409 for
// an entry already resolved.
func (s *Server) redriveDeadLetter(w http.ResponseWriter, r *http.Request) {
	thread, id, ok := s.deadLetterTarget(w, r)
	if !ok {
		return
	}
	d, err := s.sys.Redrive(r.Context(), thread, id)
	switch {
	case errors.Is(err, local.ErrDeadLetterResolved):
		writeError(w, http.StatusConflict, "id", "dead letter %s of thread %s is resolved: a message with its ID was consumed since", id, thread)
		return
	case errors.Is(err, local.ErrNoDeadLetter):
		writeError(w, http.StatusNotFound, "id", "no dead letter %s for thread %s", id, thread)
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "", "redriving dead letter %s of thread %s: %v", id, thread, err)
		return
	}
	writeJSON(w, http.StatusAccepted, redriveResponse{ID: id, ThreadID: thread, Status: string(d.Status)})
}

// discardDeadLetter forgets a dead letter: 204.
func (s *Server) discardDeadLetter(w http.ResponseWriter, r *http.Request) {
	thread, id, ok := s.deadLetterTarget(w, r)
	if !ok {
		return
	}
	if err := s.sys.DiscardDeadLetter(r.Context(), thread, id); err != nil {
		if errors.Is(err, local.ErrNoDeadLetter) {
			writeError(w, http.StatusNotFound, "id", "no dead letter %s for thread %s", id, thread)
			return
		}
		writeError(w, http.StatusServiceUnavailable, "", "discarding dead letter %s of thread %s: %v", id, thread, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// recentMessages remembers the text of the messages POST accepted most
// recently, by (thread, ID), so that an ID re-sent with other text is
// refused while the first is still in flight; once consumed, history
// answers (conflictingResend). Bounded: max in all, the oldest of a
// thread's shard forgotten first. Sharded by thread, because every POST
// takes a shard's lock: with one lock, a Go execution trace of serve under
// its durable load (docs/performance.md) had 14% of the goroutines' blocked
// time waiting for it.
type recentMessages struct {
	max    int
	seed   maphash.Seed
	once   sync.Once
	shards [recentShards]recentShard
}

const recentShards = 16

type recentShard struct {
	mu    sync.Mutex
	texts map[[2]string]string
	order [][2]string
}

func (r *recentMessages) shard(thread string) *recentShard {
	r.once.Do(func() { r.seed = maphash.MakeSeed() })
	return &r.shards[maphash.String(r.seed, thread)%recentShards]
}

func (r *recentMessages) text(thread, id string) (string, bool) {
	sh := r.shard(thread)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t, ok := sh.texts[[2]string{thread, id}]
	return t, ok
}

func (r *recentMessages) add(thread, id, text string) {
	sh := r.shard(thread)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k := [2]string{thread, id}
	if _, ok := sh.texts[k]; ok {
		return
	}
	if sh.texts == nil {
		sh.texts = map[[2]string]string{}
	}
	if len(sh.order) >= max(1, r.max/recentShards) {
		delete(sh.texts, sh.order[0])
		sh.order[0] = [2]string{}
		sh.order = sh.order[1:]
	}
	sh.texts[k] = text
	sh.order = append(sh.order, k)
}

// conflictingResend reports whether msg reuses the ID of a message the
// thread already has (in history, among the dead letters, or accepted and
// still in flight) with other text. The same text again is a retry, and
// idempotent.
func (s *Server) conflictingResend(th *runtime.Thread, msg runtime.Message) bool {
	for i := range th.Items {
		if it := &th.Items[i]; it.Input == msg.ID && it.Kind == runtime.ItemUser {
			return it.Text != msg.Text
		}
	}
	for _, d := range s.deadLettersOf(msg.ThreadID) {
		if d.Message.ID == msg.ID {
			return d.Message.Text != msg.Text
		}
	}
	if t, ok := s.recent.text(msg.ThreadID, msg.ID); ok {
		return t != msg.Text
	}
	return false
}
