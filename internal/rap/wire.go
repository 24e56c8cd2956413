package rap

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
)

// Limits on what this package accepts from the outside.
const (
	MaxNameLen      = 128
	MaxToolsetBytes = 4 << 20 // a toolset document
	MaxCallbackBody = 1 << 20 // one callback body
	MaxIDLen        = 256     // thread and call IDs
	maxURLLen       = 8 << 10 // callback, auth and response URLs
	maxTextBytes    = 900 << 10
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

// Annotations are hints about a tool. Custom keys must start with "x-" and
// are kept verbatim in Custom.
type Annotations struct {
	RequiresAuth bool                       `json:"requiresAuth,omitempty"`
	ReadOnly     bool                       `json:"readOnly,omitempty"`
	Destructive  bool                       `json:"destructive,omitempty"`
	Idempotent   bool                       `json:"idempotent,omitempty"`
	LongRunning  bool                       `json:"longRunning,omitempty"`
	Custom       map[string]json.RawMessage `json:"-"`
}

var annotationKeys = map[string]bool{
	"requiresAuth": true, "readOnly": true, "destructive": true, "idempotent": true, "longRunning": true,
}

// UnmarshalJSON decodes annotations, refusing unknown keys that do not start
// with "x-" and non-boolean values for the known ones.
func (a *Annotations) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fieldErr("", "annotations must be an object: %v", err)
	}
	*a = Annotations{}
	for k, v := range raw {
		if !annotationKeys[k] {
			if len(k) < 3 || k[:2] != "x-" {
				return fieldErr(k, "unknown annotation (custom annotations must start with \"x-\")")
			}
			if a.Custom == nil {
				a.Custom = map[string]json.RawMessage{}
			}
			a.Custom[k] = v
			continue
		}
		var flag bool
		if err := json.Unmarshal(v, &flag); err != nil {
			return fieldErr(k, "must be a boolean")
		}
		switch k {
		case "requiresAuth":
			a.RequiresAuth = flag
		case "readOnly":
			a.ReadOnly = flag
		case "destructive":
			a.Destructive = flag
		case "idempotent":
			a.Idempotent = flag
		case "longRunning":
			a.LongRunning = flag
		}
	}
	return nil
}

// MarshalJSON encodes the known flags that are set and the custom keys.
func (a Annotations) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(a.Custom)+5)
	for k, v := range a.Custom {
		m[k] = v
	}
	for k, v := range map[string]bool{"requiresAuth": a.RequiresAuth, "readOnly": a.ReadOnly,
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

func validName(s string) bool {
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
