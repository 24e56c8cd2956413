package main

import (
	"testing"

	"github.com/agentslice/agentslice/client"
)

// TestFormatShowsFailures: a failed thread says why in tail's state lines
// and in its failure event (issue 27: failures are visible from the
// command line too, after a reload as live).
func TestFormatShowsFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ev   client.Event
		want string
	}{
		{client.Event{Kind: "state", State: &client.StateChange{Status: "failed", Reason: "the model failed: HTTP 400"}}, "state: failed (the model failed: HTTP 400)"},
		{client.Event{Kind: "state", State: &client.StateChange{Status: "idle"}}, "state: idle"},
		{client.Event{Kind: "failed", Text: "the model failed after 4 attempts: overloaded"}, "failed: the model failed after 4 attempts: overloaded"},
	} {
		if got, ok := formatEvent(tc.ev, false); !ok || got != tc.want {
			t.Errorf("formatEvent(%+v) = %q, %v; want %q", tc.ev, got, ok, tc.want)
		}
	}
}

// TestFormatViews: tail shows a running command's view as its output
// lines and its end as its status; another view as its type and content.
func TestFormatViews(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text, want string
	}{
		{`{"view_type":"sandbox_command","content":{"command_id":"c1","state":"running","output":"a\nb\n"}}`, "output c1:\n  a\n  b"},
		{`{"view_type":"sandbox_command","content":{"command_id":"c1","state":"exited","status":"exit code 2","output":"c\n"}}`,
			"output c1:\n  c\n  command c1 exited: exit code 2"},
		{`{"view_type":"diff","content":{"patch":"x"}}`, `view diff: {"patch":"x"}`},
		{`not json`, "view: not json"},
	} {
		if got, ok := formatEvent(client.Event{Kind: "view", Text: tc.text}, false); !ok || got != tc.want {
			t.Errorf("formatEvent(view %s) = %q; want %q", tc.text, got, tc.want)
		}
	}
}
