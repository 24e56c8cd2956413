package rap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agentslice/agentslice/internal/runtime"
)

// ErrUnknownCall is what a CallChecker returns (possibly wrapped) for a call
// that is neither pending nor the start of an active subscription.
var ErrUnknownCall = errors.New("no matching pending call or subscription")

// CallChecker lets a Receiver reject callbacks for calls the thread is not
// waiting on before anything is enqueued. The engine checks again anyway;
// this only answers the tool earlier (404) and keeps junk off the queue.
// Errors other than ErrUnknownCall are treated as transient (503: the tool
// retries).
type CallChecker interface {
	CheckCall(ctx context.Context, threadID, callID string, t CallbackType) error
}

// ErrStaleCallback is what a callback URL issued to an earlier thread of
// the same ID (a store wiped, a thread recreated) is refused with (403).
var ErrStaleCallback = errors.New("callback URL was issued to an earlier thread of this ID")

// Incarnations tells a Receiver a thread's current incarnation
// (runtime.ThreadState.Incarnation, "" for a thread that does not exist
// or predates incarnations), so that a URL signed for another one is
// refused before anything is enqueued. Without it the engine still
// rejects the callback's result, because its call ID is unknown to the
// thread's current incarnation; the tool just hears 200 instead of 403.
type Incarnations interface {
	Incarnation(ctx context.Context, threadID string) (string, error)
}

// ViewStore keeps the latest view_update content per thread and view type.
type ViewStore interface {
	PutView(ctx context.Context, threadID, viewType string, content json.RawMessage) error
	View(ctx context.Context, threadID, viewType string) (json.RawMessage, bool, error)
}

// ChoiceStore remembers user_choice requests until the user answers; the
// answer goes to the request's ResponseURL (see PostChoice and
// MemoryChoices.Answer).
type ChoiceStore interface {
	PutChoice(ctx context.Context, threadID string, c UserChoice) error
}

// ReceiverConfig configures a Receiver. Keys and Queue are required.
type ReceiverConfig struct {
	Keys  *Keyring
	Queue runtime.Queue
	// Views stores view updates; default: NewMemoryViews(10000).
	Views ViewStore
	// Choices remembers user choices; default: NewMemoryChoices(10000).
	Choices ChoiceStore
	// Calls, when set, rejects callbacks for unknown calls early.
	Calls CallChecker
	// Incarnations, when set, refuses callbacks signed for an earlier
	// thread of the same ID (403, ErrStaleCallback).
	Incarnations Incarnations
	// Output, when set, is told about view updates (Kind "view", Text the
	// JSON {"view_type":..., "content":...}) and about the display segment
	// of each accepted tool result (Kind "display", see Receiver.display).
	Output runtime.Output
	// HistoryViews sends each view_update to its thread as a KindView
	// message, kept in the thread's history with everything else people
	// see (runtime/human.go), instead of storing it in Views; Output then
	// hears of it from history, not from the receiver.
	HistoryViews bool
	// LiveViews, with HistoryViews, makes the views of a call that goes on
	// in the background display only (liveviews.go): such a view_update is
	// kept in memory (the latest per call and view type, Receiver.LiveViews)
	// and told to ViewOutput, and no message is enqueued, so it costs the
	// thread no slice and no history item. The call's latest views enter
	// history once, as KindView messages sent right before the callback
	// that ends the call. A view of a call that is over goes to history at
	// once, as with HistoryViews alone.
	LiveViews LiveCalls
	// LiveStore keeps the live views and the started marks between
	// callbacks; default NewMemoryLiveViews(10000), right for one process
	// (serve). Several processes behind one callback URL (the AWS
	// receiver's execution environments) share one: dedup.LiveViews.
	LiveStore LiveViewStore
	// ViewOutput is told about live views (Kind "view"); default Output.
	ViewOutput runtime.Output
	// Now is the clock a callback's arrival (Message.At) is stamped with;
	// default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Receiver is the http.Handler behind every callback URL. It accepts a
// callback only if the URL's signature is valid and unexpired and the body is
// valid and belongs to the signed thread and call; then it enqueues one
// runtime.Message (view updates are stored instead) and answers 200.
// Anything else gets a 4xx with {"error": "..."} naming the field. A body
// that is authentic (signed URL) but unusable (malformed, the wrong shape)
// also puts an error result in the thread so the model goes on; a result too
// large for a queue message is truncated with a note to the model (see
// fit.go). A transient failure to enqueue answers 503 so the tool retries.
type Receiver struct {
	cfg  ReceiverConfig
	live LiveViewStore // with LiveViews
}

// NewReceiver checks cfg and returns a Receiver.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	if cfg.Keys == nil {
		return nil, errors.New("rap: ReceiverConfig.Keys is required")
	}
	if cfg.Queue == nil {
		return nil, errors.New("rap: ReceiverConfig.Queue is required")
	}
	if cfg.Views == nil {
		cfg.Views = NewMemoryViews(10000)
	}
	if cfg.Choices == nil {
		cfg.Choices = NewMemoryChoices(10000)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	rc := &Receiver{cfg: cfg}
	if cfg.HistoryViews && cfg.LiveViews != nil {
		rc.live = cfg.LiveStore
		if rc.live == nil {
			rc.live = NewMemoryLiveViews(10000)
		}
	}
	return rc, nil
}

