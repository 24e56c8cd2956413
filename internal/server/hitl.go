package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The human-in-the-loop endpoints:
//
//	POST /threads/{id}/choices/{call}  {"selected": n} → 200; the tool's response_url is called
//	GET  /threads/{id}/views           the thread's current views (view_update), by view type
//	POST /threads/{id}/stop            {"reason"?} → 202: interrupt the running completion and the pending call
//	POST /threads/{id}/close           {"reason"?} → 202: stop, then close the thread for good

// runningThreads is the engine's observer in the server: it knows which
// threads have a slice running (status "running") and tells watchers
// when a slice starts and ends. It passes every event on to next.
type runningThreads struct {
	next runtime.Observer
	srv  *Server
	mu   sync.Mutex
	set  map[string]bool
}

func (rt *runningThreads) Observe(ctx context.Context, ev runtime.Event) {
	if rt.next != nil {
		rt.next.Observe(ctx, ev)
	}
	switch {
	case ev.Type == runtime.EventSliceStarted:
		rt.mu.Lock()
		if rt.set == nil {
			rt.set = map[string]bool{}
		}
		rt.set[ev.ThreadID] = true
		rt.mu.Unlock()
	case ev.Type == runtime.EventSliceFinished && ev.Reason == "":
		rt.mu.Lock()
		delete(rt.set, ev.ThreadID)
		rt.mu.Unlock()
	default:
		return
	}
	if rt.srv == nil || !rt.srv.events.Watched(ev.ThreadID) {
		return
	}
	if ev.Type == runtime.EventSliceStarted { // nothing else changed: no need to load the thread
		rt.srv.events.publish(StreamEvent{ID: ev.ThreadID + "@v" + strconv.FormatInt(ev.Version, 10) + ".run", ThreadID: ev.ThreadID,
			Kind: "state", State: &statusView{Status: "running", Version: ev.Version}})
		return
	}
	rt.srv.publishState(ctx, ev.ThreadID)
}

func (rt *runningThreads) running(thread string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.set[thread]
}

// publishState tells watchers the thread's status as committed.
func (s *Server) publishState(ctx context.Context, thread string) {
	th, err := s.store.Load(ctx, thread)
	if err != nil {
		return // best effort: the next commit tells again
	}
	st := th.State
	status, reason := s.threadStatus(th)
	s.events.publish(StreamEvent{ID: thread + "@v" + strconv.FormatInt(st.Version, 10), ThreadID: thread, Kind: "state",
		State: &statusView{Status: status, Reason: reason, Pending: st.Pending, Subscriptions: st.Subscriptions, Version: st.Version,
			Until: s.sleeps.until(thread, st.Pending)}})
}

// status is a thread's status for people: closed, running, sleeping,
// waiting_for_choice, waiting_for_tool or idle.
func (s *Server) status(thread string, st runtime.ThreadState) string {
	switch {
	case st.Closed:
		return "closed"
	case s.running.running(thread):
		return "running"
	case st.Pending != nil && sleepTools[st.Pending.Name]:
		return "sleeping"
	case st.Pending != nil && s.pendingChoice(thread, st.Pending.ID) != nil:
		return "waiting_for_choice"
	case st.Pending != nil:
		return "waiting_for_tool"
	}
	return "idle"
}

// pendingChoice returns the unanswered user_choice of a thread's call.
func (s *Server) pendingChoice(thread, call string) *choiceView {
	if s.choices == nil || call == "" {
		return nil
	}
	c, ok := s.choices.Choice(thread, call)
	if !ok {
		return nil
	}
	return &choiceView{CallID: call, Prompt: c.Prompt, Choices: c.Choices, Default: c.Default}
}

// choiceRequest is the body of POST /threads/{id}/choices/{call}.
type choiceRequest struct {
	Selected *int `json:"selected"`
}

func (s *Server) answerChoice(w http.ResponseWriter, r *http.Request) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	call := r.PathValue("call")
	var req choiceRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	c := s.pendingChoice(thread, call)
	if c == nil {
		writeError(w, http.StatusNotFound, "call", "no choice is waiting for an answer on call %q of thread %s (answered already, or never asked)", call, thread)
		return
	}
	if req.Selected == nil {
		writeError(w, http.StatusBadRequest, "selected", "missing: the index of the chosen option (0 to %d)", len(c.Choices)-1)
		return
	}
	if n := *req.Selected; n < 0 || n >= len(c.Choices) {
		writeError(w, http.StatusBadRequest, "selected", "%d is not one of the choices (0 to %d)", n, len(c.Choices)-1)
		return
	}
	if err := s.choices.Answer(r.Context(), s.client, thread, call, *req.Selected); err != nil {
		writeError(w, http.StatusBadGateway, "", "the tool did not take the answer: %v", err)
		return
	}
	if s.events.Watched(thread) {
		s.publishState(r.Context(), thread)
	}
	writeJSON(w, http.StatusOK, map[string]any{"thread_id": thread, "call_id": call, "selected": *req.Selected, "choice": c.Choices[*req.Selected]})
}

