package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"

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

// Wants is runtime.EventFilter: slice starts and ends, and what the
// next observer wants, so that the engine times no phase nobody reads.
func (rt *runningThreads) Wants(t runtime.EventType, failed bool) bool {
	if t == runtime.EventSliceStarted || t == runtime.EventSliceFinished {
		return true
	}
	if rt.next == nil {
		return false
	}
	if f, ok := rt.next.(runtime.EventFilter); ok {
		return f.Wants(t, failed)
	}
	return true
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

// list returns the threads a slice runs on.
func (rt *runningThreads) list() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	ids := make([]string, 0, len(rt.set))
	for id := range rt.set {
		ids = append(ids, id)
	}
	return ids
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
// waiting_for_choice, waiting_for_tool, watching (no slice and no call
// out, but a subscription active: a tool still works for the thread, a
// background command or a watch, and its events will wake it) or idle. th
// is the thread as loaded (a pending choice is read from its items).
func (s *Server) status(thread string, th *runtime.Thread) string {
	if !th.State.Closed && s.running.running(thread) {
		return "running"
	}
	d := runtime.StateDigest(&th.State)
	if p := th.State.Pending; p != nil && pendingChoice(th) != nil {
		d.Choice, _ = runtime.PendingChoice(th.Items, p.ID)
	}
	return d.Status(sleepTools, func(call string) bool { return s.answering(thread, call) })
}

// pendingChoice returns the user_choice the thread's pending call waits
// on for an answer, read from history (runtime.PendingChoice): it is
// there from the commit of the notice that asked it, through restarts.
func pendingChoice(th *runtime.Thread) *choiceView {
	p := th.State.Pending
	if p == nil {
		return budgetChoice(th) // a budget pause asks without a pending call
	}
	args, ok := runtime.PendingChoice(th.Items, p.ID)
	if !ok {
		return nil
	}
	return choiceFromArgs(p.ID, args)
}

// choiceFromArgs reads a choice marker's Args (the tool's user_choice).
func choiceFromArgs(call, args string) *choiceView {
	var u rap.UserChoice
	if err := json.Unmarshal([]byte(args), &u); err != nil || len(u.Choices) == 0 {
		return nil // the receiver validated it; a bad one is no choice to offer
	}
	return &choiceView{CallID: call, Prompt: u.Prompt, Choices: u.Choices, Default: u.Default, id: u.ID, responseURL: u.ResponseURL}
}

// answering reports whether a person's answer to the thread's choice on
// call went to the tool and its record is not committed yet (Server.answers:
// the commit of the answer marker forgets it).
func (s *Server) answering(thread, call string) bool {
	_, ok := s.answers.Load(thread + "\x00" + call)
	return ok
}

// choiceRequest is the body of POST /threads/{id}/choices/{call}.
type choiceRequest struct {
	Selected *int `json:"selected"`
}

// answerChoice gives the tool the person's answer ({id, selected} to its
// response_url), then records the answer in the thread's history (a
// KindAnswer message, deduplicated by call), so the choice is no longer
// pending there, whatever restarts follow.
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
	th, err := s.store.Load(r.Context(), thread)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", thread, err)
		return
	}
	var c *choiceView
	if p := th.State.Pending; p != nil && p.ID == call {
		c = pendingChoice(th)
	} else if bc := budgetChoice(th); bc != nil && bc.CallID == call {
		c = bc
	}
	if c == nil || s.answering(thread, call) {
		writeError(w, http.StatusNotFound, "call", "no choice is waiting for an answer on call %q of thread %s (answered already, or never asked)", call, thread)
		return
	}
	if req.Selected == nil {
		writeError(w, http.StatusBadRequest, "selected", "missing: the index of the chosen option (0 to %d)", len(c.Choices)-1)
		return
	}
	n := *req.Selected
	if n < 0 || n >= len(c.Choices) {
		writeError(w, http.StatusBadRequest, "selected", "%d is not one of the choices (0 to %d)", n, len(c.Choices)-1)
		return
	}
	key := thread + "\x00" + call
	if _, dup := s.answers.LoadOrStore(key, true); dup {
		writeError(w, http.StatusNotFound, "call", "the choice on call %q of thread %s is being answered already", call, thread)
		return
	}
	if c.budget {
		// No tool asked: the answer message alone raises or stops.
	} else if err := rap.PostChoice(r.Context(), s.client, c.responseURL, c.id, n, rap.RetryPolicy{}); err != nil {
		s.answers.Delete(key)
		writeError(w, http.StatusBadGateway, "", "the tool did not take the answer: %v", err)
		return
	}
	msg := rap.AnswerMessage(th, call, &rap.UserChoice{ID: c.id, Choices: c.Choices}, n)
	if err := s.sys.Send(r.Context(), msg); err != nil {
		// The tool has the answer; only the record is missing, and the
		// call's result closes the choice anyway.
		s.answers.Delete(key)
		s.log.Warn("server: recording a choice's answer failed", "thread", thread, "call", call, "error", err)
	}
	if s.events.Watched(thread) {
		s.publishState(r.Context(), thread) // no longer waiting for the choice
	}
	writeJSON(w, http.StatusOK, map[string]any{"thread_id": thread, "call_id": call, "selected": n, "choice": c.Choices[n]})
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
	if !s.decodeOptionalBody(w, r, &req) {
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

// historyChoices is the receiver's ChoiceStore in serve: it keeps
// nothing, because the notice message carries the choice into history.
type historyChoices struct{}

func (historyChoices) PutChoice(context.Context, string, rap.UserChoice) error { return nil }

type viewsResponse struct {
	ThreadID string                     `json:"thread_id"`
	Views    map[string]json.RawMessage `json:"views"`
}

func (s *Server) getViews(w http.ResponseWriter, r *http.Request) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	th, err := s.store.Load(r.Context(), thread)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", thread, err)
		return
	}
	views := map[string]json.RawMessage{}
	for _, ev := range s.viewsNow(r.Context(), thread, th.Own()) {
		views[gjson.Get(ev.Text, "view_type").Str] = json.RawMessage(gjson.Get(ev.Text, "content").Raw)
	}
	writeJSON(w, http.StatusOK, viewsResponse{ThreadID: thread, Views: views})
}

