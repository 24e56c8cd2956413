package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentslice/agentslice/client"
)

// Conversation is what the screen shows of a thread, built only from its
// event stream: Apply folds one event in. It holds no network code and
// no terminal code.
type Conversation struct {
	Entries []Entry
	calls   map[string]int // call ID -> index in Entries
	live    int            // index of the streaming assistant entry, or -1
	liveID  string         // its completion ID
	// seen holds the IDs of the history events applied ({thread}#{pos}):
	// a stream resumed from its cursor, or one that sent an event ahead of
	// its commit, never shows it twice.
	seen map[string]bool
}

// EntryKind says what an entry of the conversation is.
type EntryKind int

// The kinds of entries.
const (
	EntryUser EntryKind = iota
	EntryAssistant
	EntryTool
	EntryNote  // markers: stopped, switched, spawned, answered...
	EntryError // an error or a failed completion
)

// choiceNoticePrefix begins the notice the runtime sends with a
// user_choice (package rap's choiceText).
const choiceNoticePrefix = "The tool asks you to choose: "

// maxOutputLines bounds the live output kept per tool call.
const maxOutputLines = 200

// Entry is one block of the conversation.
type Entry struct {
	Kind EntryKind
	Text string
	// Streaming is set on assistant text still arriving as deltas.
	Streaming bool
	// Tool call fields.
	CallID, Tool, Args, Result string
	Done, IsError              bool
	Output                     []string // live output (a command's views, or subscription events)
	Expanded                   bool
	// A command followed by its views (cmdview.go): Viewed once one came,
	// its state ("running", "exited"), its exit status and its log.
	Viewed                bool
	ViewState, ViewStatus string
	Log                   string
	viewBytes             int64 // the output's bytes shown so far
	partial               bool  // the last output line has no newline yet
	subscribed            bool  // the thread held a subscription for the call when last read
}

// NewConversation returns an empty conversation.
func NewConversation() *Conversation {
	return &Conversation{calls: map[string]int{}, live: -1, seen: map[string]bool{}}
}

// Apply folds one event into the conversation.
func (c *Conversation) Apply(ev client.Event) {
	if strings.Contains(ev.ID, "#") && ev.Kind != "state" {
		if c.seen[ev.ID] {
			return
		}
		c.seen[ev.ID] = true
	}
	switch ev.Kind {
	case "message":
		c.endLive()
		c.add(Entry{Kind: EntryUser, Text: ev.Text})
	case "delta":
		if c.live < 0 || ev.CompletionID != c.liveID {
			c.endLive()
			c.live = c.add(Entry{Kind: EntryAssistant, Streaming: true})
			c.liveID = ev.CompletionID
		} else if ev.Index == 0 { // the completion restarted: its text too
			c.Entries[c.live].Text = ""
		}
		c.Entries[c.live].Text += ev.Text
	case "turn":
		if c.live >= 0 {
			e := &c.Entries[c.live]
			e.Text, e.Streaming = ev.Text, false
			if strings.TrimSpace(ev.Text) == "" {
				c.Entries = c.Entries[:c.live] // a turn that only calls tools
				c.reindex()
			}
			c.live = -1
		} else if strings.TrimSpace(ev.Text) != "" {
			c.add(Entry{Kind: EntryAssistant, Text: ev.Text})
		}
	case "tool_call", "sleep":
		c.endLive()
		if _, ok := c.calls[ev.CallID]; ok && ev.CallID != "" {
			return
		}
		i := c.add(Entry{Kind: EntryTool, CallID: ev.CallID, Tool: ev.Tool, Args: ev.Args})
		if ev.CallID != "" {
			c.calls[ev.CallID] = i
		}
	case "tool_result", "wake", "late_result":
		if e := c.call(ev.CallID, ev.Tool); e != nil {
			e.Result, e.IsError, e.Done = ev.Text, ev.IsError, true
			return
		}
		if ev.Kind == "late_result" {
			c.add(Entry{Kind: EntryNote, Text: fmt.Sprintf("late result of %s: %s", ev.Tool, ev.Text)})
		}
	case "view":
		c.applyView(ev.Text)
	case "subscription_event":
		if e := c.call(ev.CallID, ev.Tool); e != nil && ev.Child == "" {
			if e.Viewed { // the views show the output: an event is what the model was told
				e.Result = ev.Text
				return
			}
			for _, l := range strings.Split(strings.TrimRight(ev.Text, "\n"), "\n") {
				e.Output = append(e.Output, l)
			}
			if n := len(e.Output); n > maxOutputLines {
				e.Output = append([]string(nil), e.Output[n-maxOutputLines:]...)
			}
		}
	case "choice_answered":
		c.add(Entry{Kind: EntryNote, Text: "answered: " + answerText(ev)})
	case "child_spawned":
		c.add(Entry{Kind: EntryNote, Text: "started child thread " + ev.Child})
	case "child_report":
		c.add(Entry{Kind: EntryNote, Text: fmt.Sprintf("child %s reported: %s", ev.Child, ev.Text)})
	case "notice":
		// The runtime's text form of a user_choice, for clients that have
		// no choice box: this one shows the choice itself.
		if strings.HasPrefix(ev.Text, choiceNoticePrefix) {
			return
		}
		c.add(Entry{Kind: EntryNote, Text: ev.Text})
	case "oauth":
		c.add(Entry{Kind: EntryNote, Text: "the tool asks you to authorize: " + ev.Text})
	case "stopped", "closed", "model_switched", "agent_switched", "agent_version", "compaction":
		c.endLive()
		text := ev.Kind
		if ev.Text != "" {
			text = ev.Kind + ": " + ev.Text
		}
		c.add(Entry{Kind: EntryNote, Text: strings.ReplaceAll(text, "_", " ")})
	case "error", "failed", "dead_letter":
		c.endLive()
		c.add(Entry{Kind: EntryError, Text: strings.ReplaceAll(ev.Kind, "_", " ") + ": " + ev.Text})
	case "reset":
		*c = *NewConversation()
	}
}

