package rap

import (
	"github.com/agentslice/agentslice/rapkit"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Dispatcher sends invocations and best-effort notifications to tool
// servers. It is shared by every tool a Loader offers. Close waits for the
// notifications still in flight.
type Dispatcher struct {
	client *http.Client
	signer *Signer
	retry  RetryPolicy
	log    *slog.Logger

	notifyTimeout time.Duration
	slots         chan struct{} // bounds concurrent notifications
	wg            sync.WaitGroup
	mu            sync.Mutex
	closed        bool
	inflight      int           // notifications running, under mu
	idle          chan struct{} // closed when inflight drops to 0
}

// DispatcherConfig configures a Dispatcher. Signer is required.
type DispatcherConfig struct {
	Signer *Signer
	Client *http.Client // default: a client with a 30s timeout
	Retry  RetryPolicy
	// NotifyTimeout bounds one close_thread / cancel_tool_call POST.
	// Default 5s.
	NotifyTimeout time.Duration
	// MaxNotifications bounds the notifications in flight; more are
	// dropped (and logged), never queued. Default 64.
	MaxNotifications int
	Logger           *slog.Logger
}

// NewDispatcher returns a Dispatcher.
func NewDispatcher(cfg DispatcherConfig) (*Dispatcher, error) {
	if cfg.Signer == nil || cfg.Signer.Keys == nil {
		return nil, errors.New("rap: DispatcherConfig.Signer with a keyring is required")
	}
	if _, err := cfg.Signer.CallbackURL("t", "c"); err != nil {
		return nil, err
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.NotifyTimeout <= 0 {
		cfg.NotifyTimeout = 5 * time.Second
	}
	if cfg.MaxNotifications <= 0 {
		cfg.MaxNotifications = 64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Dispatcher{client: cfg.Client, signer: cfg.Signer, retry: cfg.Retry, log: cfg.Logger,
		notifyTimeout: cfg.NotifyTimeout, slots: make(chan struct{}, cfg.MaxNotifications)}, nil
}

// Invoke POSTs one invocation of operation to endpoint and returns once the
// tool accepted it (any 2xx). It never waits for the result. A 4xx, or 5xx
// and transport errors until the retry budget is spent, give a
// *runtime.ToolRejectedError; a cancelled ctx gives ctx's error (the slice
// is retried).
func (d *Dispatcher) Invoke(ctx context.Context, endpoint, operation string, inv runtime.Invocation) error {
	cb, err := d.signer.InvocationCallbackURL(inv)
	if err != nil {
		return fmt.Errorf("rap: signing callback for %s: %w", inv.CallID, err)
	}
	args := json.RawMessage(inv.Args)
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	body := Invocation{Operation: operation, Arguments: args, ID: inv.CallID, CallbackURL: cb,
		GroupID: inv.ThreadID, ThreadAncestors: inv.Ancestors, UserID: inv.UserID}
	if inv.Agent != "" {
		body.Agent = &rapkit.AgentInfo{Name: inv.Agent, Network: inv.AgentNetwork}
	}
	err = rapkit.PostJSON(withTraceparent(ctx, inv.Trace), d.client, endpoint, body, d.retry)
	var se *StatusError
	var ue *UnavailableError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return &runtime.ToolRejectedError{Tool: operation, Reason: fmt.Sprintf("the tool server answered HTTP %d: %s", se.Status, se.Body)}
	case errors.As(err, &ue):
		var srv *ServerError
		if errors.As(ue.Last, &srv) {
			return &runtime.ToolRejectedError{Tool: operation, ServerFailed: true,
				Reason: fmt.Sprintf("its server answered HTTP %d to each of %d attempts: %s", srv.Status, ue.Attempts, srv.Body)}
		}
		return &runtime.ToolRejectedError{Tool: operation, Unreachable: true,
			Reason: fmt.Sprintf("its server %s could not be reached (%d attempts): %v", ue.URL, ue.Attempts, ue.Last)}
	}
	return fmt.Errorf("rap: invoking %s (%s): %w", operation, inv.CallID, err)
}

// Notify POSTs body to url once, in the background: never retried, never
// blocking the caller. Failures are logged. It reports whether the
// notification was started (false after Close or when too many are in
// flight).
func (d *Dispatcher) Notify(url string, body any) bool {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return false
	}
	select {
	case d.slots <- struct{}{}:
	default:
		d.mu.Unlock()
		d.log.Warn("rap: notification dropped: too many in flight", "url", url)
		return false
	}
	d.wg.Add(1)
	if d.inflight == 0 {
		d.idle = make(chan struct{})
	}
	d.inflight++
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		defer d.done()
		defer func() { <-d.slots }()
		ctx, cancel := context.WithTimeout(context.Background(), d.notifyTimeout)
		defer cancel()
		err := rapkit.PostJSON(ctx, d.client, url, body, RetryPolicy{Attempts: 1, AttemptTimeout: d.notifyTimeout, Total: d.notifyTimeout})
		if err != nil {
			d.log.Warn("rap: notification failed (best effort, not retried)", "url", url, "error", err)
		}
	}()
	return true
}

