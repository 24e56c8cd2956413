package rapkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// InvokePath is where a kit server takes invocations, relative to its base.
const InvokePath = "/invoke"

// Tool is one tool of a kit server. Run does the work; it must send the
// call's result (Result, ResultContent or Subscribe). If it returns without
// one, the kit sends an error result for it (the error's text, or "finished
// without a result"), so the agent never waits forever. Run's ctx is
// cancelled when the runtime cancels the call, closes the thread, or the
// server stops; nothing is sent for a cancelled call.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage // JSON Schema (draft 2020-12 by default)
	Annotations *Annotations
	Run         func(ctx context.Context, c *Call) error
}

// ServerConfig configures a kit Server. Name is required, and so are Tools
// unless the server gets them later from SetTools (until then its toolset is
// answered 503: the runtime fetches it again later).
type ServerConfig struct {
	Name        string
	Description string
	Tools       []Tool
	// PublicURL is the base URL the runtime reaches this server at; the
	// advertised endpoint is PublicURL+"/invoke". When empty it is derived
	// from each toolset request (scheme, Host and the path it is mounted at).
	PublicURL string
	// Client posts callbacks; default: a client with a 30s timeout.
	Client *http.Client
	// Retry bounds the retries of one callback POST. Default: 8 attempts
	// within 60s.
	Retry RetryPolicy
	// MaxRunning bounds concurrent calls; more are answered 503 (the runtime
	// retries). Default 64.
	MaxRunning int
	// Authorize, when set, is asked about every POST (invocations, cancel,
	// close, status, migrate); an error answers 401 with its text.
	Authorize func(r *http.Request) error
	Logger    *slog.Logger
}

// Server is a RAP tool server: an http.Handler with a Start/Stop lifecycle.
type Server struct {
	cfg ServerConfig
	cat atomic.Pointer[catalog] // the tools offered; replaced whole by SetTools

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	stopped bool
	running map[string]*runningCall // by callKey(thread, call)
	done    *doneSet                // calls already run, for at-least-once dispatch
	wg      sync.WaitGroup
}

// catalog is the tools a Server offers, validated as one toolset. It is
// immutable once built.
type catalog struct {
	list    []Tool
	tools   map[string]*Tool
	schemas map[string]*Schema
}

type runningCall struct {
	thread string
	cancel context.CancelFunc
}

// NewServer checks cfg (the toolset it will serve must pass DecodeToolset)
// and returns a Server. Call Start before serving.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Retry.Attempts <= 0 {
		cfg.Retry.Attempts = 8
	}
	if cfg.Retry.Total <= 0 {
		cfg.Retry.Total = 60 * time.Second
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	s := &Server{cfg: cfg, running: map[string]*runningCall{}, done: newDoneSet(10000)}
	if err := s.SetTools(cfg.Tools); err != nil {
		return nil, err
	}
	return s, nil
}

// SetTools replaces the tools the server offers (an MCP proxy's tool list
// changes). The new toolset is checked whole, as NewServer checks it; on an
// error the old tools stay. A call already running keeps running; a new
// invocation is routed and validated by the new tools. The runtime sees the
// change when it next fetches the toolset (a new root thread). An empty
// list is allowed: the toolset is then answered 503.
func (s *Server) SetTools(tools []Tool) error {
	c := &catalog{list: make([]Tool, len(tools)), tools: map[string]*Tool{}, schemas: map[string]*Schema{}}
	copy(c.list, tools)
	for i := range c.list {
		t := &c.list[i]
		if t.Run == nil {
			return fmt.Errorf("rap: kit tool %q has no Run function", t.Name)
		}
		if len(t.InputSchema) == 0 {
			t.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		c.tools[t.Name] = t
	}
	if len(c.list) > 0 {
		doc, err := json.Marshal(c.toolset(s.cfg, "http://localhost"))
		if err != nil {
			return fmt.Errorf("rap: encoding kit toolset %q: %w", s.cfg.Name, err)
		}
		ts, schemas, err := DecodeToolset(doc)
		if err != nil {
			return fmt.Errorf("rap: kit toolset %q is invalid: %w", s.cfg.Name, err)
		}
		for i, td := range ts.Tools {
			c.schemas[td.Name] = schemas[i]
		}
	}
	s.cat.Store(c)
	return nil
}

// Toolset returns the document served for a server reachable at base.
func (s *Server) Toolset(base string) Toolset { return s.cat.Load().toolset(s.cfg, base) }

func (c *catalog) toolset(cfg ServerConfig, base string) Toolset {
	ts := Toolset{Name: cfg.Name, Description: cfg.Description, Endpoint: strings.TrimRight(base, "/") + InvokePath, Tools: []ToolDef{}}
	for i := range c.list {
		t := &c.list[i]
		ts.Tools = append(ts.Tools, ToolDef{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations})
	}
	return ts
}

// Start lets the server run calls until ctx ends or Stop is called.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx != nil {
		return errors.New("rap: kit server already started")
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	return nil
}

