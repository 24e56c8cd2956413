package rap

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentslice/agentslice/rapkit"
)

// The wire types, toolset and callback validation, schema compilation,
// callback posting and the tool-server kit live in the public package
// rapkit (so tool servers outside this module can use them); these aliases
// keep this package's names for the code that uses them here.

// Paths a tool server answers and the limits on what is accepted.
const (
	ToolsetPath        = rapkit.ToolsetPath
	CloseThreadPath    = rapkit.CloseThreadPath
	CancelToolCallPath = rapkit.CancelToolCallPath
	MigratePath        = rapkit.MigratePath
	ToolCallStatusPath = rapkit.ToolCallStatusPath
	InvokePath         = rapkit.InvokePath
	MaxNameLen         = rapkit.MaxNameLen
	MaxToolsetBytes    = rapkit.MaxToolsetBytes
	MaxCallbackBody    = rapkit.MaxCallbackBody
	MaxIDLen           = rapkit.MaxIDLen
)

// The callback types RAP defines.
const (
	TypeToolResult        = rapkit.TypeToolResult
	TypeSubscriptionEvent = rapkit.TypeSubscriptionEvent
	TypeOAuth             = rapkit.TypeOAuth
	TypeUserChoice        = rapkit.TypeUserChoice
	TypeViewUpdate        = rapkit.TypeViewUpdate
)

// Wire types (see rapkit).
type (
	FieldError             = rapkit.FieldError
	Toolset                = rapkit.Toolset
	ToolDef                = rapkit.ToolDef
	Annotations            = rapkit.Annotations
	Invocation             = rapkit.Invocation
	CloseThread            = rapkit.CloseThread
	CancelToolCall         = rapkit.CancelToolCall
	ToolCallStatus         = rapkit.ToolCallStatus
	ToolCallStatusResponse = rapkit.ToolCallStatusResponse
	Migrate                = rapkit.Migrate
	ChoiceResponse         = rapkit.ChoiceResponse
	CallbackType           = rapkit.CallbackType
	ContentItem            = rapkit.ContentItem
	DisplaySegment         = rapkit.DisplaySegment
	DisplaySegments        = rapkit.DisplaySegments
	Display                = rapkit.Display
	ToolResult             = rapkit.ToolResult
	SubscriptionEvent      = rapkit.SubscriptionEvent
	OAuth                  = rapkit.OAuth
	UserChoice             = rapkit.UserChoice
	ViewUpdate             = rapkit.ViewUpdate
	Callback               = rapkit.Callback
	Schema                 = rapkit.Schema
	RetryPolicy            = rapkit.RetryPolicy
	StatusError            = rapkit.StatusError
	ServerError            = rapkit.ServerError
	UnavailableError       = rapkit.UnavailableError
)

// The tool-server kit (see rapkit).
type (
	Tool         = rapkit.Tool
	ServerConfig = rapkit.ServerConfig
	Server       = rapkit.Server
	Call         = rapkit.Call
)

// NewServer is rapkit.NewServer.
func NewServer(cfg ServerConfig) (*Server, error) { return rapkit.NewServer(cfg) }

// DecodeToolset is rapkit.DecodeToolset.
func DecodeToolset(b []byte) (*Toolset, []*Schema, error) { return rapkit.DecodeToolset(b) }

// DecodeCallback is rapkit.DecodeCallback.
func DecodeCallback(b []byte) (*Callback, error) { return rapkit.DecodeCallback(b) }

// CompileSchema is rapkit.CompileSchema.
func CompileSchema(raw json.RawMessage) (*Schema, error) { return rapkit.CompileSchema(raw) }

// PostChoice is rapkit.PostChoice.
func PostChoice(ctx context.Context, client *http.Client, responseURL, id string, selected int, policy RetryPolicy) error {
	return rapkit.PostChoice(ctx, client, responseURL, id, selected, policy)
}

// TextSegment is rapkit.TextSegment.
func TextSegment(text string) DisplaySegment { return rapkit.TextSegment(text) }

// DiffSegment is rapkit.DiffSegment.
func DiffSegment(path, patch string) DisplaySegment { return rapkit.DiffSegment(path, patch) }

// ImageSegment is rapkit.ImageSegment.
func ImageSegment(data, mediaType string) DisplaySegment { return rapkit.ImageSegment(data, mediaType) }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// TraceparentHeader is rapkit.TraceparentHeader.
const TraceparentHeader = rapkit.TraceparentHeader

// withTraceparent is rapkit.WithTraceparent.
func withTraceparent(ctx context.Context, tp string) context.Context {
	return rapkit.WithTraceparent(ctx, tp)
}
