package rapkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Paths a tool server answers, relative to its base URL.
const (
	ToolsetPath        = "/.well-known/rap-toolset"
	CloseThreadPath    = "/close_thread"
	CancelToolCallPath = "/cancel_tool_call"
	MigratePath        = "/migrate"
	ToolCallStatusPath = "/tool_call_status"
)

// Limits on what this package accepts from the outside.
const (
	MaxNameLen      = 128
	MaxToolsetBytes = 4 << 20 // a toolset document
	// MaxCallbackBody bounds one callback body. A result larger than a
	// queue message is truncated with a note to the model (see fit.go).
	MaxCallbackBody = 4 << 20
	MaxIDLen        = 256     // thread and call IDs
	maxURLLen       = 8 << 10 // callback, auth and response URLs
)

// FieldError reports a malformed document, naming the JSON field at fault
// (a path such as "tools[2].inputSchema" or "content[0].data").
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return fmt.Sprintf("field %q: %s", e.Field, e.Reason)
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Toolset is the document a tool server serves at ToolsetPath.
type Toolset struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Endpoint is the URL invocations are POSTed to. A relative reference is
	// resolved against the server's base URL by the Loader.
	Endpoint       string    `json:"endpoint"`
	Tools          []ToolDef `json:"tools"`
	NeedsMigration bool      `json:"needsMigration,omitempty"`
}

// ToolDef describes one tool of a toolset.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations *Annotations    `json:"annotations,omitempty"`
	// DisplayScript is passed through for UIs; the runtime does not run it.
	DisplayScript string `json:"displayScript,omitempty"`
}

// Annotations are hints about a tool (informational: they never change how
// a call is dispatched). RequiresAuth names the auth provider the tool may
// start an OAuth flow for. Any other key is accepted and kept verbatim in
// Custom (the spec asks custom keys to be namespaced, e.g. "x-team", but an
// unprefixed one is no reason to refuse a toolset). A known key whose value
// has the wrong type is kept in Custom too and otherwise ignored.
type Annotations struct {
	RequiresAuth string                     `json:"requiresAuth,omitempty"`
	ReadOnly     bool                       `json:"readOnly,omitempty"`
	Destructive  bool                       `json:"destructive,omitempty"`
	Idempotent   bool                       `json:"idempotent,omitempty"`
	LongRunning  bool                       `json:"longRunning,omitempty"`
	Custom       map[string]json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes annotations. Only a non-object refuses them.
func (a *Annotations) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		return fieldErr("", "annotations must be an object")
	}
	*a = Annotations{}
	keep := func(k string, v json.RawMessage) {
		if a.Custom == nil {
			a.Custom = map[string]json.RawMessage{}
		}
		a.Custom[k] = v
	}
	for k, v := range raw {
		var flag *bool
		switch k {
		case "requiresAuth":
			if err := json.Unmarshal(v, &a.RequiresAuth); err != nil {
				keep(k, v)
			}
			continue
		case "readOnly":
			flag = &a.ReadOnly
		case "destructive":
			flag = &a.Destructive
		case "idempotent":
			flag = &a.Idempotent
		case "longRunning":
			flag = &a.LongRunning
		default:
			keep(k, v)
			continue
		}
		if err := json.Unmarshal(v, flag); err != nil {
			keep(k, v)
		}
	}
	return nil
}

// MarshalJSON encodes the known annotations that are set and the custom keys.
func (a Annotations) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(a.Custom)+5)
	for k, v := range a.Custom {
		m[k] = v
	}
	if a.RequiresAuth != "" {
		m["requiresAuth"] = a.RequiresAuth
	}
	for k, v := range map[string]bool{"readOnly": a.ReadOnly,
		"destructive": a.Destructive, "idempotent": a.Idempotent, "longRunning": a.LongRunning} {
		if v {
			m[k] = true
		}
	}
	return json.Marshal(m)
}

// Invocation is the body the runtime POSTs to a toolset's endpoint.
type Invocation struct {
	Operation       string          `json:"operation"`
	Arguments       json.RawMessage `json:"arguments"`
	ID              string          `json:"id"`
	CallID          *string         `json:"call_id"` // null when the model gave none
	CallbackURL     string          `json:"callback_url"`
	GroupID         string          `json:"group_id"`
	ThreadAncestors []string        `json:"thread_ancestors,omitempty"`
	UserID          string          `json:"user_id,omitempty"`
	// Agent is an agentslice extension (RAP's invocation names no agent):
	// the agent definition the calling thread runs as, so a tool server
	// shared by several agents can apply each one's policy (the sandbox
	// toolset's network access). Omitted when the runtime has no agents;
	// a server that does not know the field ignores it.
	Agent *AgentInfo `json:"x-agentslice-agent,omitempty"`
}

// AgentInfo is the x-agentslice-agent field of an Invocation.
type AgentInfo struct {
	Name string `json:"name"`
	// Network is the agent definition's network field ("ask", "allow",
	// "deny"; "" when it sets none).
	Network string `json:"network,omitempty"`
}

// CloseThread is the body of a POST to {base}/close_thread.
type CloseThread struct {
	ThreadID string `json:"thread_id"`
}

// CancelToolCall is the body of a POST to {base}/cancel_tool_call.
type CancelToolCall struct {
	ThreadID   string `json:"thread_id"`
	ToolCallID string `json:"tool_call_id"`
}

// ToolCallStatus is the body of a POST to {base}/tool_call_status: is the
// call (or the subscription it started) still tracked by the server?
type ToolCallStatus struct {
	ThreadID   string `json:"thread_id"`
	ToolCallID string `json:"tool_call_id"`
}

// ToolCallStatusResponse is a tool server's answer to ToolCallStatus.
type ToolCallStatusResponse struct {
	Alive bool `json:"alive"`
}

// Migrate is the body of a POST to {base}/migrate.
type Migrate struct {
	SessionID      string `json:"session_id"`
	DestinationURL string `json:"destination_url"`
}

// ChoiceResponse is what the runtime POSTs to a user_choice's response_url.
type ChoiceResponse struct {
	ID       string `json:"id"`
	Selected int    `json:"selected"`
}

// decodeStrict decodes one JSON value from b into v and refuses trailing
// data and invalid UTF-8. Unknown fields are ignored (tools written for other
// runtimes may send more than RAP defines).
func decodeStrict(b []byte, v any) error {
	if !utf8.Valid(b) {
		return fieldErr("", "body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return jsonFieldErr(err)
	}
	if dec.More() {
		return fieldErr("", "trailing data after the JSON value")
	}
	return nil
}

// jsonFieldErr turns a decoding error into a FieldError naming the field
// when encoding/json knows it.
func jsonFieldErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fieldErr("", "the document must be a JSON object, got JSON %s", te.Value)
		}
		return fieldErr(te.Field, "must be %s, got JSON %s", jsonKind(te.Type.Kind().String()), te.Value)
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe
	}
	return fieldErr("", "malformed JSON: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "int", "int64", "float64":
		return "a number"
	}
	return goKind
}

func checkID(field, id string) error {
	switch {
	case id == "":
		return fieldErr(field, "missing")
	case len(id) > MaxIDLen:
		return fieldErr(field, "%d bytes long, more than %d", len(id), MaxIDLen)
	}
	for _, r := range id {
		if r < 0x21 || r == 0x7f {
			return fieldErr(field, "contains a control or space character")
		}
	}
	return nil
}

// ValidName reports whether s is a valid toolset or tool name: 1..MaxNameLen
// characters of [A-Za-z0-9_-].
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
