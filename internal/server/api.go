package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// routes is the HTTP API:
//
//	POST /threads/{id}/messages  {"text": ..., "id"?: ..., "user_id"?: ..., "agent"?: ...} → 202 {"id", "thread_id"}
//	GET  /threads/{id}           state summary and history items (?from=N skips the first N)
//	GET  /threads/{id}/events    Server-Sent Events of the thread's output
//	GET  /threads                thread trees by last activity, paged and filtered (threads.go)
//	GET  /events                 Server-Sent Events of every thread
//	GET  /threads/{id}/timeline  where the thread's time went; GET /stats: by agent or tool (timeline.go)
//	GET  /dead_letters           messages the system gave up on, one per message ID
//	GET  /healthz                liveness and counters
//	GET  /agents, GET /models    what a person may pick from (catalogs.go)
//	POST /markdown               the console's markdown, rendered and sanitized (markdown.go)
//	the human-in-the-loop endpoints (hitl.go) and the console at / (console.go)
//	POST /rap/callback           the RAP callback receiver (signed URLs)
//	     /tools/{name}/...       the in-process tool servers
//
// docs/openapi.yaml describes them all (TestOpenAPI checks it).
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.apiRoutes() {
		mux.Handle(rt.pattern, rt.handler)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "", "no such endpoint: %s %s (see GET /healthz, /threads, /threads/{id}, POST /threads/{id}/messages)", r.Method, r.URL.Path)
	})
	return mux
}

// route is one pattern of the API's mux and its handler: a methods map,
// or a handler that routes by method itself (the RAP callback receiver,
// the in-process tool servers, whose patterns end in "/").
type route struct {
	pattern string
	handler http.Handler
}

// apiRoutes is every pattern routes serves but the JSON 404 for the rest,
// in one list, so that the OpenAPI description (docs/openapi.yaml) is
// checked against what the mux really serves (TestOpenAPIRoutes).
func (s *Server) apiRoutes() []route {
	rs := []route{
		{"/threads/{id}/messages", methods{http.MethodPost: s.postMessage}},
		{"/threads/{id}/events", methods{http.MethodGet: s.threadEvents}},
		{"/threads/{id}/choices/{call}", methods{http.MethodPost: s.answerChoice}},
		{"/threads/{id}/views", methods{http.MethodGet: s.getViews}},
		{"/threads/{id}/timeline", methods{http.MethodGet: s.getTimeline}},
		{"/threads/{id}/stop", methods{http.MethodPost: s.stopThread}},
		{"/threads/{id}/close", methods{http.MethodPost: s.closeThread}},
		{"/threads/{id}/model", methods{http.MethodPost: s.switchModel}},
		{"/threads/{id}/budget", methods{http.MethodPost: s.setBudget}},
		{"/threads/{id}/agent", methods{http.MethodPost: s.switchAgent}},
		{"/threads/{id}/fork", methods{http.MethodPost: s.forkThread}},
		{"/threads/{id}/sandbox", methods{http.MethodGet: s.getSandbox}},
		{"/threads/{id}/sandbox/diff", methods{http.MethodGet: s.getSandboxDiff}},
		{"/threads/{id}/sandbox/apply", methods{http.MethodPost: s.applySandbox}},
		{"/threads/{id}/sandbox/discard", methods{http.MethodPost: s.discardSandbox}},
		{"/threads/{id}", methods{http.MethodGet: s.getThread}},
		{"/threads", methods{http.MethodGet: s.listThreads}},
		{"/events", methods{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
			s.serveEvents(w, r, "")
		}}},
		{"/stats", methods{http.MethodGet: s.getStats}},
		{"/dead_letters", methods{http.MethodGet: s.deadLetters}},
		{"/dead_letters/{id}/redrive", methods{http.MethodPost: s.redriveDeadLetter}},
		{"/dead_letters/{id}", methods{http.MethodDelete: s.discardDeadLetter}},
		{"/healthz", methods{http.MethodGet: s.healthz}},
		{"/info", methods{http.MethodGet: s.getInfo}},
		{"/agents", methods{http.MethodGet: s.listAgents}},
		{"/agents/{name}/versions", methods{http.MethodGet: s.listAgentVersions}},
		{"/models", methods{http.MethodGet: s.listModels}},
		{"/markdown", methods{http.MethodPost: s.renderMarkdown}},
		{"/readyz", methods{http.MethodGet: s.readyz}},
		{CallbackPath, s.receiver},
	}
	for _, m := range s.services {
		rs = append(rs, route{ToolsPrefix + m.name + "/", m.svc})
	}
	page, assets := consoleHandler()
	return append(rs, route{"/{$}", methods{http.MethodGet: page.ServeHTTP}},
		route{consolePrefix, methods{http.MethodGet: assets.ServeHTTP}})
}

