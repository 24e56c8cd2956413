package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentslice/agentslice/internal/runtime"
)

// This file turns a thread's history into provider-neutral turns that both
// providers map to their wire formats. It owns the rules the two share:
//
//   - marker items carry nothing for the model and are skipped;
//   - a summary becomes user text that says what it is;
//   - assistant text and the tool calls after it form one assistant turn;
//   - the results of those calls form one tool turn right after it;
//   - a result whose call is not the open one (never seen, or separated
//     from it by another turn) becomes user text, and a call left without a
//     result before the conversation moves on gets an error result, so the
//     providers never see a dangling or orphan tool block (both reject one);
//   - reasoning is sent back only as the blocks a provider recorded with
//     the turn (Item.Trace: signed text, redacted data), unchanged and
//     first in the assistant turn, as Claude's extended thinking with tools
//     requires; reasoning text without them is not sent (Bedrock rejects
//     unsigned reasoning), and chat completions take none.
//
// receive_event__injected calls are mapped like any other call.

type role uint8

const (
	roleUser role = iota + 1
	roleAssistant
	roleTool // tool results; Bedrock sends them in a user message
)

type partKind uint8

const (
	partText      partKind = iota + 1
	partImage              // user-side image (Content of a user item)
	partCall               // assistant tool call
	partResult             // tool result
	partReasoning          // a recorded reasoning block (assistant)
)

type part struct {
	kind    partKind
	text    string
	image   runtime.Content
	callID  string // calls and results
	name    string // calls and results
	args    string // calls: JSON arguments, "{}" when empty
	isError bool   // results
	// content of a result: its text first, then its parts; never empty.
	content []runtime.Content
	// reasoning is a partReasoning's block.
	reasoning runtime.ReasoningBlock
}

type turn struct {
	role  role
	parts []part
}

// Texts the mapping adds; tests pin them.
const (
	summaryPrefix   = "Summary of the conversation so far:\n\n"
	noOutputText    = "(no output)"
	missingResult   = "error: no result was recorded for this call"
	orphanResultFmt = "Result of an earlier call to %s (%s):"
)

// normalize maps history to turns. The first turn may be an assistant turn;
// providers that need a user turn first add one.
func normalize(history []runtime.Item) []turn {
	var n normalizer
	for i := range history {
		n.item(&history[i])
	}
	n.closeOpen()
	return n.turns
}

type normalizer struct {
	turns []turn
	// open lists the calls of the latest assistant turn still waiting for
	// their results, in order.
	open []part
}

func (n *normalizer) add(r role, p part) {
	if k := len(n.turns); k > 0 && n.turns[k-1].role == r {
		n.turns[k-1].parts = append(n.turns[k-1].parts, p)
		return
	}
	n.turns = append(n.turns, turn{role: r, parts: []part{p}})
}

// closeOpen gives every open call an error result.
func (n *normalizer) closeOpen() {
	for _, c := range n.open {
		n.add(roleTool, part{kind: partResult, callID: c.callID, name: c.name, isError: true,
			content: []runtime.Content{{Type: "text", Text: missingResult}}})
	}
	n.open = nil
}

func (n *normalizer) item(it *runtime.Item) {
	switch it.Kind {
	case runtime.ItemMarker:
		return
	case runtime.ItemToolResult:
		n.result(it)
		return
	case runtime.ItemToolCall:
		// Calls of one assistant turn stay open together.
		if k := len(n.turns); k == 0 || n.turns[k-1].role != roleAssistant {
			n.closeOpen()
		}
	default:
		n.closeOpen()
	}
	switch it.Kind {
	case runtime.ItemUser:
		n.userContent(it.Text, it.Content)
	case runtime.ItemSummary:
		n.add(roleUser, part{kind: partText, text: summaryPrefix + it.Text})
	case runtime.ItemAssistant:
		if it.Trace != nil {
			for _, b := range it.Trace.Blocks {
				n.add(roleAssistant, part{kind: partReasoning, reasoning: b})
			}
		}
		if it.Text != "" {
			n.add(roleAssistant, part{kind: partText, text: it.Text})
		}
	case runtime.ItemToolCall:
		args := it.Args
		if args == "" {
			args = "{}"
		}
		p := part{kind: partCall, callID: it.CallID, name: it.Name, args: args}
		n.add(roleAssistant, p)
		n.open = append(n.open, p)
	}
}