func (d *Dispatcher) done() {
	d.mu.Lock()
	d.inflight--
	if d.inflight == 0 {
		close(d.idle)
	}
	d.mu.Unlock()
}

// Wait waits until no notification is in flight, or ctx ends (its error is
// returned). Unlike Close it keeps accepting notifications: the Lambda
// handler calls it before returning, because Lambda freezes the execution
// environment once the handler returns and a notification still running
// would stall until the next invocation, or be lost.
func (d *Dispatcher) Wait(ctx context.Context) error {
	d.mu.Lock()
	if d.inflight == 0 {
		d.mu.Unlock()
		return nil
	}
	idle := d.idle
	d.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("rap: waiting for notifications in flight: %w", ctx.Err())
	}
}

// Close stops accepting notifications and waits for those in flight (each
// is bounded by NotifyTimeout). It is safe to call twice.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.wg.Wait()
}

// remoteTool is one RAP tool as the engine sees it: runtime.Tool,
// runtime.ArgsValidator and runtime.Canceler.
type remoteTool struct {
	d       *Dispatcher
	set     *loadedToolset
	def     *ToolDef
	schema  *Schema
	servers []string // every configured server, for cancellations
}

var (
	_ runtime.Tool          = (*remoteTool)(nil)
	_ runtime.ArgsValidator = (*remoteTool)(nil)
	_ runtime.Canceler      = (*remoteTool)(nil)
)

// Dispatch validates the arguments again (the toolset may have changed since
// the call was recorded) and invokes the tool.
func (t *remoteTool) Dispatch(ctx context.Context, inv runtime.Invocation) error {
	if err := t.ValidateArgs(inv.Args); err != nil {
		return &runtime.ToolRejectedError{Tool: t.def.Name, Reason: "invalid arguments: " + err.Error()}
	}
	return t.d.Invoke(ctx, t.set.endpoint, t.def.Name, inv)
}

// ValidateArgs checks args against the tool's inputSchema.
func (t *remoteTool) ValidateArgs(args string) error {
	if args == "" {
		args = "{}"
	}
	return t.schema.Validate([]byte(args))
}

// Cancel tells every configured tool server, best effort, concurrently and
// never retried, that the call was cancelled (the spec broadcasts it; the
// servers that never saw the call ignore it). It returns at once.
func (t *remoteTool) Cancel(_ context.Context, threadID, callID string) error {
	servers := t.servers
	if len(servers) == 0 {
		servers = []string{t.set.base}
	}
	for _, base := range servers {
		t.d.Notify(base+CancelToolCallPath, CancelToolCall{ThreadID: threadID, ToolCallID: callID})
	}
	return nil
}
