package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/client"
)

// TestTimelineAndStats: timeline prints a thread's wait fraction, its
// totals by cause and (with -intervals) its intervals, from a real serve
// after a turn through a tool call; stats prints a row per tool; -json
// is the API's answer; a thread without history is a clear error.
func TestTimelineAndStats(t *testing.T) {
	url := startInProcess(t)
	if code, _, errOut := runCmd("send", "-server", url, "-wait", "tt", "what time is it?"); code != 0 {
		t.Fatalf("send: %d %s", code, errOut)
	}
	code, out, errOut := runCmd("timeline", "-server", url, "-intervals", "tt")
	if code != 0 || !strings.HasPrefix(out, "thread tt: wait fraction ") || !strings.Contains(out, "1 turns") ||
		!strings.Contains(out, "tool latency p50 ") || !strings.Contains(out, "idle (still)") {
		t.Fatalf("timeline: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd("timeline", "-server", url, "-json", "tt")
	var tl client.Timeline
	if err := json.Unmarshal([]byte(out), &tl); code != 0 || err != nil || tl.ThreadID != "tt" || len(tl.Tools) != 1 ||
		tl.Tools[0].Tool != "get_time" || len(tl.Totals) != len(client.Causes) {
		t.Fatalf("timeline -json: %d %v %+v %s", code, err, tl, errOut)
	}
	code, out, errOut = runCmd("stats", "-server", url, "-by", "tool")
	if code != 0 || !strings.Contains(out, "1 threads: wait fraction") || !strings.Contains(out, "\nget_time ") || !strings.Contains(out, "WAITING_TOOL") {
		t.Fatalf("stats: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut = runCmd("stats", "-server", url, "-by", "model"); code == 0 || !strings.Contains(errOut, "neither agent nor tool") {
		t.Fatalf("stats -by model: %d %s", code, errOut)
	}
	if code, _, errOut = runCmd("timeline", "-server", url, "nobody"); code == 0 || !strings.Contains(errOut, "nobody") {
		t.Fatalf("timeline of nobody: %d %s", code, errOut)
	}
}
