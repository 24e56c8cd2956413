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
