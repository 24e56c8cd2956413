package rap

import (
	"fmt"
	"unicode/utf8"

	"github.com/agentslice/agentslice/internal/runtime"
)

// What happens to a result too large for a queue message.
//
// A callback body may be up to MaxCallbackBody (4 MiB), but one queue
// message carries at most runtime.MaxMessageBytes of payload (SQS: 1 MiB
// per message, envelope included). Queue bodies are JSON without HTML
// escaping, so markup costs one byte per byte; quotes, backslashes and
// control characters still cost two to six, and characters outside the
// Basic Multilingual Plane twelve (sqsq escapes them as surrogate pairs).
//
// A tool_result or subscription_event whose payload, so encoded, exceeds
// the budget is truncated, never dropped: text is cut at a character
// boundary, image items that no longer fit are replaced by a text
// placeholder, and a note telling the model what was cut and how large the
// result was is appended. The message ID does not change, so a retried POST
// of the same body is still deduplicated. If the queue refuses even that
// (its own limit is lower), the receiver halves the budget and tries again
// (fitAttempts times), and finally delivers a short error result instead;
// the tool is answered 413 then. Nothing is ever left pending because of
// size.

// fitBudget is the encoded payload size a message is fitted to first: the
// runtime's payload limit less room for the truncation note.
const fitBudget = runtime.MaxMessageBytes - 2<<10

// fitAttempts bounds how often a message refused by the queue for its size
// is fitted again with half the budget.
const fitAttempts = 4

// encodedLen returns how many bytes s takes inside a JSON string as the
// queues encode it (no HTML escaping; non-BMP characters as \u surrogate
// pairs, as sqsq writes them).
func encodedLen(s string) int {
	n := 0
	for _, r := range s {
		n += runeCost(r)
	}
	return n
}

func runeCost(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 2
	case r < 0x20 || r == 0x2028 || r == 0x2029 || r == 0xFFFE || r == 0xFFFF || r == utf8.RuneError:
		return 6
	case r > 0xFFFF:
		return 12
	}
	return utf8.RuneLen(r)
}

// prefixWithin returns the longest prefix of s whose encoded length is at
// most budget.
func prefixWithin(s string, budget int) string {
	n := 0
	for i, r := range s {
		c := runeCost(r)
		if n+c > budget {
			return s[:i]
		}
		n += c
	}
	return s
}

// payloadLen is the encoded size of what m carries for the model.
func payloadLen(m *runtime.Message) int {
	n := encodedLen(m.Text)
	for _, c := range m.Content {
		n += encodedLen(c.Text) + len(c.Data) + len(c.MediaType) + 32
	}
	return n
}

// fitMessage truncates m's text and content so that their encoded size is
// at most budget, appending a note for the model. It reports whether it
// changed anything.
func fitMessage(m *runtime.Message, budget int) bool {
	total := payloadLen(m)
	if total <= budget {
		return false
	}
	note := fmt.Sprintf("\n\n[agentslice: this result was %d bytes, too large to deliver whole; only the beginning is shown above. "+
		"If you need the rest, ask the tool for less at a time (a narrower query, a smaller page).]", total)
	left := budget - encodedLen(note)
	if left < 0 {
		left = 0
	}
	if len(m.Content) == 0 {
		m.Text = prefixWithin(m.Text, left) + note
		return true
	}
	out := make([]runtime.Content, 0, len(m.Content)+1)
	for _, c := range m.Content {
		switch c.Type {
		case "image":
			if cost := len(c.Data) + len(c.MediaType) + 32; cost <= left {
				out = append(out, c)
				left -= cost
				continue
			}
			ph := "[image omitted: too large to deliver]"
			if encodedLen(ph) <= left {
				out = append(out, runtime.Content{Type: "text", Text: ph})
				left -= encodedLen(ph) + 32
			}
		default:
			t := prefixWithin(c.Text, left-32)
			if t != "" {
				out = append(out, runtime.Content{Type: "text", Text: t})
				left -= encodedLen(t) + 32
			}
		}
		if left <= 32 {
			break
		}
	}
	m.Content = append(out, runtime.Content{Type: "text", Text: note})
	return true
}