// methods routes by method and answers anything else with a JSON 405.
type methods map[string]http.HandlerFunc

func (m methods) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := m[r.Method]; ok {
		h(w, r)
		return
	}
	if r.Method == http.MethodHead {
		if h, ok := m[http.MethodGet]; ok {
			h(w, r)
			return
		}
	}
	allowed := make([]string, 0, len(m))
	for k := range m {
		allowed = append(allowed, k)
	}
	slices.Sort(allowed)
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, http.StatusMethodNotAllowed, "", "method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allowed, ", "))
}

// apiError is the body of every 4xx/5xx answer of the API.
type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, field, format string, args ...any) {
	writeJSON(w, status, apiError{Error: fmt.Sprintf(format, args...), Field: field})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// threadID reads and checks the {id} path value.
func threadID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	m := runtime.Message{V: runtime.MessageVersion, ID: "x", ThreadID: id, Kind: runtime.KindUser, Text: "x"}
	if err := m.Validate(); err != nil {
		var bm *runtime.BadMessageError
		if errors.As(err, &bm) {
			writeError(w, http.StatusBadRequest, "thread_id", "thread ID in the path: %s", bm.Reason)
		} else {
			writeError(w, http.StatusBadRequest, "thread_id", "thread ID in the path: %v", err)
		}
		return "", false
	}
	return id, true
}

// messageRequest is the body of POST /threads/{id}/messages.
type messageRequest struct {
	Text string `json:"text"`
	// ID makes the request idempotent: the same ID is processed once.
	ID     string `json:"id,omitempty"`
	UserID string `json:"user_id,omitempty"`
	// Class is the priority class of a thread this message creates
	// ("interactive", the default, or "background"); an existing thread
	// keeps the class it was created with.
	Class runtime.Class `json:"class,omitempty"`
	// Agent names the agent a new thread runs as (default: the default
	// agent); on an existing thread it must be the one it runs as.
	Agent string `json:"agent,omitempty"`
	// Budget sets a limit of the thread or, with scope "tree", of its
	// tree, with the message (docs/budgets.md).
	Budget *budgetRequest `json:"budget,omitempty"`
	// Upgrade is a new thread's agent upgrade policy: "latest" (the
	// default) or "pinned" (versions.go); an existing thread keeps its own.
	Upgrade string `json:"upgrade,omitempty"`
	// Repo names the sandbox repository the thread works in (one of
	// sandbox.repos; sandbox_config.go); a thread keeps its first.
	Repo string `json:"repo,omitempty"`
}

type messageResponse struct {
	ID       string `json:"id"`
	ThreadID string `json:"thread_id"`
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	var req messageRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if req.Text == "" {
		writeError(w, http.StatusBadRequest, "text", "missing or empty: the message needs text")
		return
	}
	if req.ID == "" {
		req.ID = newMessageID()
	}
	msg := runtime.Message{V: runtime.MessageVersion, ID: req.ID, ThreadID: thread, Kind: runtime.KindUser, Text: req.Text, UserID: req.UserID,
		Class: req.Class, Agent: req.Agent, Upgrade: req.Upgrade}
	if b := req.Budget; b != nil {
		msg.Budget = &runtime.BudgetChange{Scope: b.Scope, Add: b.Add, Limit: runtime.Budget{Tokens: b.Tokens, USD: b.USD}}
	}
	if tp := r.Header.Get("traceparent"); runtime.ValidTraceparent(tp) {
		msg.Trace = tp // the turn continues the caller's trace; an invalid one is ignored (W3C)
	}
	if err := msg.Validate(); err != nil {
		var bm *runtime.BadMessageError
		if errors.As(err, &bm) {
			writeError(w, http.StatusBadRequest, bm.Field, "%s", bm.Reason)
			return
		}
		writeError(w, http.StatusBadRequest, "", "%v", err)
		return
	}
	th, err := s.store.Load(r.Context(), thread)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", thread, err)
		return
	}
	if th.State.Closed {
		writeError(w, http.StatusConflict, "thread_id", "thread %s is closed and takes no more messages", thread)
		return
	}
	if !s.checkAgent(w, req.Agent, th.State) {
		return
	}
	if pol := req.Upgrade; pol != "" && th.State.Version > 0 && (pol == runtime.UpgradePinned) != (th.State.Upgrade == runtime.UpgradePinned) {
		writeError(w, http.StatusConflict, "upgrade", "thread %s's upgrade policy was fixed when it was created; a message cannot change it to %q", thread, pol)
		return
	}
	if th.State.Class != "" {
		msg.Class = th.State.Class // fixed at creation; the scheduler queues by it
	}
	if field, reason, code := s.bindRepo(r.Context(), thread, req.Repo); code != 0 {
		writeError(w, code, field, "%s", reason)
		return
	}
	if s.conflictingResend(th, msg) {
		writeError(w, http.StatusConflict, "id", "message ID %s was already sent to thread %s with other text; "+
			"a retry must send the same text, new content needs a new ID", msg.ID, thread)
		return
	}
	if err := s.sys.Send(r.Context(), msg); err != nil {
		var bm *runtime.BadMessageError
		if errors.As(err, &bm) {
			writeError(w, http.StatusBadRequest, bm.Field, "%s", bm.Reason)
			return
		}
		writeError(w, http.StatusServiceUnavailable, "", "enqueueing the message: %v", err)
		return
	}
	s.recent.add(thread, msg.ID, msg.Text)
	writeJSON(w, http.StatusAccepted, messageResponse{ID: msg.ID, ThreadID: thread})
}

