package runtime

import (
	"fmt"
	"math"
	"time"
)

// ItemKind says what a history Item holds.
type ItemKind uint8

// The history item kinds.
const (
	ItemUser       ItemKind = iota + 1 // text from the user or a parent thread
	ItemAssistant                      // assistant text and reasoning
	ItemToolCall                       // an assistant tool call (CallID, Name, Args)
	ItemToolResult                     // the one result of a tool call (CallID)
	ItemMarker                         // a consumed input with nothing for the model (a continuation, a switch, what people see: human.go)
	ItemSummary                        // a compaction summary standing for everything before it
)

var itemKindNames = [...]string{"", "user", "assistant", "tool_call", "tool_result", "marker", "summary"}

func (k ItemKind) String() string {
	if int(k) < len(itemKindNames) && k != 0 {
		return itemKindNames[k]
	}
	return fmt.Sprintf("ItemKind(%d)", k)
}

// MarshalText encodes the kind by name.
func (k ItemKind) MarshalText() ([]byte, error) {
	if k == 0 || int(k) >= len(itemKindNames) {
		return nil, fmt.Errorf("runtime: unknown item kind %d", k)
	}
	return []byte(itemKindNames[k]), nil
}

// UnmarshalText decodes a kind name.
func (k *ItemKind) UnmarshalText(b []byte) error {
	for i, n := range itemKindNames {
		if i > 0 && n == string(b) {
			*k = ItemKind(i)
			return nil
		}
	}
	return fmt.Errorf("runtime: unknown item kind %q", b)
}

// InjectedToolName is the reserved tool name under which synthetic events
// enter history. It is never offered to a model.
const InjectedToolName = "receive_event__injected"

// Stamp is a point in time as history keeps it: milliseconds since the
// Unix epoch, UTC; 0 means "not recorded". Eight bytes and no pointer in
// an item, a small varint delta in the stores' binary forms; its JSON form
// is an RFC 3339 string with milliseconds ("2026-03-28T12:00:00.000Z").
type Stamp int64

// StampOf returns t as a Stamp.
func StampOf(t time.Time) Stamp { return Stamp(t.UnixMilli()) }

// Time returns the stamp as a UTC time (the zero time for 0).
func (s Stamp) Time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(s)).UTC()
}

const stampLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON writes the stamp as an RFC 3339 string (null for 0).
func (s Stamp) MarshalJSON() ([]byte, error) {
	if s == 0 {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(stampLayout)+2)
	b = append(b, '"')
	b = s.Time().AppendFormat(b, stampLayout)
	return append(b, '"'), nil
}

// UnmarshalJSON reads an RFC 3339 string or null.
func (s *Stamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = 0
		return nil
	}
	var t time.Time
	if err := t.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("runtime: time %s is not an RFC 3339 string: %w", b, err)
	}
	*s = StampOf(t)
	return nil
}

// Millis returns d in whole milliseconds as an Item.Took (0 for a
// negative d, saturating at about 49 days).
func Millis(d time.Duration) uint32 {
	ms := d.Milliseconds()
	switch {
	case ms <= 0:
		return 0
	case ms > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(ms)
}

// Usage is the token accounting of one completion.
type Usage struct {
	Input  int `json:"input,omitempty"`
	Output int `json:"output,omitempty"`
	Cached int `json:"cached,omitempty"` // input tokens read from the provider's prompt cache
	// CacheWrite is the input tokens written to the provider's prompt cache.
	CacheWrite int `json:"cache_write,omitempty"`
	Total      int `json:"total,omitempty"`
}

// Add adds u's counts to the receiver's.
func (a *Usage) Add(u Usage) {
	a.Input += u.Input
	a.Output += u.Output
	a.Cached += u.Cached
	a.CacheWrite += u.CacheWrite
	a.Total += u.Total
}

// Item is one entry of a thread's history. The JSON encoding is the stable,
// versioned form used in golden files and by stores that keep JSON.
type Item struct {
	Kind ItemKind `json:"kind"`
	// IsError sits beside Kind so that the two share one word and At
	// costs the item nothing in memory (152 bytes, as before items had
	// times: a thawed history's item slice stays in its size class).
	IsError bool `json:"is_error,omitempty"`
	// Took is a duration in milliseconds, in the word Kind and IsError
	// leave free (it costs an item no memory), kept for time accounting
	// (internal/timeline); 0 when not recorded (items written before it
	// existed), what it times depends on the item:
	//   - an item that consumed a message (Input set): how long the
	//     message was queued, from its arrival (At) to the start of the
	//     slice that consumed it;
	//   - the first item a completion appended (its assistant item, else
	//     its tool call): how long the completion took, retries included;
	//   - a synchronous tool's result: how long the tool ran.
	Took uint32 `json:"took,omitempty"`
	// At is when the item entered history: the time of the commit that
	// wrote it, except for an item that consumed a message stamped with
	// its arrival (Message.At: a tool result, a user message, a notice),
	// which carries that arrival. A tool call's commit is the one that
	// records it for dispatch, which follows at once. 0 in items written
	// before items had times.
	At Stamp `json:"at,omitempty"`
	// Input is the ID of the message this item consumed, if any. It is how a
	// redelivered message is recognised from history alone.
	Input     string    `json:"input,omitempty"`
	Text      string    `json:"text,omitempty"`
	Reasoning string    `json:"reasoning,omitempty"`
	CallID    string    `json:"call_id,omitempty"`
	Name      string    `json:"name,omitempty"` // tool name (tool calls and results)
	Args      string    `json:"args,omitempty"` // JSON arguments of a tool call
	Content   []Content `json:"content,omitempty"`
	Usage     *Usage    `json:"usage,omitempty"`
	// Trace is reasoning the provider must get back unchanged in later
	// requests (signed or redacted blocks); rare, hence a pointer.
	Trace *ReasoningTrace `json:"reasoning_trace,omitempty"`
}

// ReasoningTrace is a turn's reasoning as the provider streamed it, block by
// block, for providers that verify it when it is sent back (Claude extended
// thinking with tool use rejects a next turn without it).
type ReasoningTrace struct {
	Blocks []ReasoningBlock `json:"blocks"`
}

// ReasoningBlock is one reasoning block: text with its signature, or
// redacted (encrypted) reasoning, kept as the provider sent it.
type ReasoningBlock struct {
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	// Redacted is the opaque data of a redacted block, base64.
	Redacted string `json:"redacted,omitempty"`
}

// Size is the approximate number of bytes the item's payload occupies, used
// for per-transaction caps and accounting.
func (it *Item) Size() int {
	n := len(it.Input) + len(it.Text) + len(it.Reasoning) + len(it.CallID) + len(it.Name) + len(it.Args)
	for _, c := range it.Content {
		n += len(c.Type) + len(c.Text) + len(c.Data) + len(c.MediaType)
	}
	if it.Trace != nil {
		for _, b := range it.Trace.Blocks {
			n += len(b.Text) + len(b.Signature) + len(b.Redacted)
		}
	}
	return n + 16
}

// SyntheticCallPrefix starts the call IDs of synthetic events.
const SyntheticCallPrefix = "evt_"

// IsSynthetic reports whether it is part of a synthetic event (the runtime's
// injected call or its result), as opposed to a call the model made.
func IsSynthetic(it *Item) bool {
	return it.Name == InjectedToolName && len(it.CallID) > len(SyntheticCallPrefix) && it.CallID[:len(SyntheticCallPrefix)] == SyntheticCallPrefix
}