// Stop refuses new calls, cancels running ones and waits for them. It is
// safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	s.stopped = true
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
}

// Running returns the number of calls in progress.
func (s *Server) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running)
}

// ServeHTTP routes by the path's last segment, so the server can be mounted
// under any prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, ToolsetPath):
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			kitError(w, http.StatusMethodNotAllowed, "", "GET the toolset")
			return
		}
		if len(s.cat.Load().list) == 0 {
			kitError(w, http.StatusServiceUnavailable, "", "this server offers no tools yet")
			return
		}
		base := s.cfg.PublicURL
		if base == "" {
			base = requestBase(r, strings.TrimSuffix(p, ToolsetPath))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Toolset(base))
	case r.Method != http.MethodPost:
		kitError(w, http.StatusMethodNotAllowed, "", "POST to "+p)
	case !s.authorized(w, r):
	case strings.HasSuffix(p, InvokePath):
		s.invoke(w, r)
	case strings.HasSuffix(p, CancelToolCallPath):
		var b CancelToolCall
		if !readBody(w, r, &b) {
			return
		}
		s.cancelCalls(func(key string, rc *runningCall) bool { return key == callKey(b.ThreadID, b.ToolCallID) })
		kitOK(w)
	case strings.HasSuffix(p, CloseThreadPath):
		var b CloseThread
		if !readBody(w, r, &b) {
			return
		}
		s.cancelCalls(func(_ string, rc *runningCall) bool { return rc.thread == b.ThreadID })
		kitOK(w)
	case strings.HasSuffix(p, ToolCallStatusPath):
		s.status(w, r)
	case strings.HasSuffix(p, MigratePath):
		kitError(w, http.StatusNotImplemented, "", "this server does not migrate sessions")
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.Authorize == nil {
		return true
	}
	if err := s.cfg.Authorize(r); err != nil {
		kitError(w, http.StatusUnauthorized, "", err.Error())
		return false
	}
	return true
}

// status answers /tool_call_status: alive while the call runs, false for
// any call it does not track. It never changes a call's state.
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	var b ToolCallStatus
	if !readBody(w, r, &b) {
		return
	}
	for _, f := range []struct{ name, v string }{{"thread_id", b.ThreadID}, {"tool_call_id", b.ToolCallID}} {
		if err := checkID(f.name, f.v); err != nil {
			fe := err.(*FieldError)
			kitError(w, http.StatusBadRequest, fe.Field, fe.Reason)
			return
		}
	}
	s.mu.Lock()
	alive := s.running[callKey(b.ThreadID, b.ToolCallID)] != nil
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ToolCallStatusResponse{Alive: alive})
}

func requestBase(r *http.Request, prefix string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if fp := r.Header.Get("X-Forwarded-Proto"); fp == "https" || fp == "http" {
		scheme = fp
	}
	return scheme + "://" + r.Host + prefix
}

func callKey(thread, call string) string {
	b, _ := json.Marshal([]string{thread, call})
	return string(b)
}