// checkAgent answers 400 for an agent that is not defined and 409 for one
// the existing thread does not run as. (The engine checks again: two first
// messages racing are settled there, the loser going to the dead letters.)
func (s *Server) checkAgent(w http.ResponseWriter, agent string, st runtime.ThreadState) bool {
	if agent == "" {
		return true
	}
	if s.agents == nil {
		writeError(w, http.StatusBadRequest, "agent", "names agent %q, but the configuration defines no agents", agent)
		return false
	}
	if _, ok := s.agents.Agent(agent); !ok {
		writeError(w, http.StatusBadRequest, "agent", "unknown agent %q (defined: %s)", agent, strings.Join(s.agents.Names(), ", "))
		return false
	}
	bound := st.Agent
	if bound == "" && st.Version > 0 {
		bound = s.agents.Default() // bound to the default at its first completion
	}
	if bound != "" && bound != agent {
		writeError(w, http.StatusConflict, "agent", "thread runs as agent %q; a message cannot switch it to %q", bound, agent)
		return false
	}
	return true
}

// decodeBody reads a JSON object strictly within the body limit, answering
// 4xx naming the problem when it cannot.
// decodeOptionalBody is decodeBody for a body that may be absent: an empty
// one (also when sent chunked, with no Content-Length) leaves v as it is.
func (s *Server) decodeOptionalBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength == 0 {
		return true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.set.maxBody))
	if err == nil && len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	return s.decodeBody(w, r, v)
}

// errReader ends a re-read body with the error the first read met.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.set.maxBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeError(w, http.StatusRequestEntityTooLarge, "", "request body is larger than the limit of %d bytes", mb.Limit)
			return false
		}
		writeError(w, http.StatusBadRequest, "", "reading the request body: %v", err)
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		ce := jsonError(body, err)
		var cfgErr *ConfigError
		if errors.As(ce, &cfgErr) {
			writeError(w, http.StatusBadRequest, cfgErr.Field, "request body: %s", cfgErr.Reason)
		} else {
			writeError(w, http.StatusBadRequest, "", "request body: %v", err)
		}
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "", "request body: trailing data after the JSON object")
		return false
	}
	return true
}

func newMessageID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "msg_" + hex.EncodeToString(b)
}

// threadResponse is the body of GET /threads/{id}.
type threadResponse struct {
	ID string `json:"id"`
	// Status is "closed", "running" (a slice is at work), "sleeping",
	// "waiting_for_choice", "waiting_for_tool", "waiting_for_provider"
	// (its model provider is down; it tries again through a timer),
	// "failed" (its latest completion failed for good), "watching" (a
	// subscription is active and nothing else is: a tool still works for
	// it), "idle", or
	// "dead_letter" for a thread whose only messages were dead-lettered.
	Status string `json:"status"`
	// Reason says why a thread is failed or waiting for its provider.
	Reason string       `json:"reason,omitempty"`
	State  stateSummary `json:"state"`
	// Inherited is how many of the thread's full view come from its
	// ancestors; Items starts at From.
	Inherited int            `json:"inherited"`
	From      int            `json:"from"`
	Total     int            `json:"total"`
	Items     []runtime.Item `json:"items"`
	// Choice is the user_choice waiting for an answer, if any (a tool's,
	// or a budget pause's).
	Choice *choiceView `json:"choice,omitempty"`
	// Budget is the thread's limit and spend, and its tree's.
	Budget *budgetView `json:"budget,omitempty"`
	// Until is when a sleeping thread wakes up, when known.
	Until *time.Time `json:"until,omitempty"`
	// DeadLetters are the thread's messages the system gave up on.
	DeadLetters []deadLetterEntry `json:"dead_letters,omitempty"`
}

