// Package tools holds example RAP tools built with the public kit (package rapkit): get_time
// (timezone-aware clock) and run_command (runs a command and streams its
// output as associative subscription events). Serve them with rapkit.NewServer.
//
// The package must not reach into the runtime: tools talk to it only through
// the kit's *rapkit.Call (their callback URL).
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	_ "time/tzdata" // time zones without relying on the host's zoneinfo

	"github.com/agentslice/agentslice/rapkit"
)

// GetTime returns the get_time tool: the current time in an IANA time zone
// (UTC by default). now is the clock; time.Now when nil.
func GetTime(now func() time.Time) rapkit.Tool {
	if now == nil {
		now = time.Now
	}
	return rapkit.Tool{
		Name:        "get_time",
		Description: "Returns the current date and time in a time zone.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"timezone": {"type": "string", "minLength": 1, "maxLength": 64,
					"description": "IANA time zone name such as Europe/Paris or America/New_York; default UTC"}
			},
			"additionalProperties": false
		}`),
		Annotations: &rapkit.Annotations{ReadOnly: true, Idempotent: true},
		Run: func(ctx context.Context, c *rapkit.Call) error {
			var a struct {
				Timezone string `json:"timezone"`
			}
			if err := c.Args(&a); err != nil {
				return err
			}
			if a.Timezone == "" {
				a.Timezone = "UTC"
			}
			loc, err := time.LoadLocation(a.Timezone)
			if err != nil {
				return c.Result(ctx, fmt.Sprintf("error: unknown time zone %q (use an IANA name such as Europe/Paris)", a.Timezone))
			}
			return c.Result(ctx, FormatTime(now().In(loc), a.Timezone))
		},
	}
}

// FormatTime renders t the way get_time reports it.
func FormatTime(t time.Time, zone string) string {
	name, _ := t.Zone()
	return fmt.Sprintf("%s (%s, %s, %s)", t.Format(time.RFC3339), t.Weekday(), zone, name)
}