// Views returns the store view updates go to.
func (rc *Receiver) Views() ViewStore { return rc.cfg.Views }

// Choices returns the store user choices go to.
func (rc *Receiver) Choices() ChoiceStore { return rc.cfg.Choices }

// ServeHTTP handles one callback POST.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, &CallbackError{Status: http.StatusMethodNotAllowed, Err: errors.New("callbacks are POSTed")})
		return
	}
	// One byte more than the limit is read, so that Accept sees an
	// oversized body and answers it (413 and an error result).
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxCallbackBody+1))
	if err != nil {
		writeError(w, &CallbackError{Status: http.StatusBadRequest, Err: fmt.Errorf("reading the body: %w", err)})
		return
	}
	if err := rc.Accept(r.Context(), r.URL.Query(), body); err != nil {
		var ce *CallbackError
		if !errors.As(err, &ce) {
			ce = &CallbackError{Status: http.StatusServiceUnavailable, Err: err}
		}
		if ce.Status >= 500 {
			rc.cfg.Logger.WarnContext(r.Context(), "rap: callback not enqueued; the tool should retry", "error", err)
		} else {
			rc.cfg.Logger.InfoContext(r.Context(), "rap: callback rejected", "status", ce.Status, "error", err)
		}
		writeError(w, ce)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"status":"accepted"}`+"\n")
}

func writeError(w http.ResponseWriter, ce *CallbackError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ce.Status)
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Field string `json:"field,omitempty"`
	}{ce.Error(), ce.Field})
	_, _ = w.Write(append(b, '\n'))
}

// Accept verifies, decodes and enqueues one callback given its URL query and
// body; ServeHTTP wraps it, and a Lambda handler can call it directly.
// Rejections are *CallbackError values carrying the HTTP status: 403 for a
// bad, expired or cross-thread capability, 400 for a malformed body, 404 for
// an unknown call (with a CallChecker), 410 for a closed thread; other errors
// are transient (answer 503). A URL issued to an earlier thread of the
// same ID gets 403 (ErrStaleCallback, with ReceiverConfig.Incarnations).
func (rc *Receiver) Accept(ctx context.Context, query map[string][]string, body []byte) error {
	capa, err := rc.cfg.Keys.Verify(query, rc.cfg.Now())
	if err != nil {
		return err
	}
	if err := rc.checkIncarnation(ctx, capa); err != nil {
		return err
	}
	cb, err := DecodeCallback(body)
	if err != nil {
		ce := &CallbackError{Status: http.StatusBadRequest, Err: err}
		var fe *FieldError
		if errors.As(err, &fe) {
			ce = &CallbackError{Status: http.StatusBadRequest, Field: fe.Field, Err: errors.New(fe.Reason)}
		}
		if len(body) > MaxCallbackBody {
			ce.Status = http.StatusRequestEntityTooLarge
		}
		return rc.unusable(ctx, capa, body, ce)
	}
	if g := cb.GroupID(); g != capa.ThreadID {
		return &CallbackError{Status: http.StatusForbidden, Field: "group_id",
			Err: fmt.Errorf("thread %.100q does not match the thread this callback URL was issued for", g)}
	}
	if id, field := cb.CallRef(); field != "" && id != capa.CallID {
		return &CallbackError{Status: http.StatusForbidden, Field: field,
			Err: fmt.Errorf("tool call %.100q does not match the call this callback URL was issued for", id)}
	}
	if cb.Type == TypeViewUpdate && !rc.cfg.HistoryViews {
		return rc.view(ctx, capa, cb.ViewUpdate)
	}
	if cb.Type == TypeViewUpdate && rc.live != nil {
		if handled, err := rc.liveView(ctx, capa, cb.ViewUpdate); handled || err != nil {
			return err
		}
	}
	if cb.Type != TypeViewUpdate { // a view belongs to the thread, not to a call it waits on
		if err := rc.checkCall(ctx, capa, cb.Type); err != nil {
			return err
		}
	}
	var flushed []LiveView
	if rc.live != nil && ends(cb) {
		if flushed, err = rc.flushLiveViews(ctx, capa); err != nil {
			return err
		}
	}
	if cb.Type == TypeUserChoice {
		if err := rc.cfg.Choices.PutChoice(ctx, capa.ThreadID, *cb.UserChoice); err != nil {
			return fmt.Errorf("rap: storing choice for call %s of thread %s: %w", capa.CallID, capa.ThreadID, err)
		}
	}
	msg := MessageFor(capa.ThreadID, capa.CallID, cb)
	msg.Class = capa.Class // routes the message to its thread's class's queue
	msg.At = runtime.StampOf(rc.cfg.Now())
	msg.Trace = capa.Trace
	err = rc.cfg.Queue.Send(ctx, msg)
	// A message the queue refuses for good (too large for its own limit,
	// say) is fitted again with half the budget, then replaced by an error
	// result: never answered 5xx, which would make the tool retry forever.
	for budget, n := fitBudget/2, 0; err != nil && runtime.IsPermanent(err) && !errors.Is(err, runtime.ErrClosed) &&
		(msg.Kind == runtime.KindToolResult || msg.Kind == runtime.KindEvent) && n < fitAttempts; budget, n = budget/2, n+1 {
		fitMessage(&msg, budget)
		err = rc.cfg.Queue.Send(ctx, msg)
	}
	if err != nil {
		switch {
		case errors.Is(err, runtime.ErrClosed):
			return &CallbackError{Status: http.StatusGone, Err: err}
		case runtime.IsPermanent(err) && msg.Kind == runtime.KindView:
			// A view is not the call's result: the call goes on, so
			// the tool hears 413 and the thread gets nothing.
			return &CallbackError{Status: http.StatusRequestEntityTooLarge, Field: "content",
				Err: fmt.Errorf("the queue refused the view_update (send a smaller view): %w", err)}
		case runtime.IsPermanent(err):
			return rc.unusable(ctx, capa, body, &CallbackError{Status: http.StatusRequestEntityTooLarge,
				Err: fmt.Errorf("the queue refused the %s: %w", cb.Type, err)})
		}
		return fmt.Errorf("rap: enqueueing %s for thread %s: %w", msg.ID, capa.ThreadID, err)
	}
	if rc.live != nil {
		rc.dropLiveViews(ctx, capa, flushed)
		rc.accepted(ctx, capa, cb)
	}
	if cb.Type == TypeToolResult {
		rc.checkDisplayAs(ctx, capa, body)
	}
	if cb.Type == TypeToolResult && !rc.cfg.HistoryViews {
		rc.display(ctx, capa, cb.ToolResult)
	}
	return nil
}

// checkDisplayAs logs a result's display_as that is not a list: it was
// read as one segment (an object) or ignored (anything else), and the
// result itself was accepted (see DisplaySegments).
func (rc *Receiver) checkDisplayAs(ctx context.Context, capa Capability, body []byte) {
	v := gjson.GetBytes(body, "display_as")
	if !v.Exists() || v.IsArray() || v.Type == gjson.Null {
		return
	}
	how := "ignored"
	if v.IsObject() {
		how = "read as a list of one segment"
	}
	rc.cfg.Logger.InfoContext(ctx, "rap: a tool result's display_as is not a list; "+how+", the result is kept", "thread", capa.ThreadID,
		"call", capa.CallID, "display_as", fmt.Sprintf("%.200s", v.Raw))
}

// display forwards, best effort, the display segment a UI should render
// for a result (see ToolResult.Display) as an output event of kind
// "display" whose Text is {"call_id":..., "display":{...}}. The model never
// sees it; a result with nothing renderable publishes nothing (UIs show the
// text).
func (rc *Receiver) display(ctx context.Context, capa Capability, r *ToolResult) {
	d, ok := r.Display()
	if rc.cfg.Output == nil || !ok {
		return
	}
	text, _ := json.Marshal(struct {
		CallID  string  `json:"call_id"`
		Display Display `json:"display"`
	}{capa.CallID, d})
	ev := runtime.OutputEvent{ID: runtime.DeriveID("disp_", capa.ThreadID, capa.CallID),
		ThreadID: capa.ThreadID, Kind: "display", Text: string(text)}
	if err := rc.cfg.Output.Publish(ctx, ev); err != nil {
		rc.cfg.Logger.WarnContext(ctx, "rap: display segment not forwarded (best effort)", "thread", capa.ThreadID, "call", capa.CallID, "error", err)
	}
}

// checkIncarnation refuses a capability signed for another incarnation of
// its thread than the current one, before the body is even read: a stale
// URL's body reaches nothing, not even as an error result.
func (rc *Receiver) checkIncarnation(ctx context.Context, capa Capability) error {
	if rc.cfg.Incarnations == nil {
		return nil
	}
	cur, err := rc.cfg.Incarnations.Incarnation(ctx, capa.ThreadID)
	if err != nil {
		return fmt.Errorf("rap: reading the incarnation of thread %s: %w", capa.ThreadID, err)
	}
	if cur != capa.Incarnation {
		return &CallbackError{Status: http.StatusForbidden, Field: paramInc,
			Err: fmt.Errorf("%w: thread %.100q was recreated since (or no longer exists)", ErrStaleCallback, capa.ThreadID)}
	}
	return nil
}

// checkCall asks the CallChecker, if any, whether the thread still waits
// on the call: ErrUnknownCall answers 404, other errors are transient.
func (rc *Receiver) checkCall(ctx context.Context, capa Capability, t CallbackType) error {
	if rc.cfg.Calls == nil {
		return nil
	}
	if err := rc.cfg.Calls.CheckCall(ctx, capa.ThreadID, capa.CallID, t); err != nil {
		if errors.Is(err, ErrUnknownCall) {
			return &CallbackError{Status: http.StatusNotFound, Err: err}
		}
		return fmt.Errorf("rap: checking call %s of thread %s: %w", capa.CallID, capa.ThreadID, err)
	}
	return nil
}

// unusable handles an authentic callback (its URL's signature checked out)
// whose body cannot be used: malformed, too large, the wrong shape. The
// tool gets ce (a 4xx: retrying the same body cannot help) and the thread
// gets an error result for the signed call, so the model goes on instead of
// waiting for a result that will never come. The error result's ID is
// derived from the body, so a retried POST is deduplicated, and differs
// from a real result's, so a later valid result still arrives (as a late
// result, injected as an event). If the error result cannot be enqueued
// the answer is 503, so the tool retries and nothing is lost.
func (rc *Receiver) unusable(ctx context.Context, capa Capability, body []byte, ce *CallbackError) error {
	if err := rc.checkCall(ctx, capa, TypeToolResult); err != nil {
		return ce // the thread does not wait on this call: nothing to unblock
	}
	m := UnusableResult(capa.ThreadID, capa.CallID, body, ce.Status, ce.Error())
	m.Trace = capa.Trace
	if err := rc.cfg.Queue.Send(ctx, m); err != nil {
		if errors.Is(err, runtime.ErrClosed) {
			return &CallbackError{Status: http.StatusGone, Err: err}
		}
		if runtime.IsPermanent(err) {
			// A queue that refuses a short error result is misconfigured;
			// retrying cannot help, so say so loudly and answer 4xx.
			rc.cfg.Logger.ErrorContext(ctx, "rap: the queue refused the error result of an unusable callback", "thread", capa.ThreadID,
				"call", capa.CallID, "error", err)
			return ce
		}
		return fmt.Errorf("rap: enqueueing the error result for unusable callback %s of thread %s: %w", capa.CallID, capa.ThreadID, err)
	}
	rc.cfg.Logger.InfoContext(ctx, "rap: unusable callback answered with an error result", "thread", capa.ThreadID,
		"call", capa.CallID, "status", ce.Status, "error", ce.Error())
	return &CallbackError{Status: ce.Status, Field: ce.Field,
		Err: fmt.Errorf("%w (an error result was delivered to the thread instead)", ce.Err)}
}

// UnusableResult is the error result a thread gets for an authentic
// callback it could not use (see Receiver.unusable).
func UnusableResult(threadID, callID string, body []byte, status int, reason string) runtime.Message {
	sum := sha256.Sum256(body)
	if len(reason) > 2000 {
		reason = reason[:2000]
	}
	reason = strings.ToValidUTF8(reason, "?")
	return runtime.Message{V: runtime.MessageVersion, ID: runtime.DeriveID("bad_", threadID, callID, hex.EncodeToString(sum[:])),
		ThreadID: threadID, Kind: runtime.KindToolResult, ToolCallID: callID, IsError: true,
		Text: fmt.Sprintf("error: the tool sent a reply this runtime could not use (answered HTTP %d): %s. "+
			"The call is over; try again, differently, or go on without it.", status, reason)}
}

func (rc *Receiver) view(ctx context.Context, capa Capability, v *ViewUpdate) error {
	if err := rc.cfg.Views.PutView(ctx, capa.ThreadID, v.ViewType, v.Content); err != nil {
		return fmt.Errorf("rap: storing view %s of thread %s: %w", v.ViewType, capa.ThreadID, err)
	}
	if rc.cfg.Output == nil {
		return nil
	}
	text, _ := json.Marshal(struct {
		ViewType string          `json:"view_type"`
		Content  json.RawMessage `json:"content"`
	}{v.ViewType, v.Content})
	ev := runtime.OutputEvent{ID: runtime.DeriveID("view_", capa.ThreadID, v.ViewType, string(v.Content)),
		ThreadID: capa.ThreadID, Kind: "view", Text: string(text)}
	if err := rc.cfg.Output.Publish(ctx, ev); err != nil {
		return fmt.Errorf("rap: forwarding view %s of thread %s: %w", v.ViewType, capa.ThreadID, err)
	}
	return nil
}

// MessageFor turns an accepted callback into the runtime message it stands
// for. Message IDs are deterministic, so a tool that retries its POST is
// deduplicated by the runtime:
//   - tool_result: "res_" over (thread, call); the first result wins. Its
//     first renderable display_as segment travels along (Message.Display)
//     unless the message would then not fit a queue message.
//   - subscription_event: "sev_" over (thread, call, event_id) when the tool
//     sent an event_id, else over (thread, call, text, associative, final).
//   - oauth: "oauth_" over (thread, call, auth_url).
//   - user_choice: "choice_" over (thread, call, prompt, choices,
//     response_url); the choice itself travels along (Message.Choice).
//   - view_update: "view_" over (thread, call, view_type, content), kind
//     KindView with Text {"view_type", "content"}.
func MessageFor(threadID, callID string, cb *Callback) runtime.Message {
	m := runtime.Message{V: runtime.MessageVersion, ThreadID: threadID, ToolCallID: callID}
	switch cb.Type {
	case TypeToolResult:
		r := cb.ToolResult
		m.ID = runtime.ResultID(threadID, callID)
		m.Kind = runtime.KindToolResult
		if len(r.Content) > 0 {
			m.Content = make([]runtime.Content, len(r.Content))
			for i, c := range r.Content {
				m.Content[i] = runtime.Content(c)
			}
		} else if r.Text != nil {
			m.Text = *r.Text
		}
		m.Subscription = r.Subscription
		if !fitMessage(&m, fitBudget) {
			if d, ok := r.Display(); ok {
				js, _ := json.Marshal(d) // strings only: cannot fail
				if payloadLen(&m)+len(js) <= fitBudget {
					m.Display = string(js)
				}
			}
		}
	case TypeSubscriptionEvent:
		e := cb.SubscriptionEvent
		text := ""
		if e.Text != nil {
			text = *e.Text
		} else {
			text = "the subscription ended"
		}
		if e.EventID != "" {
			m.ID = runtime.DeriveID("sev_", threadID, callID, "id", e.EventID)
		} else {
			m.ID = runtime.DeriveID("sev_", threadID, callID, "body", text,
				strconv.FormatBool(e.Associative), strconv.FormatBool(e.Final))
		}
		m.Kind = runtime.KindEvent
		m.Text = text
		m.Associative = e.Associative
		m.Final = e.Final
		fitMessage(&m, fitBudget)
	case TypeOAuth:
		m.ID = runtime.DeriveID("oauth_", threadID, callID, cb.OAuth.AuthURL)
		m.Kind = runtime.KindNotice
		m.Text = "The tool needs authorization before it can continue. Open this URL to authorize: " + cb.OAuth.AuthURL
	case TypeUserChoice:
		u := cb.UserChoice
		m.ID = runtime.DeriveID("choice_", threadID, callID, u.Prompt, strings.Join(u.Choices, "\x00"), u.ResponseURL)
		m.Kind = runtime.KindNotice
		m.Text = choiceText(u)
		js, _ := json.Marshal(u) // strings and ints: cannot fail
		m.Choice = string(js)
	case TypeViewUpdate:
		v := cb.ViewUpdate
		m.ID = runtime.DeriveID("view_", threadID, callID, v.ViewType, string(v.Content))
		m.Kind = runtime.KindView
		js, _ := json.Marshal(struct {
			ViewType string          `json:"view_type"`
			Content  json.RawMessage `json:"content"`
		}{v.ViewType, v.Content})
		m.Text = string(js)
	}
	return m
}

func choiceText(u *UserChoice) string {
	var b strings.Builder
	b.WriteString("The tool asks you to choose: ")
	b.WriteString(u.Prompt)
	for i, c := range u.Choices {
		fmt.Fprintf(&b, "\n  %d. %s", i, c)
		if u.Default != nil && i == *u.Default {
			b.WriteString(" (default)")
		}
	}
	fmt.Fprintf(&b, "\n(choice for tool call %s)", u.ID)
	return b.String()
}