// doneSet remembers the last max keys added (oldest forgotten first), so a
// redelivered invocation of a finished call is not run twice.
type doneSet struct {
	max  int
	keys map[string]struct{}
	ring []string
	next int
}

func newDoneSet(max int) *doneSet { return &doneSet{max: max, keys: map[string]struct{}{}} }

func (d *doneSet) has(key string) bool { _, ok := d.keys[key]; return ok }

func (d *doneSet) add(key string) {
	if d.has(key) {
		return
	}
	if len(d.ring) < d.max {
		d.ring = append(d.ring, key)
	} else {
		delete(d.keys, d.ring[d.next])
		d.ring[d.next] = key
		d.next = (d.next + 1) % d.max
	}
	d.keys[key] = struct{}{}
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	var inv Invocation
	if !readBody(w, r, &inv) {
		return
	}
	if fe := validateInvocation(&inv); fe != nil {
		kitError(w, http.StatusBadRequest, fe.Field, fe.Reason)
		return
	}
	// A bad operation or bad arguments are acknowledged and answered with
	// an error result, through the same path as a tool that fails.
	cat := s.cat.Load()
	tool := cat.tools[inv.Operation]
	if tool == nil {
		tool = failingTool(inv.Operation, fmt.Errorf("unknown operation %.140q (this server offers %s)", inv.Operation, cat.names()))
	} else if err := cat.schemas[inv.Operation].Validate(inv.Arguments); err != nil {
		tool = failingTool(inv.Operation, fmt.Errorf("invalid arguments for %s: %w", inv.Operation, err))
	}
	key := callKey(inv.GroupID, inv.ID)
	s.mu.Lock()
	switch {
	case s.ctx == nil || s.stopped || s.ctx.Err() != nil:
		s.mu.Unlock()
		kitError(w, http.StatusServiceUnavailable, "", "server is not running")
		return
	case s.running[key] != nil:
		s.mu.Unlock()
		kitOK(w) // a redelivered dispatch: already running
		return
	}
	if s.done.has(key) {
		s.mu.Unlock()
		kitOK(w) // a redelivered dispatch: already done
		return
	}
	if len(s.running) >= s.cfg.MaxRunning {
		s.mu.Unlock()
		kitError(w, http.StatusServiceUnavailable, "", "too many calls in progress; retry later")
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	// A traced dispatch carries traceparent: the tool's own spans, started
	// from Run's ctx with any OpenTelemetry tracer, join the agent's trace.
	ctx = extractTrace(ctx, r.Header)
	s.running[key] = &runningCall{thread: inv.GroupID, cancel: cancel}
	s.wg.Add(1)
	s.mu.Unlock()
	c := &Call{Invocation: inv, srv: s}
	go s.run(ctx, cancel, key, tool, c)
	kitOK(w)
}

func failingTool(name string, err error) *Tool {
	return &Tool{Name: name, Run: func(context.Context, *Call) error { return err }}
}

func (c *catalog) names() string {
	if len(c.list) == 0 {
		return "no tools"
	}
	names := make([]string, 0, len(c.list))
	for _, t := range c.list {
		names = append(names, t.Name)
	}
	return strings.Join(names, ", ")
}

func validateInvocation(inv *Invocation) *FieldError {
	if inv.Operation == "" {
		return fieldErr("operation", "missing")
	}
	for _, f := range []struct{ name, v string }{{"id", inv.ID}, {"group_id", inv.GroupID}} {
		if err := checkID(f.name, f.v); err != nil {
			return err.(*FieldError)
		}
	}
	if err := checkHTTPURL("callback_url", inv.CallbackURL); err != nil {
		return err.(*FieldError)
	}
	if len(inv.Arguments) == 0 || string(inv.Arguments) == "null" {
		inv.Arguments = json.RawMessage(`{}`)
	}
	return nil
}

func (s *Server) run(ctx context.Context, cancel context.CancelFunc, key string, tool *Tool, c *Call) {
	defer s.wg.Done()
	defer func() {
		cancel()
		s.mu.Lock()
		delete(s.running, key)
		s.done.add(key)
		s.mu.Unlock()
	}()
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				s.cfg.Logger.Error("rap: kit tool panicked", "tool", tool.Name, "call", c.ID, "panic", r, "stack", string(debug.Stack()))
				err = fmt.Errorf("the tool failed unexpectedly")
			}
		}()
		return tool.Run(ctx, c)
	}()
	if ctx.Err() != nil || c.resulted.Load() {
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("rap: kit tool failed after sending its result", "tool", tool.Name, "call", c.ID, "error", err)
		}
		return
	}
	text := "error: " + tool.Name + " finished without a result"
	if err != nil {
		text = "error: " + err.Error()
	}
	if perr := c.Result(ctx, text); perr != nil {
		s.cfg.Logger.Warn("rap: kit could not deliver an error result", "tool", tool.Name, "call", c.ID, "error", perr)
	}
}