func (n *normalizer) userContent(text string, content []runtime.Content) {
	if text != "" {
		n.add(roleUser, part{kind: partText, text: text})
	}
	for _, c := range content {
		switch c.Type {
		case "image":
			n.add(roleUser, part{kind: partImage, image: c})
		default:
			if c.Text != "" {
				n.add(roleUser, part{kind: partText, text: c.Text})
			}
		}
	}
}

func (n *normalizer) result(it *runtime.Item) {
	content := resultContent(it)
	for i, c := range n.open {
		if c.callID != it.CallID {
			continue
		}
		n.open = append(n.open[:i:i], n.open[i+1:]...)
		n.add(roleTool, part{kind: partResult, callID: it.CallID, name: c.name, isError: it.IsError, content: content})
		return
	}
	// An orphan: no open call to attach it to.
	n.closeOpen()
	name := it.Name
	if name == "" {
		name = "a tool"
	}
	n.add(roleUser, part{kind: partText, text: fmt.Sprintf(orphanResultFmt, name, it.CallID)})
	n.userContent("", content)
}

func resultContent(it *runtime.Item) []runtime.Content {
	var out []runtime.Content
	if it.Text != "" {
		out = append(out, runtime.Content{Type: "text", Text: it.Text})
	}
	for _, c := range it.Content {
		if c.Type == "text" && c.Text == "" {
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		out = append(out, runtime.Content{Type: "text", Text: noOutputText})
	}
	return out
}

// wireCallID returns id when every provider accepts it as a tool call ID
// (Bedrock: [a-zA-Z0-9_-]{1,64}; OpenAI: at most 40 characters), otherwise a
// stable stand-in derived from it, so a call and its result still match.
func wireCallID(id string) string {
	ok := len(id) > 0 && len(id) <= 40
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	if ok {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "h_" + hex.EncodeToString(sum[:16])
}

// imagePlaceholder is the text that replaces an image a model cannot take.
func imagePlaceholder(c runtime.Content, reason string) string {
	mt := c.MediaType
	if mt == "" {
		mt = "unknown type"
	}
	return fmt.Sprintf("[image omitted (%s, %d bytes of base64): %s]", mt, len(c.Data), reason)
}

// checkImage decodes an image part. It returns a non-empty reason when the
// image cannot be sent (the model takes no images, an unsupported type, bad
// base64) and a placeholder must stand in for it. Both providers accept PNG,
// JPEG, GIF and WebP.
func checkImage(c runtime.Content, images bool) (data []byte, format string, reason string) {
	if !images {
		return nil, "", reasonNoImages
	}
	switch strings.ToLower(c.MediaType) {
	case "image/png":
		format = "png"
	case "image/jpeg", "image/jpg":
		format = "jpeg"
	case "image/gif":
		format = "gif"
	case "image/webp":
		format = "webp"
	default:
		return nil, "", reasonBadFormat
	}
	b, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil || len(b) == 0 {
		return nil, "", reasonBadData
	}
	return b, format, ""
}

// Reasons given in image placeholders.
const (
	reasonNoImages  = "this model does not accept images"
	reasonBadFormat = "this image type is not supported"
	reasonBadData   = "the image data is not valid base64"
)

// Descriptions of tools that appear in history but are not offered.
const (
	injectedToolDescription = "Events delivered by the runtime (subscription events, reports from child threads, late tool results) " +
		"appear in the conversation as calls to this tool. Do not call it."
	retiredToolDescription = "This tool is no longer available; it only appears in earlier turns. Do not call it."
)

// historyOnlyTools returns specs for the tools the turns call that req.Tools
// does not offer, in order of first use.
func historyOnlyTools(turns []turn, offered []runtime.ToolSpec) []runtime.ToolSpec {
	have := make(map[string]bool, len(offered))
	for _, t := range offered {
		have[t.Name] = true
	}
	var out []runtime.ToolSpec
	for _, t := range turns {
		for _, p := range t.parts {
			if p.kind != partCall || have[p.name] {
				continue
			}
			have[p.name] = true
			desc := retiredToolDescription
			if p.name == runtime.InjectedToolName {
				desc = injectedToolDescription
			}
			out = append(out, runtime.ToolSpec{Name: p.name, Description: desc, InputSchema: []byte(`{"type":"object"}`)})
		}
	}
	return out
}

// schemaObject decodes a tool's input schema, which must be a JSON object;
// an empty schema stands for any object.
func schemaObject(s runtime.ToolSpec) (map[string]any, error) {
	if len(bytes.TrimSpace(s.InputSchema)) == 0 {
		return map[string]any{"type": "object"}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.InputSchema))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
		return nil, fmt.Errorf("tool %q: input schema is not a JSON object", s.Name)
	}
	return m, nil
}
