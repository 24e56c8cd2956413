package timeline_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/timeline"
)

// t0 is the time the tables' stamps (milliseconds) are relative to.
const t0 = runtime.Stamp(1_790_000_000_000)

func user(at, took int) runtime.Item {
	return runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("u%d", at), Text: "hi", At: t0 + runtime.Stamp(at), Took: uint32(took)}
}

func reply(at, took int) runtime.Item {
	return runtime.Item{Kind: runtime.ItemAssistant, Text: "ok", At: t0 + runtime.Stamp(at), Took: uint32(took)}
}

func callOf(name, id string, at, took int) runtime.Item {
	return runtime.Item{Kind: runtime.ItemToolCall, CallID: id, Name: name, Args: "{}", At: t0 + runtime.Stamp(at), Took: uint32(took)}
}

// result is an asynchronous result (it consumed a message).
func result(id string, at, took int) runtime.Item {
	return runtime.Item{Kind: runtime.ItemToolResult, Input: "r-" + id, CallID: id, Text: "done", At: t0 + runtime.Stamp(at), Took: uint32(took)}
}

// inline is a result made in the slice (a synchronous tool, an interruption).
func inline(id string, at, took int) runtime.Item {
	return runtime.Item{Kind: runtime.ItemToolResult, CallID: id, Text: "done", At: t0 + runtime.Stamp(at), Took: uint32(took)}
}

// iv writes an interval as "cause[/tool] start-end" (ms after t0).
func iv(v timeline.Interval) string {
	c := string(v.Cause)
	if v.Tool != "" {
		c += "/" + v.Tool
	}
	if v.Open {
		c += "(open)"
	}
	return fmt.Sprintf("%s %d-%d", c, v.Start-t0, v.End-t0)
}

