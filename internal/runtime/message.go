package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// MessageVersion is the version of the Message JSON encoding this package
// writes. Decoders accept versions 1..MessageVersion.
const MessageVersion = 1

// Limits on what a message may carry. They keep one message within an SQS
// message (1 MiB) with room for its envelope.
const (
	MaxIDLen        = 256
	MaxMessageBytes = 900 << 10
)

// Kind says what a Message is for.
type Kind string

// The message kinds. Every input the runtime has is a message of one of these.
const (
	KindUser       Kind = "user"        // text from the user
	KindToolResult Kind = "tool_result" // the result of an asynchronous tool call
	KindEvent      Kind = "event"       // a subscription event from a tool
	KindWake       Kind = "wake"        // a timer firing for a sleep call
	KindReport     Kind = "report"      // a child thread reporting to its parent
	KindParent     Kind = "parent"      // a message from the parent thread
	KindStart      Kind = "start"       // a freshly spawned child thread starts work
	KindNotice     Kind = "notice"      // oauth / user-choice notice about a pending call
	KindContinue   Kind = "continue"    // continuation after a slice hit its cap or deadline
	KindSummary    Kind = "summary"     // a compaction child's summary for its parent
	KindCheck      Kind = "check"       // a liveness check of a pending call or subscription (liveness.go)
	KindStop       Kind = "stop"        // a person stops the thread: the pending call is interrupted, the model does not run
	KindClose      Kind = "close"       // a person closes the thread: as stop, then the thread takes no more messages
	KindModel      Kind = "model"       // a person switches the thread's model (Text: the model's name, "" for the default)
	KindAgent      Kind = "agent"       // a person switches the agent the thread runs as (Agent: its name)
	KindRetry      Kind = "retry"       // a provider wait ended: the model runs again (provider_wait.go; Text: the wait's number)
	KindView       Kind = "view"        // a tool's view_update (Text: {"view_type", "content"}), kept in history (human.go)
	KindAnswer     Kind = "answer"      // a person answered the pending call's user_choice (Choice: {"id", "selected"}; human.go)
	KindBudget     Kind = "budget"      // a person sets or raises a limit (Budget); without Budget, a tree's raise wakes the thread (budget.go)
)

// known reports whether k is one of the message kinds. (A switch, not a
// map: every message is validated when it is sent and again in its slice.)
func (k Kind) known() bool {
	switch k {
	case KindUser, KindToolResult, KindEvent, KindWake, KindReport, KindParent, KindStart, KindNotice,
		KindContinue, KindSummary, KindCheck, KindStop, KindClose, KindModel, KindAgent, KindRetry, KindView, KindAnswer, KindBudget:
		return true
	}
	return false
}

// needsCallID reports whether messages of kind k refer to a tool call.
func (k Kind) needsCallID() bool {
	switch k {
	case KindToolResult, KindEvent, KindWake, KindReport, KindNotice, KindCheck, KindAnswer:
		return true
	}
	return false
}

// Content is one part of a tool result: text or a base64 image.
type Content struct {
	Type      string `json:"type"` // "text" or "image"
	Text      string `json:"text,omitempty"`
	Data      string `json:"data,omitempty"` // base64, images only
	MediaType string `json:"mediaType,omitempty"`
}

// Message is the runtime's only input. Its ID is stable across redeliveries;
// the runtime uses it to process each message exactly once.
type Message struct {
	V          int       `json:"v"`
	ID         string    `json:"id"`
	ThreadID   string    `json:"thread_id"`
	Kind       Kind      `json:"kind"`
	Text       string    `json:"text,omitempty"`
	Content    []Content `json:"content,omitempty"`
	ToolCallID string    `json:"tool_call_id,omitempty"` // the call a result, event, wake-up or report belongs to
	IsError    bool      `json:"is_error,omitempty"`
	// Subscription marks a tool result that starts a subscription.
	Subscription bool `json:"subscription,omitempty"`
	// Associative events are injected inline instead of in a child thread.
	Associative bool `json:"associative,omitempty"`
	// Final events end their subscription.
	Final bool `json:"final,omitempty"`
	// From names the sending thread for reports and parent messages.
	From   string `json:"from,omitempty"`
	UserID string `json:"user_id,omitempty"`
	// Covers is, for a summary, the length of the view it summarises.
	Covers int `json:"covers,omitempty"`
	// Class is the priority class of the thread the message is for ("" is
	// interactive). Queues route by it; for a new root thread the first
	// message's class becomes the thread's class. See Class.
	Class Class `json:"class,omitempty"`
	// Agent, on a user message, names the agent the thread runs as. Only a
	// thread's first message binds it; naming another agent later is an
	// error.
	Agent string `json:"agent,omitempty"`
	// Upgrade, on a new thread's first user message, is its agent upgrade
	// policy (UpgradeLatest, the default, or UpgradePinned); later
	// messages' are ignored.
	Upgrade string `json:"upgrade,omitempty"`
	// At is when the message arrived (the receiver or the embedded
	// system stamps it when it accepts it, from the system's clock); a
	// tool result's item keeps it. 0: not stamped (the item then gets its
	// commit's time). It takes no part in deduplication.
	At Stamp `json:"at,omitempty"`
	// Choice is a JSON object for people: on a notice, the user_choice a
	// tool asks (as the tool sent it); on an answer, {"id", "selected"}.
	// The engine keeps it in history (human.go) and never reads it.
	Choice string `json:"choice,omitempty"`
	// Display is, on a tool result, the display_as segment a UI renders
	// (a JSON object {"type", "content"}); kept in history beside the
	// result, never shown to the model.
	Display string `json:"display,omitempty"`
	// Budget, on a KindBudget message or a thread's first user message,
	// sets or raises a limit of the thread or its tree (budget.go).
	Budget *BudgetChange `json:"budget,omitempty"`
	// Trace is the W3C traceparent of the span that sent the message (a
	// slice's send or dispatch span, the tool call a callback answers),
	// "" when the sender did not trace. The slice the message wakes
	// continues that trace (Tracer.StartSlice); it takes no part in
	// deduplication or in history.
	Trace string `json:"traceparent,omitempty"`
}

