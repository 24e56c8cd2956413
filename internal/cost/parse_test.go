package cost

import (
	"strings"
	"testing"
)

func TestLoadPricesOverlays(t *testing.T) {
	p, err := LoadPrices(strings.NewReader(`{"region":"eu-west-1","dsql_gb_month":0.4,"instances":[{"name":"x","memory_gib":2,"hourly_usd":0.01}]}`), "file p.json")
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultPrices()
	if p.Region != "eu-west-1" || p.DSQLGBMonth != 0.4 || p.Source != "file p.json" {
		t.Errorf("overlaid fields: %+v", p)
	}
	if p.LambdaGBSecond != d.LambdaGBSecond || p.DSQLMillionDPUs != d.DSQLMillionDPUs {
		t.Errorf("fields left out lost their built-in values: %+v", p)
	}
	if len(p.Instances) != 1 || p.Instances[0].Name != "x" {
		t.Errorf("instances not replaced: %+v", p.Instances)
	}
}

func TestLoadPricesErrorsNameTheField(t *testing.T) {
	for in, want := range map[string]string{
		`{"dsql_gb_mnth":0.4}`:              `unknown field "dsql_gb_mnth"`,
		`{"sqs_fifo_million_requests":"x"}`: "sqs_fifo_million_requests: want a float64, got a JSON string",
		`{"logs_ingest_gb":-1}`:             "logs_ingest_gb: -1 is not a price",
		`{"instances":[]}`:                  "instances: the always-on comparison needs at least one instance",
		`{"instances":[{"name":"a","memory_gib":1,"hourly_usd":-2}]}`: "instances[0].hourly_usd: -2",
		`{"instances":[{"memory_gib":1}]}`:                            "instances[0].name: empty",
		`{} {}`:                                                       "trailing data",
		`[1]`:                                                         "cannot unmarshal array",
	} {
		_, err := LoadPrices(strings.NewReader(in), "file p.json")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "p.json") {
			t.Errorf("LoadPrices(%s): %v, want an error naming p.json and containing %q", in, err, want)
		}
	}
}

func TestDecodeWorkload(t *testing.T) {
	w := DefaultWorkload()
	src := DefaultSources(&w)
	err := DecodeWorkload(strings.NewReader(`{"agents": 500, "long_sleeps_per_turn": 2}`), "file w.json", &w, src)
	if err != nil {
		t.Fatal(err)
	}
	if w.Agents != 500 || w.LongSleepsPerTurn != 2 || w.TurnsPerAgentPerDay != DefaultWorkload().TurnsPerAgentPerDay {
		t.Errorf("workload = %+v", w)
	}
	if src["agents"] != "file w.json" || src["long_sleeps_per_turn"] != "file w.json" || !strings.HasPrefix(src["turns_per_agent_per_day"], "default") {
		t.Errorf("sources = %v", src)
	}
	for in, want := range map[string]string{
		`{"agent": 5}`:          `unknown field "agent"`,
		`{"agents": "many"}`:    "agents: want a float64, got a JSON string",
		`null`:                  "want a JSON object",
		`{"agents": 5} junk`:    "trailing data",
		`{"history_turns": []}`: "history_turns: want a float64, got a JSON array",
	} {
		w := DefaultWorkload()
		err := DecodeWorkload(strings.NewReader(in), "file w.json", &w, DefaultSources(&w))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "w.json") {
			t.Errorf("DecodeWorkload(%s): %v, want an error naming w.json and containing %q", in, err, want)
		}
	}
}

func TestMeasuredResults(t *testing.T) {
	w := DefaultWorkload()
	src := DefaultSources(&w)
	m, err := ReadDensity(strings.NewReader(`{"profile":"unique","agents":2000,"turns":20,"history_bytes_per_agent_raw":57200,
		"conventional_bytes_per_waiting_agent":61000,"conventional_agents_measured":2000,"other":1}`), "d.json")
	if err != nil {
		t.Fatal(err)
	}
	ApplyDensity(&w, src, m, "d.json")
	if w.ConventionalBytesPerAgent != 61000 || w.HistoryBytesPerTurn != 2860 {
		t.Errorf("density applied: %v, %v", w.ConventionalBytesPerAgent, w.HistoryBytesPerTurn)
	}
	if !strings.HasPrefix(src["conventional_bytes_per_agent"], "measured: d.json") {
		t.Errorf("source = %q", src["conventional_bytes_per_agent"])
	}
	if _, err := ReadDensity(strings.NewReader(`{"profile":"unique","turns":20,"history_bytes_per_agent_raw":5}`), "d.json"); err == nil ||
		!strings.Contains(err.Error(), "conventional_bytes_per_waiting_agent is missing") {
		t.Errorf("density without the baseline: %v", err)
	}

	s, err := ReadStorage(strings.NewReader(`{"Threads":200,"Turns":2,"Slices":800,"LoadsPerSlice":1,"CommitsPerSlice":1,
		"SeenPerSlice":0,"MarksPerSlice":1,"PGRoundTripsPerSlice":2.07875,"DynamoRoundTripsPerSlice":2,
		"DSQL":{"ReadBytesPerLoad":1224,"RowsPerCommit":3.75,"WriteBytesPerCommit":1028.76,"ThreadRowBytes":399,"ThreadIDBytes":6.75,
		"ItemBodyBytesPerTurn":1152.14,"IODPUsPerSlice":0.06057}}`), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyStorage(&w, src, s, "s.json"); err != nil {
		t.Fatal(err)
	}
	if w.SQLRoundTripsPerSlice != 2.07875 || w.DynamoWritesPerSlice != 2 || w.DSQLThreadRowBytes != 399 || !strings.Contains(src["sql_round_trips_per_slice"], "800 slices") {
		t.Errorf("storage applied: %v %v %q", w.SQLRoundTripsPerSlice, w.DynamoWritesPerSlice, src["sql_round_trips_per_slice"])
	}
	s.CommitsPerSlice = 2
	w2 := DefaultWorkload()
	if err := ApplyStorage(&w2, DefaultSources(&w2), s, "s.json"); err == nil || w2.SQLRoundTripsPerSlice != DefaultWorkload().SQLRoundTripsPerSlice {
		t.Errorf("a disagreeing result was applied (err %v)", err)
	}
	if _, err := ReadStorage(strings.NewReader(`{"Threads":1}`), "s.json"); err == nil || !strings.Contains(err.Error(), "not a storage load test result") {
		t.Errorf("empty storage result: %v", err)
	}
}
