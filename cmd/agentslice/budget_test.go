package main

import (
	"encoding/json"
	"testing"

	"github.com/agentslice/agentslice/client"
)

func TestBudgetLine(t *testing.T) {
	for _, tc := range []struct{ js, want string }{
		{`{"spent":{"tokens":0,"usd":0}}`, ""},
		{`{"spent":{"tokens":1200,"usd":0.0123},"limit":{"tokens":5000}}`, "spent 1200 tokens, $0.0123 of 5000 tokens"},
		{`{"spent":{"tokens":100,"usd":0.001},"waiting":"tree","tree":{"root":"r1","limit":{"usd":0.5},"spent":{"tokens":9000,"usd":0.5},"reserved":{"tokens":0,"usd":0}}}`,
			"spent 100 tokens, $0.0010; tree r1 spent 9000 tokens, $0.5000 of $0.5; waiting for a person to raise the tree budget"},
	} {
		var b client.Budget
		if err := json.Unmarshal([]byte(tc.js), &b); err != nil {
			t.Fatal(err)
		}
		if got := budgetLine(&b); got != tc.want {
			t.Errorf("budgetLine(%s)\n got %q\nwant %q", tc.js, got, tc.want)
		}
	}
}