func TestOf(t *testing.T) {
	t.Parallel()
	report := runtime.Item{Kind: runtime.ItemToolResult, Input: "rep", CallID: runtime.SyntheticCallPrefix + "x", Name: runtime.InjectedToolName,
		Text: "Report from child thread c: done", At: t0 + 40_000, Took: 100}
	reportCall := runtime.Item{Kind: runtime.ItemToolCall, CallID: runtime.SyntheticCallPrefix + "x", Name: runtime.InjectedToolName, At: t0 + 40_500}
	choice := runtime.Item{Kind: runtime.ItemMarker, Input: "choice_1", CallID: "c1", Name: runtime.ChoiceMarkerName, Args: "{}", At: t0 + 3_000, Took: 50}
	cases := []struct {
		name  string
		items []runtime.Item
		now   int // ms after t0; -1 for none
		want  []string
		wf    float64
		tools string
		queue string
	}{
		{name: "reply", items: []runtime.Item{user(1000, 200), reply(2000, 500)}, now: 5000,
			want:  []string{"queued 1000-1200", "in_slice 1200-1500", "generating 1500-2000", "idle(open) 2000-5000"},
			queue: "0:200"},
		{name: "asynchronous tool", items: []runtime.Item{user(1000, 0), callOf("fetch", "c1", 2000, 800), result("c1", 10_000, 100), reply(11_000, 500)}, now: -1,
			want: []string{"in_slice 1000-1200", "generating 1200-2000", "waiting_tool/fetch 2000-10000", "queued 10000-10100",
				"in_slice 10100-10500", "generating 10500-11000"},
			wf: 0.8, tools: "fetch:8000", queue: "0:0 fetch:100"},
		{name: "a person is asked", items: []runtime.Item{user(1000, 0), callOf("deploy", "c1", 2000, 1000), choice, result("c1", 9_000, 0), reply(9_500, 500)}, now: -1,
			want: []string{"generating 1000-2000", "waiting_tool/deploy 2000-3000", "queued 3000-3050", "waiting_person/deploy 3050-9000", "generating 9000-9500"},
			wf:   6950.0 / 8500, tools: "deploy:7000", queue: "0:0 0:50 deploy:0"},
		{name: "sleep", items: []runtime.Item{user(1000, 0), callOf("sleep", "c1", 1000, 0), result("c1", 61_000, 0), reply(62_000, 1000)}, now: -1,
			want: []string{"sleeping/sleep 1000-61000", "generating 61000-62000"},
			wf:   60.0 / 61, tools: "sleep:60000", queue: "0:0 sleep:0"},
		{name: "interrupted by the user", items: []runtime.Item{user(1000, 0), callOf("fetch", "c1", 2000, 1000), inline("c1", 6000, 0), user(4000, 1000), reply(6000, 500)}, now: 6000,
			want: []string{"generating 1000-2000", "waiting_tool/fetch 2000-4000", "queued 4000-5000", "in_slice 5000-5500", "generating 5500-6000",
				"idle(open) 6000-6000"},
			wf: 2.0 / 5, queue: "0:0 0:1000"},
		{name: "synchronous tool between completions", items: []runtime.Item{user(1000, 0), callOf("calc", "c1", 3000, 400), inline("c1", 3000, 300), reply(3000, 500)}, now: -1,
			want:  []string{"in_slice 1000-1800", "generating 1800-2200", "in_slice/calc 2200-2500", "generating 2500-3000"},
			tools: "calc:300", queue: "0:0"},
		{name: "waiting for a child", items: []runtime.Item{user(1000, 0), callOf("spawn_thread", "c1", 2000, 1000), inline("c1", 2000, 0),
			callOf("sleep_until_event_or_input", "c2", 2000, 0), reportCall, report, reply(41_000, 400)}, now: -1,
			want: []string{"generating 1000-2000", "waiting_children 2000-40000", "queued 40000-40100", "in_slice 40100-40600", "generating 40600-41000"},
			wf:   38.0 / 40, tools: "spawn_thread:0", queue: "0:0 0:100"},
		// Asked in the millisecond of the last commit: the thread waits,
		// and its wait has only begun.
		{name: "asked as the turn ends", items: []runtime.Item{user(1000, 200), reply(2000, 500)}, now: 2000,
			want:  []string{"queued 1000-1200", "in_slice 1200-1500", "generating 1500-2000", "idle(open) 2000-2000"},
			queue: "0:200"},
		{name: "asked while a call is out", items: []runtime.Item{user(1000, 0), callOf("fetch", "c1", 2000, 800)}, now: 2000,
			want: []string{"in_slice 1000-1200", "generating 1200-2000", "waiting_tool/fetch(open) 2000-2000"}, queue: "0:0"},
		{name: "items without times", items: []runtime.Item{{Kind: runtime.ItemUser, Input: "u", Text: "hi"}, {Kind: runtime.ItemAssistant, Text: "ok"}}, now: 5000},
		{name: "items without durations", items: []runtime.Item{
			{Kind: runtime.ItemUser, Input: "u", Text: "hi", At: t0 + 2000}, {Kind: runtime.ItemAssistant, Text: "ok", At: t0 + 2000}}, now: -1,
			queue: "0:0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := runtime.Stamp(0)
			if tc.now >= 0 {
				now = t0 + runtime.Stamp(tc.now)
			}
			tl := timeline.Of(tc.items, now)
			var got []string
			for _, v := range tl.Intervals {
				got = append(got, iv(v))
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Fatalf("intervals\n got %q\nwant %q", got, tc.want)
			}
			if math.Abs(tl.WaitFraction-tc.wf) > 1e-9 {
				t.Fatalf("wait fraction %v, want %v", tl.WaitFraction, tc.wf)
			}
			if s := samples(tl.Tools); s != tc.tools {
				t.Fatalf("tool latencies %q, want %q", s, tc.tools)
			}
			if s := samples(tl.Queue); s != tc.queue {
				t.Fatalf("queue delays %q, want %q", s, tc.queue)
			}
			// The intervals partition the time they cover: no overlap,
			// no gap, and the totals are their sums.
			sum := timeline.Totals{}
			for i, v := range tl.Intervals {
				// Only the open interval may be empty (its wait has just begun).
				empty := v.End <= v.Start && !(v.Open && v.End == v.Start && i == len(tl.Intervals)-1)
				if empty || (i > 0 && tl.Intervals[i-1].End != v.Start) {
					t.Fatalf("interval %d %s does not follow %v", i, iv(v), tl.Intervals[:i])
				}
				sum[v.Cause] += v.Seconds()
			}
			for c, s := range tl.Totals {
				if math.Abs(sum[c]-s) > 1e-9 {
					t.Fatalf("total %s %v, intervals sum to %v", c, s, sum[c])
				}
			}
		})
	}
}