// controlRequest is the body of POST /threads/{id}/stop and /close.
type controlRequest struct {
	Reason string `json:"reason,omitempty"`
	// ID makes the request idempotent, as for messages.
	ID string `json:"id,omitempty"`
}

func (s *Server) stopThread(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, runtime.KindStop)
}
func (s *Server) closeThread(w http.ResponseWriter, r *http.Request) {
	s.control(w, r, runtime.KindClose)
}

// control stops or closes a thread: the running completion is cancelled
// now (it ends with an error event and commits nothing), then a stop or
// close message interrupts the pending call through the engine, so every
// call still gets exactly one result.
func (s *Server) control(w http.ResponseWriter, r *http.Request, kind runtime.Kind) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	var req controlRequest
	if r.ContentLength != 0 && !s.decodeBody(w, r, &req) {
		return
	}
	th, err := s.store.Load(r.Context(), thread)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", thread, err)
		return
	}
	if th.State.Version == 0 && th.State.Parent == "" && !s.running.running(thread) {
		writeError(w, http.StatusNotFound, "thread_id", "thread %s has no history yet", thread)
		return
	}
	if th.State.Closed {
		writeError(w, http.StatusConflict, "thread_id", "thread %s is closed already", thread)
		return
	}
	if req.ID == "" {
		req.ID = newMessageID()
	}
	interrupted := s.inflight.interrupt(thread)
	msg := runtime.Message{V: runtime.MessageVersion, ID: req.ID, ThreadID: thread, Kind: kind, Text: req.Reason}
	if err := s.sys.Send(r.Context(), msg); err != nil {
		var bm *runtime.BadMessageError
		if errors.As(err, &bm) {
			writeError(w, http.StatusBadRequest, bm.Field, "%s", bm.Reason)
			return
		}
		writeError(w, http.StatusServiceUnavailable, "", "enqueueing the %s: %v", kind, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"id": msg.ID, "thread_id": thread, "interrupted_completion": interrupted})
}

// viewIndex is the receiver's view store: the latest content per (thread,
// view type), with the view types each thread has, so a thread's views
// can be listed. Bounded by threads.
type viewIndex struct {
	mu    sync.Mutex
	max   int
	views map[string]map[string]json.RawMessage
	order []string
}

func newViewIndex(max int) *viewIndex {
	return &viewIndex{max: max, views: map[string]map[string]json.RawMessage{}}
}

// PutView implements rap.ViewStore.
func (v *viewIndex) PutView(_ context.Context, thread, viewType string, content json.RawMessage) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.views[thread]
	if m == nil {
		m = map[string]json.RawMessage{}
		v.views[thread] = m
		v.order = append(v.order, thread)
		if len(v.order) > v.max {
			delete(v.views, v.order[0])
			v.order = v.order[1:]
		}
	}
	m[viewType] = append(json.RawMessage(nil), content...)
	return nil
}

// View implements rap.ViewStore.
func (v *viewIndex) View(_ context.Context, thread, viewType string) (json.RawMessage, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.views[thread][viewType]
	return c, ok, nil
}

// all returns a thread's views by type.
func (v *viewIndex) all(thread string) map[string]json.RawMessage {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]json.RawMessage, len(v.views[thread]))
	for k, c := range v.views[thread] {
		out[k] = c
	}
	return out
}

type viewsResponse struct {
	ThreadID string                     `json:"thread_id"`
	Views    map[string]json.RawMessage `json:"views"`
}

func (s *Server) getViews(w http.ResponseWriter, r *http.Request) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, viewsResponse{ThreadID: thread, Views: s.views.all(thread)})
}