// answerText is what a choice_answered event says was chosen.
func answerText(ev client.Event) string {
	if ev.Text != "" {
		return ev.Text
	}
	var a struct {
		Selected int `json:"selected"`
	}
	if json.Unmarshal([]byte(ev.Args), &a) == nil {
		return fmt.Sprintf("choice %d", a.Selected)
	}
	return "a choice"
}

func (c *Conversation) add(e Entry) int {
	c.Entries = append(c.Entries, e)
	return len(c.Entries) - 1
}

// endLive ends a streaming entry whose turn never came (the completion
// was stopped or failed): what arrived stays, marked as cut.
func (c *Conversation) endLive() {
	if c.live < 0 {
		return
	}
	e := &c.Entries[c.live]
	e.Streaming = false
	if strings.TrimSpace(e.Text) == "" {
		c.Entries = c.Entries[:c.live]
		c.reindex()
	} else {
		e.Text += " [cut]"
	}
	c.live = -1
}

func (c *Conversation) reindex() {
	c.calls = map[string]int{}
	for i, e := range c.Entries {
		if e.Kind == EntryTool && e.CallID != "" {
			c.calls[e.CallID] = i
		}
	}
}

// call finds the tool entry of a call ID (or, without one, the latest
// pending call of the tool).
func (c *Conversation) call(id, tool string) *Entry {
	if i, ok := c.calls[id]; ok && id != "" {
		return &c.Entries[i]
	}
	for i := len(c.Entries) - 1; i >= 0; i-- {
		if e := &c.Entries[i]; e.Kind == EntryTool && !e.Done && (tool == "" || e.Tool == tool) {
			return e
		}
	}
	return nil
}

// Pending returns the tool calls without a result.
func (c *Conversation) Pending() []*Entry {
	var out []*Entry
	for i := range c.Entries {
		if e := &c.Entries[i]; e.Kind == EntryTool && !e.Done {
			out = append(out, e)
		}
	}
	return out
}

// Tools returns the indexes of the tool entries, in order.
func (c *Conversation) Tools() []int {
	var out []int
	for i, e := range c.Entries {
		if e.Kind == EntryTool {
			out = append(out, i)
		}
	}
	return out
}

// Streaming reports whether assistant text is arriving.
func (c *Conversation) Streaming() bool { return c.live >= 0 }

// ToolStatus is the one word a folded tool call shows: running, waiting
// (on a person, or a sleep), done or failed.
func ToolStatus(e *Entry, threadStatus string, choice *client.Choice) string {
	if st, ok := commandStatus(e); ok {
		return st
	}
	switch {
	case e.Done && e.IsError:
		return "failed"
	case e.Done:
		return "done"
	case choice != nil && choice.CallID == e.CallID, e.Tool == "sleep", threadStatus == "sleeping":
		return "waiting"
	}
	return "running"
}