func samples(ss []timeline.Sample) string {
	var out []string
	for _, s := range ss {
		tool := s.Tool
		if tool == "" {
			tool = "0"
		}
		out = append(out, fmt.Sprintf("%s:%d", tool, s.Ms))
	}
	return strings.Join(out, " ")
}

func TestTurns(t *testing.T) {
	t.Parallel()
	items := []runtime.Item{user(1000, 0), callOf("fetch", "c1", 2000, 1000), result("c1", 5000, 0), reply(6000, 1000),
		user(20_000, 0), reply(21_000, 1000)}
	tl := timeline.Of(items, 0)
	if len(tl.Turns) != 2 {
		t.Fatalf("turns %+v, want 2", tl.Turns)
	}
	first, second := tl.Turns[0], tl.Turns[1]
	if first.Start != t0+1000 || first.End != t0+6000 || math.Abs(first.WaitFraction-0.6) > 1e-9 {
		t.Fatalf("first turn %+v, want 1000-6000 waiting 3 s of 5", first)
	}
	if second.Start != t0+20_000 || second.End != t0+21_000 || second.WaitFraction != 0 {
		t.Fatalf("second turn %+v, want 20000-21000 without waits", second)
	}
	if tl.Totals[timeline.Idle] != 14 {
		t.Fatalf("idle %v s between the turns, want 14", tl.Totals[timeline.Idle])
	}
}

func TestQuantilesOf(t *testing.T) {
	t.Parallel()
	ms := make([]int64, 0, 100)
	for i := 100; i >= 1; i-- {
		ms = append(ms, int64(i)*10)
	}
	if q := timeline.QuantilesOf(ms); q.Count != 100 || q.P50 != 0.5 || q.P99 != 0.99 {
		t.Fatalf("quantiles %+v, want 100 of them, p50 0.5 s, p99 0.99 s", q)
	}
	if q := timeline.QuantilesOf([]int64{7000}); q.P50 != 7 || q.P99 != 7 {
		t.Fatalf("one sample: %+v", q)
	}
	if q := timeline.QuantilesOf(nil); q != (timeline.Quantiles{}) {
		t.Fatalf("no samples: %+v", q)
	}
}

func TestAggregate(t *testing.T) {
	t.Parallel()
	tool := timeline.Of([]runtime.Item{user(1000, 0), callOf("fetch", "c1", 2000, 1000), result("c1", 10_000, 500), reply(11_000, 500)}, 0)
	plain := timeline.Of([]runtime.Item{user(1000, 1000), reply(3000, 1000)}, 0)
	byAgent := timeline.NewAggregate("agent")
	byAgent.Add("coder", tool)
	byAgent.Add("coder", plain)
	byAgent.Add("writer", plain)
	st := byAgent.Stats()
	if st.Threads != 3 || len(st.Groups) != 2 || st.Groups[0].Key != "coder" || st.Groups[0].Threads != 2 {
		t.Fatalf("by agent: %+v", st)
	}
	// coder: 8 s waiting of 10 + 2 s active; writer: none.
	if c := st.Groups[0]; math.Abs(c.WaitFraction-8.0/12) > 1e-9 || c.ToolLatency.Count != 1 || c.QueueDelay.Count != 3 || c.QueueDelay.P99 != 1 {
		t.Fatalf("coder: %+v", c)
	}
	if w := st.Groups[1]; w.WaitFraction != 0 || w.Totals[timeline.Queued] != 1 {
		t.Fatalf("writer: %+v", w)
	}
	byTool := timeline.NewAggregate("tool")
	byTool.Add("coder", tool)
	byTool.Add("writer", plain)
	st = byTool.Stats()
	if len(st.Groups) != 1 || st.Groups[0].Key != "fetch" || st.Groups[0].ToolLatency.P50 != 8 || st.Groups[0].QueueDelay.P50 != 0.5 ||
		st.Groups[0].Totals[timeline.WaitingTool] != 8 || math.Abs(st.Groups[0].WaitFraction-8.0/12) > 1e-9 {
		t.Fatalf("by tool: %+v", st.Groups)
	}
}