// currentViews are a thread's views as "view" events, for a fresh stream.
func (s *Server) currentViews(_ context.Context, thread string) []StreamEvent {
	all := s.views.all(thread)
	types := make([]string, 0, len(all))
	for t := range all {
		types = append(types, t)
	}
	sort.Strings(types)
	out := make([]StreamEvent, 0, len(types))
	for _, t := range types {
		text, _ := json.Marshal(struct {
			ViewType string          `json:"view_type"`
			Content  json.RawMessage `json:"content"`
		}{t, all[t]})
		out = append(out, StreamEvent{ID: runtime.DeriveID("view_", thread, t, string(all[t])), ThreadID: thread, Kind: "view", Text: string(text)})
	}
	return out
}

// deadLetterEntry is one dead-lettered message, deduplicated by ID.
type deadLetterEntry struct {
	Message runtime.Message `json:"message"`
	Reason  string          `json:"reason"`
	At      time.Time       `json:"at"`
	// Status is "open", "redriven" (sent again, not yet consumed) or
	// "resolved" (a message with its ID was consumed since).
	Status string `json:"status"`
}

func (d deadLetterEntry) event() StreamEvent {
	m := d.Message
	return StreamEvent{ID: "dead_" + m.ID, ThreadID: m.ThreadID, Kind: "dead_letter", Text: d.Reason, Input: m.ID, Message: &m}
}

// deadLetterList returns the system's dead letters, oldest first; the
// system keeps one per message ID (a redelivered message that fails again
// is not listed twice).
func (s *Server) deadLetterList() ([]deadLetterEntry, int) {
	dead, total := s.sys.DeadLetters()
	out := make([]deadLetterEntry, 0, len(dead))
	for _, d := range dead {
		out = append(out, deadLetterEntry{Message: d.Message, Reason: d.Reason, At: d.At, Status: string(d.Status)})
	}
	return out, total
}

func (s *Server) deadLettersOf(thread string) []deadLetterEntry {
	all, _ := s.deadLetterList()
	var out []deadLetterEntry
	for _, d := range all {
		if d.Message.ThreadID == thread {
			out = append(out, d)
		}
	}
	return out
}

// callbacks is the callback endpoint: the RAP receiver, after keeping a
// tool result's display_as (for people; the model never sees it) under
// the call its verified URL names, before the result can be committed.
func (s *Server) callbacks() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rap.MaxCallbackBody))
			if err != nil {
				var mb *http.MaxBytesError
				if errors.As(err, &mb) {
					writeError(w, http.StatusRequestEntityTooLarge, "", "callback body is larger than the limit of %d bytes", mb.Limit)
					return
				}
				writeError(w, http.StatusBadRequest, "", "reading the callback body: %v", err)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if capa, err := s.keys.Verify(r.URL.Query(), time.Now()); err == nil && bytes.Contains(body, []byte(`"display_as"`)) {
				if cb, err := rap.DecodeCallback(body); err == nil && cb.ToolResult != nil &&
					cb.ToolResult.GroupID == capa.ThreadID && cb.ToolResult.ID == capa.CallID {
					if d, ok := cb.ToolResult.Display(); ok { // the spec's rule: the first segment we can render
						s.display.put(capa.ThreadID, capa.CallID, []rap.Display{d})
					}
				}
			}
		}
		s.receiver.ServeHTTP(w, r)
	})
}

// sleepTimes is the sleep tools' timers as the server hands them over: it
// remembers when each pending sleep ends, so a thread's status can say
// "sleeping until …". In memory; a restart forgets it (the status then
// says "sleeping").
type sleepTimes struct {
	runtime.Timers
	mu sync.Mutex
	at map[string]time.Time // thread \x00 call → wake-up
}

func (st *sleepTimes) Schedule(ctx context.Context, t runtime.Timer) error {
	if err := st.Timers.Schedule(ctx, t); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.at == nil {
		st.at = map[string]time.Time{}
	}
	st.at[t.ThreadID+"\x00"+t.CallID] = t.At
	return nil
}

func (st *sleepTimes) Cancel(ctx context.Context, threadID, callID string) error {
	st.mu.Lock()
	delete(st.at, threadID+"\x00"+callID)
	st.mu.Unlock()
	return st.Timers.Cancel(ctx, threadID, callID)
}

// forget drops the wake-up of a sleep that has its result.
func (st *sleepTimes) forget(thread, call string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.at, thread+"\x00"+call)
}

// until returns when the thread's pending sleep ends, if known.
func (st *sleepTimes) until(thread string, p *runtime.PendingCall) *time.Time {
	if p == nil || !sleepTools[p.Name] {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	at, ok := st.at[thread+"\x00"+p.ID]
	if !ok {
		return nil
	}
	return &at
}