// viewsNow are a thread's current views as "view" events, by view type:
// the latest of those in own (history) and of the live ones (the views of
// calls still going on, kept out of history), the newer winning.
func (s *Server) viewsNow(ctx context.Context, thread string, own []runtime.Item) []StreamEvent {
	evs := currentViews(thread, own)
	if s.receiver == nil {
		return evs
	}
	byType := map[string]int{}
	for i, ev := range evs {
		byType[gjson.Get(ev.Text, "view_type").Str] = i
	}
	for _, v := range s.receiver.LiveViews(ctx, thread) {
		ev := liveViewEvent(thread, v)
		if i, ok := byType[v.ViewType]; !ok {
			byType[v.ViewType] = len(evs)
			evs = append(evs, ev)
		} else if v.At >= evs[i].At {
			evs[i] = ev
		}
	}
	sort.Slice(evs, func(i, j int) bool {
		return gjson.Get(evs[i].Text, "view_type").Str < gjson.Get(evs[j].Text, "view_type").Str
	})
	return evs
}

func liveViewEvent(thread string, v rap.LiveView) StreamEvent {
	text := v.Text()
	return StreamEvent{ID: runtime.DeriveID("view_", thread, v.CallID, v.ViewType, string(v.Content)), ThreadID: thread, Kind: "view",
		Text: text, At: v.At}
}

// liveCalls tells the receiver whether a call goes on in the background:
// it holds an active subscription of its thread (a running command, after
// its "started" result). A pending call's views stay in history: its
// thread waits on it, and a tool that waits too (on a person's choice,
// say) may never send the view again after a restart.
type liveCalls struct{ store runtime.HistoryStore }

func (l liveCalls) Live(ctx context.Context, thread, call string) (bool, error) {
	th, err := l.store.Load(ctx, thread)
	if err != nil {
		return false, err
	}
	for _, sub := range th.State.Subscriptions {
		if sub.CallID == call {
			return true, nil
		}
	}
	return false, nil
}

// liveViewOutput tells the event streams of a live view (one kept out of
// history while its call goes on); the Broadcaster's Publish drops the
// "view" events the engine's outbox sends, which the streams tell from
// history.
type liveViewOutput struct{ b *Broadcaster }

func (o liveViewOutput) Publish(_ context.Context, ev runtime.OutputEvent) error {
	o.b.publish(StreamEvent{ID: ev.ID, ThreadID: ev.ThreadID, Kind: ev.Kind, Text: ev.Text})
	return nil
}

// currentViews are a thread's latest views as "view" events, for a fresh
// stream, by view type.
func currentViews(thread string, own []runtime.Item) []StreamEvent {
	latest := runtime.LatestViews(own)
	types := make([]string, 0, len(latest))
	for t := range latest {
		types = append(types, t)
	}
	sort.Strings(types)
	out := make([]StreamEvent, 0, len(types))
	for _, t := range types {
		it := latest[t]
		out = append(out, StreamEvent{ID: runtime.DeriveID("view_", thread, t, it.Args), ThreadID: thread, Kind: "view", Text: it.Args,
			At: it.At})
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
