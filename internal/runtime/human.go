package runtime

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// What people see of a thread is history like everything else: a
// user_choice a tool asks, the answer a person gives, a tool's views and
// the display segment of a tool result are marker items (nothing for the
// model), each committed with the message that brought it, on every store
// and through every restart. A server reads them back from the thread's
// items (PendingChoice, LatestViews); no store keeps them apart.
const (
	// ChoiceMarkerName names the marker of a user_choice notice; Args is
	// the choice as the tool sent it (Message.Choice), CallID the call.
	ChoiceMarkerName = "user_choice"
	// AnswerMarkerName names the marker of a person's answer to it; Args
	// is {"id", "selected"}.
	AnswerMarkerName = "user_choice_answer"
	// ViewMarkerName names the marker of a view_update; Args is
	// {"view_type", "content"}. The latest per view type is the view.
	ViewMarkerName = "view_update"
	// DisplayMarkerName names the marker that comes right before a tool
	// result (or before a late result's synthetic event), in its commit,
	// carrying its display_as segment; Args is the segment, CallID the
	// original call. Before, so that a result stays the last item.
	DisplayMarkerName = "display_as"
)

// validateHuman checks the fields people's state travels in.
func (m *Message) validateHuman() error {
	bad := func(field, format string, args ...any) error {
		return &BadMessageError{ID: m.ID, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if m.Choice != "" {
		if m.Kind != KindNotice && m.Kind != KindAnswer {
			return bad("choice", "only a notice or an answer carries a choice (kind %s)", m.Kind)
		}
		if !jsonObject(m.Choice) {
			return bad("choice", "not a JSON object")
		}
	}
	if m.Kind == KindAnswer {
		if m.Choice == "" {
			return bad("choice", "missing: the answer {\"id\", \"selected\"}")
		}
		if sel := gjson.Get(m.Choice, "selected"); sel.Type != gjson.Number {
			return bad("choice", "the answer needs a numeric \"selected\"")
		}
	}
	if m.Display != "" {
		if m.Kind != KindToolResult {
			return bad("display", "only a tool result carries a display segment (kind %s)", m.Kind)
		}
		if !jsonObject(m.Display) {
			return bad("display", "not a JSON object")
		}
	}
	if m.Kind == KindView {
		if !jsonObject(m.Text) {
			return bad("text", "a view is a JSON object {\"view_type\", \"content\"}")
		}
		if vt := gjson.Get(m.Text, "view_type"); vt.Type != gjson.String || vt.Str == "" {
			return bad("text", "a view needs a non-empty string \"view_type\"")
		}
	}
	return nil
}

// foldView keeps a view_update in history and tells the output of it (an
// event of kind "view", Text {"view_type", "content"}), as a notice is
// told: a deployment's output queue is all its readers see. (serve tells
// views from history and drops this one, see server.Broadcaster.)
func (s *slice) foldView(m Message) {
	vt := gjson.Get(m.Text, "view_type").Str
	s.appendItem(Item{Kind: ItemMarker, Input: m.ID, CallID: m.ToolCallID, Name: ViewMarkerName, Args: m.Text,
		Text: "view " + vt + " updated"})
	s.addOutbox(OutboxEntry{Output: &OutputEvent{
		ID: DeriveID("out_", s.threadID, m.ID), ThreadID: s.threadID, Kind: "view", Text: m.Text}})
}

// displayMarker is the marker that keeps a result's display segment; it
// has the result's time.
func displayMarker(callID, display string, at Stamp) Item {
	return Item{Kind: ItemMarker, At: at, CallID: callID, Name: DisplayMarkerName, Args: display, Text: "display segment"}
}

// PendingChoice returns the Args of the user_choice waiting for an answer
// on call among items (a thread's view): its choice marker, when no answer
// marker follows it. It reads back from the end and stops at the call.
func PendingChoice(items []Item, call string) (choice string, ok bool) {
	if call == "" {
		return "", false
	}
	for i := len(items) - 1; i >= 0; i-- {
		it := &items[i]
		if it.CallID != call {
			continue
		}
		switch {
		case it.Kind == ItemToolCall:
			return "", false
		case it.Kind == ItemMarker && it.Name == AnswerMarkerName:
			return "", false
		case it.Kind == ItemMarker && it.Name == ChoiceMarkerName:
			return it.Args, true
		}
	}
	return "", false
}

// LatestViews returns the latest view marker of each view type among
// items, by view type.
func LatestViews(items []Item) map[string]*Item {
	out := map[string]*Item{}
	for i := len(items) - 1; i >= 0; i-- {
		it := &items[i]
		if it.Kind != ItemMarker || it.Name != ViewMarkerName {
			continue
		}
		vt := gjson.Get(it.Args, "view_type").Str
		if _, seen := out[vt]; !seen {
			out[vt] = it
		}
	}
	return out
}
