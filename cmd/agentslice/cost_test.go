package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/cost"
)

func runCostArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut strings.Builder
	err := runCost(context.Background(), args, &out, &errOut)
	return out.String(), err
}

func TestCostFlagsFileAndSources(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "w.json")
	if err := os.WriteFile(wf, []byte(`{"agents": 300, "turns_per_agent_per_day": 7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The flag wins over the file for agents; the file sets the turns.
	out, err := runCostArgs(t, "-workload", wf, "-agents", "50", "-long-sleeps-per-turn", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# agentslice cost: 50 agents x 7 turns per agent per day",
		"agents                         50         flag -agents",
		"turns_per_agent_per_day        7          file " + wf,
		"long_sleeps_per_turn           1          flag -long-sleeps-per-turn",
		"EventBridge Scheduler  $0.00100 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCostMeasuredAndPrices(t *testing.T) {
	dir := t.TempDir()
	sf, df, pf := filepath.Join(dir, "storage.json"), filepath.Join(dir, "density.json"), filepath.Join(dir, "prices.json")
	write := func(name, body string) {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(sf, `{"Threads":200,"Turns":2,"Slices":800,"LoadsPerSlice":1,"CommitsPerSlice":1,"SeenPerSlice":0,"MarksPerSlice":1,"PGRoundTripsPerSlice":2.05,"DynamoRoundTripsPerSlice":2,`+
		`"DSQL":{"ReadBytesPerLoad":1232.56,"RowsPerCommit":3.75,"WriteBytesPerCommit":1034.16,"ThreadRowBytes":400.875,"ThreadIDBytes":7.45,"ItemBodyBytesPerTurn":1155.59,"IODPUsPerSlice":0.060712}}`)
	write(df, `{"profile":"unique","agents":2000,"turns":20,"history_bytes_per_agent_raw":57000,"conventional_bytes_per_waiting_agent":60000,"conventional_agents_measured":2000}`)
	write(pf, `{"region":"eu-west-1","date":"2027-01-01","lambda_arm64_gb_second":0.00002}`)
	out, err := runCostArgs(t, "-storage-result", sf, "-density-result", df, "-prices", pf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"sql_round_trips_per_slice      2.05       measured: " + sf,
		"dsql_thread_row_bytes          400.9      measured: " + sf,
		"conventional_bytes_per_agent   60000      measured: " + df,
		"history_bytes_per_turn         2850       measured: " + df,
		"prices (USD, eu-west-1, recorded 2027-01-01, file " + pf,
		"lambda_arm64_gb_second         2e-05",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "NOT CONFIRMED") {
		t.Errorf("a user's prices file is marked as the built-in table's unconfirmed figures:\n%s", out)
	}

	write(sf, `{"Threads":200,"Turns":2,"Slices":800,"LoadsPerSlice":1,"CommitsPerSlice":2,"MarksPerSlice":1,"PGRoundTripsPerSlice":3,"DynamoRoundTripsPerSlice":2}`)
	if _, err := runCostArgs(t, "-storage-result", sf); err == nil || !strings.Contains(err.Error(), "commits per slice: measured 2.000") {
		t.Errorf("a storage result the model disagrees with: %v", err)
	}
}

func TestCostErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"agnets": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-agents", "0"}, "agents: 0"},
		{[]string{"-agents", "2.5"}, "agents: 2.5 is not a whole number"},
		{[]string{"-tool-calls-per-turn", "-1"}, "tool_calls_per_turn: -1 is below 0"},
		{[]string{"-agents", "many"}, `invalid value "many" for flag -agents`},
		{[]string{"-workload", bad}, `unknown field "agnets"`},
		{[]string{"-prices", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		if _, err := runCostArgs(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cost %v: %v, want an error containing %q", c.args, err, c.want)
		}
	}
}

// The built-in table printed as JSON loads back as the same table.
func TestCostPrintPricesRoundTrips(t *testing.T) {
	out, err := runCostArgs(t, "-print-prices")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cost.LoadPrices(strings.NewReader(out), "printed")
	if err != nil {
		t.Fatal(err)
	}
	want := cost.DefaultPrices()
	if !reflect.DeepEqual(p, want) {
		t.Errorf("printed table loads as %+v, want %+v", p, want)
	}
}
