package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// A running command's live output reaches the screen as the sandbox's
// view_updates (view type commandViewType, one per output batch, display
// only while the command runs) and its end as the view's last update
// (state "exited", with the status). The TUI knows this view type by its
// wire form only: it imports no tool package.

// commandViewType is the sandbox's view type for a command
// (sandbox.ViewType).
const commandViewType = "sandbox_command"

// commandView is its content (sandbox.CommandView).
type commandView struct {
	CommandID string `json:"command_id"`
	Command   string `json:"command"`
	State     string `json:"state"`
	Status    string `json:"status"`
	Output    string `json:"output"`
	Offset    int64  `json:"offset"`
	Bytes     int64  `json:"bytes"`
	Log       string `json:"log"`
}

// liveTailLines is how many lines of a running command's output show
// under its folded line.
const liveTailLines = 4

// applyView folds a "view" event's text ({"view_type", "content"}) into
// the tool entry of the command it belongs to. Views of other types, or
// of a command this conversation does not show, are ignored.
func (c *Conversation) applyView(text string) {
	var v struct {
		ViewType string          `json:"view_type"`
		Content  json.RawMessage `json:"content"`
	}
	if json.Unmarshal([]byte(text), &v) != nil || v.ViewType != commandViewType {
		return
	}
	var cv commandView
	if json.Unmarshal(v.Content, &cv) != nil || cv.CommandID == "" {
		return
	}
	i, ok := c.calls[cv.CommandID]
	if !ok {
		return
	}
	c.Entries[i].applyCommand(cv)
}

// applyCommand appends a batch of the command's output: the bytes after
// those already shown (a view may come twice: live, then as history keeps
// it), with a note where bytes were skipped (a batch carries only its
// newest bytes; the log has them all).
func (e *Entry) applyCommand(cv commandView) {
	e.Viewed = true
	if cv.Log != "" {
		e.Log = cv.Log
	}
	end := cv.Offset + int64(len(cv.Output))
	if cv.State == "exited" || (e.ViewState != "exited" && e.ViewState != stateEnded) {
		e.ViewState, e.ViewStatus = cv.State, cv.Status
	}
	if end <= e.viewBytes {
		return
	}
	out := cv.Output
	if cv.Offset < e.viewBytes {
		out = out[e.viewBytes-cv.Offset:]
	} else if cv.Offset > e.viewBytes {
		e.partial = false
		e.Output = append(e.Output, fmt.Sprintf("… %d bytes not shown (the full log: %s)", cv.Offset-e.viewBytes, e.Log))
	}
	e.viewBytes = end
	lines := strings.Split(out, "\n")
	if e.partial && len(e.Output) > 0 { // the last line went on
		e.Output[len(e.Output)-1] += lines[0]
		lines = lines[1:]
	}
	e.partial = !strings.HasSuffix(out, "\n")
	if !e.partial {
		lines = lines[:len(lines)-1] // after the last newline: nothing
	}
	for i, l := range lines {
		lines[i] = terminalLine(l)
	}
	e.Output = append(e.Output, lines...)
	if n := len(e.Output); n > maxOutputLines {
		e.Output = append([]string(nil), e.Output[n-maxOutputLines:]...)
	}
}

// stateEnded is the state of a command whose subscription ended without
// its last view: it was cancelled, or its thread stopped.
const stateEnded = "ended"

// SetSubscriptions tells the conversation the calls the thread holds a
// subscription for (the thread's state): a running command whose call
// held one and no longer does ended without saying so (cancelled, the
// thread stopped), and shows so instead of running for ever.
func (c *Conversation) SetSubscriptions(calls []string) {
	held := map[string]bool{}
	for _, id := range calls {
		held[id] = true
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.Kind != EntryTool || e.CallID == "" {
			continue
		}
		switch {
		case held[e.CallID]:
			e.subscribed = true
		case e.subscribed:
			e.subscribed = false
			if e.Viewed && e.ViewState == "running" {
				e.ViewState, e.ViewStatus = stateEnded, "ended without its exit status (cancelled or stopped)"
			}
		}
	}
}

// commandStatus is the status word of a command the views follow: running
// until its view says it exited, then done or failed by its exit status.
func commandStatus(e *Entry) (string, bool) {
	switch {
	case !e.Viewed || e.IsError:
		return "", false
	case e.ViewState == "running":
		return "running", true
	case e.ViewState == "exited" && e.ViewStatus == "exit code 0":
		return "done", true
	case e.ViewState == "exited":
		return "failed", true
	case e.ViewState == stateEnded:
		return "done", true
	}
	return "", false
}

// terminalLine is a line of a command's output as a terminal would leave
// it: a carriage return starts it over (progress bars), escape sequences
// and other control characters are dropped, so the output cannot move the
// cursor or change the screen.
func terminalLine(l string) string {
	l = ansi.Strip(l)
	if i := strings.LastIndexByte(strings.TrimRight(l, "\r"), '\r'); i >= 0 {
		l = l[i+1:]
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, l)
}