type stateSummary struct {
	Version       int64                  `json:"version"`
	Length        int                    `json:"length"`
	Parent        string                 `json:"parent,omitempty"`
	Stack         []string               `json:"stack,omitempty"`
	Children      []string               `json:"children,omitempty"`
	Closed        bool                   `json:"closed,omitempty"`
	Temporary     bool                   `json:"temporary,omitempty"`
	Pending       *runtime.PendingCall   `json:"pending,omitempty"`
	Subscriptions []runtime.Subscription `json:"subscriptions,omitempty"`
	Deferred      int                    `json:"deferred,omitempty"`
	Tokens        int                    `json:"tokens,omitempty"`
	Compacting    string                 `json:"compacting,omitempty"`
	// Agent and AgentHash are the agent the thread runs as and the
	// version of its definition the latest completion used.
	Agent     string `json:"agent,omitempty"`
	AgentHash string `json:"agent_hash,omitempty"`
	// Usage is the thread's cumulative token usage.
	Usage runtime.Usage `json:"usage"`
	// Model is the model the thread was switched to ("": its default).
	Model string `json:"model,omitempty"`
	// Fork is where a forked thread's history comes from.
	Fork *runtime.ForkPoint `json:"fork,omitempty"`
	// Upgrade is the thread's agent upgrade policy ("": latest).
	Upgrade string `json:"upgrade,omitempty"`
}

func summarize(st runtime.ThreadState) (string, stateSummary) {
	status := "idle"
	switch {
	case st.Closed:
		status = "closed"
	case st.Pending != nil:
		status = "waiting_for_tool"
	}
	return status, stateSummary{Version: st.Version, Length: st.Length, Parent: st.Parent, Stack: st.Stack,
		Children: st.Children, Closed: st.Closed, Temporary: st.Temporary, Pending: st.Pending,
		Subscriptions: st.Subscriptions, Deferred: len(st.Deferred), Tokens: st.Tokens, Compacting: st.Compacting,
		Agent: st.Agent, AgentHash: st.AgentHash, Usage: st.Usage, Model: st.Model, Fork: st.Fork, Upgrade: st.Upgrade}
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	from := 0
	if v := r.URL.Query().Get("from"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "from", "%q is not a non-negative integer", v)
			return
		}
		from = n
	}
	th, err := s.store.Load(r.Context(), thread)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", thread, err)
		return
	}
	dead := s.deadLettersOf(thread)
	if th.State.Version == 0 && th.State.Parent == "" { // a created child has a parent before its first commit
		if len(dead) > 0 { // not a silent 404: say what became of its messages
			writeJSON(w, http.StatusOK, threadResponse{ID: thread, Status: "dead_letter", Items: []runtime.Item{}, DeadLetters: dead})
			return
		}
		writeError(w, http.StatusNotFound, "thread_id", "thread %s has no history yet", thread)
		return
	}
	_, sum := summarize(th.State)
	items := th.Items[min(from, len(th.Items)):]
	if items == nil {
		items = []runtime.Item{}
	}
	status, reason := s.threadStatus(th)
	resp := threadResponse{ID: thread, Status: status, Reason: reason, State: sum, Inherited: th.Inherited,
		From: from, Total: len(th.Items), Items: items, DeadLetters: dead}
	if w := th.State.ModelWait; w != nil && resp.Until == nil {
		resp.Until = &w.Until
	}
	if p := th.State.Pending; p != nil {
		resp.Choice = pendingChoice(th)
		resp.Until = s.sleeps.until(thread, p)
	} else {
		resp.Choice = budgetChoice(th)
	}
	resp.Budget = s.budgetOf(r.Context(), th)
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) threadEvents(w http.ResponseWriter, r *http.Request) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	s.serveEvents(w, r, thread)
}

// deadLettersResponse is the body of GET /dead_letters.
type deadLettersResponse struct {
	// DeadLetters has one entry per message ID, oldest first.
	DeadLetters []deadLetterEntry `json:"dead_letters"`
	// Total counts every dead-lettering, repeats included.
	Total int `json:"total"`
}

func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	out, total := s.deadLetterList()
	writeJSON(w, http.StatusOK, deadLettersResponse{DeadLetters: out, Total: total})
}
