package rapkit

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// CallbackType is the "type" of a body a tool POSTs to its callback URL.
type CallbackType string

// The callback types RAP defines.
const (
	TypeToolResult        CallbackType = "tool_result"
	TypeSubscriptionEvent CallbackType = "subscription_event"
	TypeOAuth             CallbackType = "oauth"
	TypeUserChoice        CallbackType = "user_choice"
	TypeViewUpdate        CallbackType = "view_update"
)

// ContentItem is one part of a tool result: {type:"text",text} or
// {type:"image",data(base64),mediaType}.
type ContentItem struct {
	Type      string `json:"type"` // "text" or "image"
	Text      string `json:"text,omitempty"`
	Data      string `json:"data,omitempty"` // base64, images only
	MediaType string `json:"mediaType,omitempty"`
}

// DisplaySegment is one entry of a result's display_as: for UIs only, the
// model never sees it. Content is a string for "text" and an object for
// "diff" ({path, patch}) and "image" ({data, mediaType}). Segments of types
// this runtime does not know, or whose content does not have the shape of
// their type, are skipped when rendering, never refused (see
// ToolResult.Display).
type DisplaySegment struct {
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content,omitempty"`
}

// UnmarshalJSON decodes a segment leniently: anything that is not an object
// with a string type becomes a segment of no type, which rendering skips.
func (d *DisplaySegment) UnmarshalJSON(b []byte) error {
	var raw struct {
		Type    json.RawMessage `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	*d = DisplaySegment{}
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	_ = json.Unmarshal(raw.Type, &d.Type) // a non-string type stays ""
	d.Content = raw.Content
	return nil
}

// DisplaySegments is a result's display_as: a list of segments. It is a
// presentation hint, so a malformed one never turns the result into an
// error: a single segment object sent instead of a list is read as a list
// of one, and any other value that is not a list is ignored (the receiver
// logs both; the model gets the result's text either way).
type DisplaySegments []DisplaySegment

// UnmarshalJSON decodes display_as leniently (see DisplaySegments).
func (s *DisplaySegments) UnmarshalJSON(b []byte) error {
	*s = nil
	switch t := bytes.TrimLeft(b, " \t\r\n"); {
	case len(t) > 0 && t[0] == '[':
		var segs []DisplaySegment
		if json.Unmarshal(t, &segs) == nil {
			*s = segs
		}
	case len(t) > 0 && t[0] == '{':
		var seg DisplaySegment
		_ = seg.UnmarshalJSON(t) // never fails: a bad segment renders as nothing
		*s = DisplaySegments{seg}
	}
	return nil
}

// TextSegment returns a "text" display segment.
func TextSegment(text string) DisplaySegment {
	b, _ := json.Marshal(text)
	return DisplaySegment{Type: "text", Content: b}
}

// DiffSegment returns a "diff" display segment of a unified diff of path.
func DiffSegment(path, patch string) DisplaySegment {
	b, _ := json.Marshal(struct {
		Path  string `json:"path"`
		Patch string `json:"patch"`
	}{path, patch})
	return DisplaySegment{Type: "diff", Content: b}
}

// ImageSegment returns an "image" display segment (data is base64).
func ImageSegment(data, mediaType string) DisplaySegment {
	b, _ := json.Marshal(struct {
		Data      string `json:"data"`
		MediaType string `json:"mediaType"`
	}{data, mediaType})
	return DisplaySegment{Type: "image", Content: b}
}

// Display is the one display segment a UI should render for a result, flat:
// Text for "text", Path and Patch for "diff", Data and MediaType for "image".
type Display struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	Path      string `json:"path,omitempty"`
	Patch     string `json:"patch,omitempty"`
	Data      string `json:"data,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
}

// Render returns the segment as a Display when its type is known and its
// content has that type's shape.
func (d DisplaySegment) Render() (Display, bool) {
	out := Display{Type: d.Type}
	switch d.Type {
	case "text":
		if json.Unmarshal(d.Content, &out.Text) != nil || out.Text == "" {
			return Display{}, false
		}
	case "diff":
		var c struct {
			Path  string `json:"path"`
			Patch string `json:"patch"`
		}
		if json.Unmarshal(d.Content, &c) != nil || c.Patch == "" {
			return Display{}, false
		}
		out.Path, out.Patch = c.Path, c.Patch
	case "image":
		var c struct {
			Data      string `json:"data"`
			MediaType string `json:"mediaType"`
		}
		if json.Unmarshal(d.Content, &c) != nil || checkImage("", c.Data, c.MediaType) != nil {
			return Display{}, false
		}
		out.Data, out.MediaType = c.Data, c.MediaType
	default:
		return Display{}, false
	}
	return out, true
}

// Display returns the first display_as segment this runtime can render
// (the spec's rendering rule); false when there is none and a UI should show
// the result's text.
func (r *ToolResult) Display() (Display, bool) {
	for _, d := range r.DisplayAs {
		if out, ok := d.Render(); ok {
			return out, true
		}
	}
	return Display{}, false
}

// ToolResult is the result of an invocation. Content wins over Text.
type ToolResult struct {
	Type      CallbackType    `json:"type"`
	GroupID   string          `json:"group_id"`
	ID        string          `json:"id"`
	CallID    *string         `json:"call_id,omitempty"`
	Text      *string         `json:"text,omitempty"`
	Content   []ContentItem   `json:"content,omitempty"`
	DisplayAs DisplaySegments `json:"display_as,omitempty"`
	// Subscription says the call started a subscription: events follow.
	Subscription bool `json:"subscription,omitempty"`
}

// SubscriptionEvent is one event of a subscription started by ToolCallID.
type SubscriptionEvent struct {
	Type        CallbackType `json:"type"`
	GroupID     string       `json:"group_id"`
	ToolCallID  string       `json:"tool_call_id"`
	Text        *string      `json:"text,omitempty"`
	Associative bool         `json:"associative,omitempty"`
	Final       bool         `json:"final,omitempty"`
	// EventID is an agentslice extension: a tool that sets it gets exact
	// deduplication of retried POSTs. Without it, two events with the same
	// text, flags and subscription are treated as one.
	EventID string `json:"event_id,omitempty"`
}

// OAuth asks the user to authorize at AuthURL; the call stays pending.
type OAuth struct {
	Type    CallbackType `json:"type"`
	GroupID string       `json:"group_id"`
	ID      string       `json:"id"`
	CallID  *string      `json:"call_id,omitempty"`
	AuthURL string       `json:"auth_url"`
}

// UserChoice asks the user to pick one of Choices; the answer is POSTed to
// ResponseURL as a ChoiceResponse (see PostChoice).
type UserChoice struct {
	Type        CallbackType `json:"type"`
	GroupID     string       `json:"group_id"`
	ID          string       `json:"id"`
	CallID      *string      `json:"call_id,omitempty"`
	Prompt      string       `json:"prompt"`
	Choices     []string     `json:"choices"`
	Default     *int         `json:"default"`
	ResponseURL string       `json:"response_url"`
}

// ViewUpdate replaces the thread's view of ViewType with Content (opaque).
type ViewUpdate struct {
	Type     CallbackType    `json:"type"`
	GroupID  string          `json:"group_id"`
	ViewType string          `json:"view_type"`
	Content  json.RawMessage `json:"content"`
}

// Callback is one decoded, validated callback body: exactly one of the
// pointers is set, matching Type.
type Callback struct {
	Type              CallbackType
	ToolResult        *ToolResult
	SubscriptionEvent *SubscriptionEvent
	OAuth             *OAuth
	UserChoice        *UserChoice
	ViewUpdate        *ViewUpdate
}

// GroupID returns the thread the body claims to belong to.
func (c *Callback) GroupID() string {
	switch c.Type {
	case TypeToolResult:
		return c.ToolResult.GroupID
	case TypeSubscriptionEvent:
		return c.SubscriptionEvent.GroupID
	case TypeOAuth:
		return c.OAuth.GroupID
	case TypeUserChoice:
		return c.UserChoice.GroupID
	case TypeViewUpdate:
		return c.ViewUpdate.GroupID
	}
	return ""
}

// CallRef returns the tool call the body refers to and the JSON field that
// names it; "" for a view_update, which belongs to the thread only.
func (c *Callback) CallRef() (callID, field string) {
	switch c.Type {
	case TypeToolResult:
		return c.ToolResult.ID, "id"
	case TypeSubscriptionEvent:
		return c.SubscriptionEvent.ToolCallID, "tool_call_id"
	case TypeOAuth:
		return c.OAuth.ID, "id"
	case TypeUserChoice:
		return c.UserChoice.ID, "id"
	}
	return "", ""
}

// DecodeCallback parses and validates one callback body. Errors are
// *FieldError values naming the field at fault. Unknown fields are ignored.
func DecodeCallback(b []byte) (*Callback, error) {
	if len(b) > MaxCallbackBody {
		return nil, fieldErr("", "body is %d bytes, more than the limit of %d", len(b), MaxCallbackBody)
	}
	var head struct {
		Type *string `json:"type"`
	}
	if err := decodeStrict(b, &head); err != nil {
		return nil, err
	}
	if head.Type == nil {
		return nil, fieldErr("type", "missing")
	}
	c := &Callback{Type: CallbackType(*head.Type)}
	var err error
	switch c.Type {
	case TypeToolResult:
		c.ToolResult = new(ToolResult)
		if err = decodeStrict(b, c.ToolResult); err == nil {
			err = c.ToolResult.validate()
		}
	case TypeSubscriptionEvent:
		c.SubscriptionEvent = new(SubscriptionEvent)
		if err = decodeStrict(b, c.SubscriptionEvent); err == nil {
			err = c.SubscriptionEvent.validate()
		}
	case TypeOAuth:
		c.OAuth = new(OAuth)
		if err = decodeStrict(b, c.OAuth); err == nil {
			err = c.OAuth.validate()
		}
	case TypeUserChoice:
		c.UserChoice = new(UserChoice)
		if err = decodeStrict(b, c.UserChoice); err == nil {
			err = c.UserChoice.validate()
		}
	case TypeViewUpdate:
		c.ViewUpdate = new(ViewUpdate)
		if err = decodeStrict(b, c.ViewUpdate); err == nil {
			err = c.ViewUpdate.validate()
		}
	default:
		return nil, fieldErr("type", "unknown callback type %.64q (want tool_result, subscription_event, oauth, user_choice or view_update)", *head.Type)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (r *ToolResult) validate() error {
	if err := checkID("group_id", r.GroupID); err != nil {
		return err
	}
	if err := checkID("id", r.ID); err != nil {
		return err
	}
	if err := checkOptID("call_id", r.CallID); err != nil {
		return err
	}
	if r.Text == nil && len(r.Content) == 0 {
		return fieldErr("text", "missing (a tool_result needs text or a non-empty content)")
	}
	for i, c := range r.Content {
		if err := checkContent(fmt.Sprintf("content[%d]", i), c); err != nil {
			return err
		}
	}
	return nil
}

func (e *SubscriptionEvent) validate() error {
	if err := checkID("group_id", e.GroupID); err != nil {
		return err
	}
	if err := checkID("tool_call_id", e.ToolCallID); err != nil {
		return err
	}
	if e.Text == nil && !e.Final {
		return fieldErr("text", "missing (only a final event may omit it)")
	}
	if e.EventID != "" {
		if err := checkID("event_id", e.EventID); err != nil {
			return err
		}
	}
	return nil
}

func (o *OAuth) validate() error {
	if err := checkID("group_id", o.GroupID); err != nil {
		return err
	}
	if err := checkID("id", o.ID); err != nil {
		return err
	}
	if err := checkOptID("call_id", o.CallID); err != nil {
		return err
	}
	return checkHTTPURL("auth_url", o.AuthURL)
}

func (u *UserChoice) validate() error {
	if err := checkID("group_id", u.GroupID); err != nil {
		return err
	}
	if err := checkID("id", u.ID); err != nil {
		return err
	}
	if err := checkOptID("call_id", u.CallID); err != nil {
		return err
	}
	if strings.TrimSpace(u.Prompt) == "" {
		return fieldErr("prompt", "missing")
	}
	if len(u.Prompt) > 64<<10 {
		return fieldErr("prompt", "longer than 64 KiB")
	}
	if len(u.Choices) == 0 {
		return fieldErr("choices", "needs at least one choice")
	}
	if len(u.Choices) > 100 {
		return fieldErr("choices", "%d choices, more than 100", len(u.Choices))
	}
	for i, c := range u.Choices {
		if strings.TrimSpace(c) == "" || len(c) > 4<<10 {
			return fieldErr(fmt.Sprintf("choices[%d]", i), "must be a non-empty string of at most 4 KiB")
		}
	}
	if u.Default == nil {
		return fieldErr("default", "missing")
	}
	if *u.Default < 0 || *u.Default >= len(u.Choices) {
		return fieldErr("default", "index %d is out of range for %d choices", *u.Default, len(u.Choices))
	}
	return checkHTTPURL("response_url", u.ResponseURL)
}

func (v *ViewUpdate) validate() error {
	if err := checkID("group_id", v.GroupID); err != nil {
		return err
	}
	if v.ViewType == "" || len(v.ViewType) > MaxNameLen {
		return fieldErr("view_type", "must be 1..%d bytes", MaxNameLen)
	}
	if err := checkID("view_type", v.ViewType); err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	if len(v.Content) == 0 || json.Unmarshal(v.Content, &obj) != nil || obj == nil {
		return fieldErr("content", "must be a JSON object")
	}
	return nil
}

func checkOptID(field string, id *string) error {
	if id == nil {
		return nil
	}
	if len(*id) > MaxIDLen {
		return fieldErr(field, "%d bytes long, more than %d", len(*id), MaxIDLen)
	}
	return nil
}

func checkContent(field string, c ContentItem) error {
	switch c.Type {
	case "text":
		return nil
	case "image":
		return checkImage(field, c.Data, c.MediaType)
	case "":
		return fieldErr(field+".type", "missing")
	}
	return fieldErr(field+".type", "unknown content type %.32q (want text or image)", c.Type)
}

func checkImage(field, data, mediaType string) error {
	if data == "" {
		return fieldErr(field+".data", "missing")
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil {
		return fieldErr(field+".data", "not valid base64: %v", err)
	}
	if !strings.HasPrefix(mediaType, "image/") || len(mediaType) > 100 {
		return fieldErr(field+".mediaType", "must be an image media type such as image/png, got %.100q", mediaType)
	}
	return nil
}

func checkHTTPURL(field, s string) error {
	if s == "" {
		return fieldErr(field, "missing")
	}
	if len(s) > maxURLLen {
		return fieldErr(field, "longer than %d bytes", maxURLLen)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fieldErr(field, "must be an absolute http(s) URL")
	}
	if !utf8.ValidString(s) {
		return fieldErr(field, "not valid UTF-8")
	}
	return nil
}