func (s *Server) cancelCalls(match func(key string, rc *runningCall) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, rc := range s.running {
		if match(key, rc) {
			rc.cancel()
		}
	}
}

func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxCallbackBody))
	if err != nil {
		kitError(w, http.StatusRequestEntityTooLarge, "", "body too large or unreadable")
		return false
	}
	if err := decodeStrict(b, v); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			kitError(w, http.StatusBadRequest, fe.Field, fe.Reason)
		} else {
			kitError(w, http.StatusBadRequest, "", err.Error())
		}
		return false
	}
	return true
}

func kitOK(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"status":"accepted"}`+"\n")
}

func kitError(w http.ResponseWriter, status int, field, reason string) {
	msg := reason
	if field != "" {
		msg = (&FieldError{Field: field, Reason: reason}).Error()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"error": msg})
	_, _ = w.Write(append(b, '\n'))
}

// Call is one invocation as a kit tool sees it, with the means to answer.
// Its methods are safe for concurrent use.
type Call struct {
	Invocation
	srv      *Server
	seq      atomic.Int64
	resulted atomic.Bool
	epoch    string // set by Resume: keeps its event IDs apart from the first run's
}

// Resume returns a Call for an invocation this server took before a
// restart (its caller kept the invocation), so a tool can still send what
// it owes: a subscription's final event, say. Its event IDs carry epoch
// (say, the time of the restart), so they are never taken for duplicates
// of the events the first run sent. The call is not tracked as running:
// /tool_call_status answers false for it.
func (s *Server) Resume(inv Invocation, epoch string) *Call {
	return &Call{Invocation: inv, srv: s, epoch: epoch}
}

// Rerun runs the tool of an invocation this server took before a restart
// (its caller kept the invocation) again from the start, tracked as a
// running call (/tool_call_status answers true for it, cancel_tool_call
// and close_thread reach it), with its event IDs kept apart by epoch as
// Resume's are. The tool must be able to start over (a question it asked
// the person is asked again, say). It fails when the server is not
// running, the call runs already, or the tool is unknown.
func (s *Server) Rerun(inv Invocation, epoch string) error {
	tool := s.cat.Load().tools[inv.Operation]
	if tool == nil {
		return fmt.Errorf("rap: rerun of call %s: unknown operation %.140q", inv.ID, inv.Operation)
	}
	key := callKey(inv.GroupID, inv.ID)
	s.mu.Lock()
	switch {
	case s.ctx == nil || s.stopped || s.ctx.Err() != nil:
		s.mu.Unlock()
		return fmt.Errorf("rap: rerun of call %s: server is not running", inv.ID)
	case s.running[key] != nil:
		s.mu.Unlock()
		return fmt.Errorf("rap: rerun of call %s: it runs already", inv.ID)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.running[key] = &runningCall{thread: inv.GroupID, cancel: cancel}
	s.wg.Add(1)
	s.mu.Unlock()
	go s.run(ctx, cancel, key, tool, &Call{Invocation: inv, srv: s, epoch: epoch})
	return nil
}

// Args decodes the call's arguments (already valid against the schema).
func (c *Call) Args(v any) error {
	if err := json.Unmarshal(c.Arguments, v); err != nil {
		return fmt.Errorf("decoding arguments of %s: %w", c.Operation, err)
	}
	return nil
}

// Post sends a callback body to the call's callback URL, retrying 5xx and
// transport errors. A 4xx (the runtime refused it) is returned as a
// *StatusError and not retried.
func (c *Call) Post(ctx context.Context, body any) error {
	if err := PostJSON(ctx, c.srv.cfg.Client, c.CallbackURL, body, c.srv.cfg.Retry); err != nil {
		return fmt.Errorf("rap: posting callback for call %s: %w", c.ID, err)
	}
	return nil
}

// Result sends the call's text result.
func (c *Call) Result(ctx context.Context, text string) error {
	return c.result(ctx, &ToolResult{Text: &text})
}

// ResultContent sends the call's result as content items (text and images).
func (c *Call) ResultContent(ctx context.Context, items []ContentItem) error {
	return c.result(ctx, &ToolResult{Content: items})
}

// ResultDisplay sends the call's text result with display_as segments for
// UIs (TextSegment, DiffSegment, ImageSegment); the model gets text.
func (c *Call) ResultDisplay(ctx context.Context, text string, display ...DisplaySegment) error {
	return c.result(ctx, &ToolResult{Text: &text, DisplayAs: display})
}

// Subscribe sends the call's result and marks it as the start of a
// subscription: events (Event) follow until one is final.
func (c *Call) Subscribe(ctx context.Context, text string) error {
	return c.result(ctx, &ToolResult{Text: &text, Subscription: true})
}

func (c *Call) result(ctx context.Context, r *ToolResult) error {
	r.Type, r.GroupID, r.ID, r.CallID = TypeToolResult, c.GroupID, c.ID, c.CallID
	err := c.Post(ctx, r)
	var se *StatusError
	if err == nil || errors.As(err, &se) {
		c.resulted.Store(true) // delivered, or refused for good: do not send another
	}
	return err
}

// Event sends one subscription event. Associative events go inline into the
// subscribing thread; final ends the subscription. Each event carries an
// event_id (call ID and a sequence number) so retried POSTs are deduplicated
// exactly.
func (c *Call) Event(ctx context.Context, text string, associative, final bool) error {
	n := c.seq.Add(1)
	id := c.ID + "." + strconv.FormatInt(n, 10)
	if c.epoch != "" {
		id = c.ID + "." + c.epoch + "." + strconv.FormatInt(n, 10)
	}
	return c.Post(ctx, &SubscriptionEvent{Type: TypeSubscriptionEvent, GroupID: c.GroupID, ToolCallID: c.ID,
		Text: &text, Associative: associative, Final: final, EventID: id})
}

// OAuth asks the user to authorize at authURL; the call stays pending.
func (c *Call) OAuth(ctx context.Context, authURL string) error {
	return c.Post(ctx, &OAuth{Type: TypeOAuth, GroupID: c.GroupID, ID: c.ID, CallID: c.CallID, AuthURL: authURL})
}

// Choice asks the user to pick one of choices; the answer ({id, selected})
// is POSTed to responseURL, which the tool serves.
func (c *Call) Choice(ctx context.Context, prompt string, choices []string, def int, responseURL string) error {
	return c.Post(ctx, &UserChoice{Type: TypeUserChoice, GroupID: c.GroupID, ID: c.ID, CallID: c.CallID, Prompt: prompt,
		Choices: choices, Default: &def, ResponseURL: responseURL})
}

// View replaces the thread's view of viewType with content (a JSON object).
func (c *Call) View(ctx context.Context, viewType string, content any) error {
	b, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("rap: encoding view %s: %w", viewType, err)
	}
	return c.Post(ctx, &ViewUpdate{Type: TypeViewUpdate, GroupID: c.GroupID, ViewType: viewType, Content: b})
}