// Validate checks a message's envelope and fields. It returns a
// *BadMessageError naming the first problem.
func (m *Message) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &BadMessageError{ID: m.ID, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if m.V < 1 || m.V > MessageVersion {
		return bad("v", "unsupported version %d (this runtime reads 1..%d)", m.V, MessageVersion)
	}
	if err := checkID(m.ID); err != nil {
		return bad("id", "%s", err)
	}
	if err := checkID(m.ThreadID); err != nil {
		return bad("thread_id", "%s", err)
	}
	if !m.Kind.known() {
		return bad("kind", "unknown kind %q", m.Kind)
	}
	if m.Kind.needsCallID() {
		if err := checkID(m.ToolCallID); err != nil {
			return bad("tool_call_id", "%s (required for kind %s)", err, m.Kind)
		}
	}
	if !m.Class.Valid() {
		return bad("class", "unknown priority class %q (want %q or %q)", m.Class, ClassInteractive, ClassBackground)
	}
	if m.Kind == KindAgent && m.Agent == "" {
		return bad("agent", "missing: the agent to switch to")
	}
	if m.Agent != "" {
		if m.Kind != KindUser && m.Kind != KindAgent {
			return bad("agent", "only a user message may name an agent (kind %s)", m.Kind)
		}
		if !ValidAgentName(m.Agent) {
			return bad("agent", "%q is not an agent name ([A-Za-z0-9_-]{1,64})", m.Agent)
		}
	}
	if m.Upgrade != "" {
		if m.Kind != KindUser {
			return bad("upgrade", "only a user message may set an upgrade policy (kind %s)", m.Kind)
		}
		if !ValidUpgrade(m.Upgrade) {
			return bad("upgrade", "unknown upgrade policy %q (want %q or %q)", m.Upgrade, UpgradeLatest, UpgradePinned)
		}
	}
	if m.Kind == KindUser && m.Text == "" {
		return bad("text", "empty user message")
	}
	if m.Budget != nil {
		if m.Kind != KindBudget && m.Kind != KindUser {
			return bad("budget", "only a budget or a user message carries a budget (kind %s)", m.Kind)
		}
		if err := m.Budget.validate(); err != nil {
			return bad("budget", "%v", err)
		}
	}
	if m.Trace != "" && !validTraceparent(m.Trace) {
		return bad("traceparent", "%.80q is not a W3C traceparent (version-traceid-parentid-flags in lowercase hex)", m.Trace)
	}
	if err := m.validateHuman(); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"text", m.Text}, {"from", m.From}, {"user_id", m.UserID}} {
		if !utf8.ValidString(f.v) {
			return bad(f.name, "not valid UTF-8")
		}
	}
	size := len(m.Text) + len(m.Choice) + len(m.Display)
	for i, c := range m.Content {
		switch c.Type {
		case "text":
			if !utf8.ValidString(c.Text) {
				return bad(fmt.Sprintf("content[%d].text", i), "not valid UTF-8")
			}
		case "image":
			if c.Data == "" || c.MediaType == "" {
				return bad(fmt.Sprintf("content[%d]", i), "image needs data and mediaType")
			}
		default:
			return bad(fmt.Sprintf("content[%d].type", i), "unknown content type %q", c.Type)
		}
		size += len(c.Text) + len(c.Data)
	}
	if size > MaxMessageBytes {
		return bad("text", "payload is %d bytes, more than the limit of %d", size, MaxMessageBytes)
	}
	return nil
}

func checkID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("missing")
	case len(id) > MaxIDLen:
		return fmt.Errorf("%d bytes long, more than %d", len(id), MaxIDLen)
	case printableASCII(id):
		return nil // the common case, in one pass
	case !utf8.ValidString(id):
		return fmt.Errorf("not valid UTF-8")
	}
	for _, r := range id {
		if r < 0x21 || r == 0x7f {
			return fmt.Errorf("contains a control or space character")
		}
	}
	return nil
}

// printableASCII reports whether id is only ASCII characters from 0x21 to
// 0x7e, which checkID accepts.
func printableASCII(id string) bool {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c >= 0x7f {
			return false
		}
	}
	return true
}

// DecodeMessage parses and validates one JSON-encoded message. Unknown fields
// are rejected so that a typo in a producer shows up as a clear error rather
// than as a silently ignored field.
func DecodeMessage(b []byte) (Message, error) {
	var m Message
	if len(b) > MaxMessageBytes+64<<10 {
		return m, &BadMessageError{Reason: fmt.Sprintf("body is %d bytes, more than the limit", len(b))}
	}
	if !utf8.Valid(b) {
		return m, &BadMessageError{Reason: "body is not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, &BadMessageError{ID: m.ID, Reason: "malformed JSON: " + err.Error()}
	}
	if dec.More() {
		return m, &BadMessageError{ID: m.ID, Reason: "trailing data after the JSON object"}
	}
	if err := m.Validate(); err != nil {
		return m, err
	}
	return m, nil
}

// EncodeMessage returns the JSON encoding of m, with V set to MessageVersion
// when it was zero. It does not escape <, > and & (json.Marshal would write
// each as six bytes: a tool result of markup would triple in size and no
// longer fit a queue message).
func EncodeMessage(m Message) ([]byte, error) {
	if m.V == 0 {
		m.V = MessageVersion
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
