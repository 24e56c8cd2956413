package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary stand for the harness's binary when the
// harness forks a child for an in-process system.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestPeers runs a few agents through every system, as make loadtest-peers
// does at full size. It needs the npm packages (scripts/peers-deps.sh) and
// PostgreSQL (AGENTSLICE_TEST_PG_DSN); make test-peers sets
// AGENTSLICE_PEERS_TEST=1, without which it is skipped.
func TestPeers(t *testing.T) {
	if os.Getenv("AGENTSLICE_PEERS_TEST") == "" {
		t.Skip("AGENTSLICE_PEERS_TEST not set (make test-peers)")
	}
	dsn := os.Getenv("AGENTSLICE_TEST_PG_DSN")
	if dsn == "" {
		t.Fatal("AGENTSLICE_TEST_PG_DSN is not set; DBOS needs PostgreSQL")
	}
	const agents, turns = 4, 3
	c := config{systems: strings.Split(allSystems, ","), agents: agents, turns: turns, conc: 4, samples: 2, warmup: 2,
		settle: time.Second, timeout: time.Minute, root: "../..", dsn: dsn}
	var out bytes.Buffer
	rows, err := run(context.Background(), c, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if len(rows) != len(c.systems) {
		t.Fatalf("%d rows for %d systems", len(rows), len(c.systems))
	}
	for _, r := range rows {
		if r.Status != "ok" {
			t.Errorf("%s: %s: %s", r.System, r.Status, r.Reason)
			continue
		}
		want := int64(agents * turns * 2)
		if !strings.HasPrefix(r.System, "density") {
			// The last turn's second completion runs after the wake, outside the timed phase.
			want = int64(agents * (turns*2 - 1))
			if r.WakeSamples != 2 || r.WakeP50Ms <= 0 || r.WakeP99Ms < r.WakeP50Ms {
				t.Errorf("%s: wake samples %d p50 %.1f p99 %.1f", r.System, r.WakeSamples, r.WakeP50Ms, r.WakeP99Ms)
			}
			if r.WaitingBytes <= 0 || r.BaselineBytes <= 0 || (!strings.HasPrefix(r.System, "agentslice") && !strings.Contains(r.Processes, "node") && !strings.Contains(r.Processes, "workerd")) {
				t.Errorf("%s: memory not measured: baseline %d waiting %d over %q", r.System, r.BaselineBytes, r.WaitingBytes, r.Processes)
			}
		}
		if r.Completions != want {
			t.Errorf("%s: %d completions, want %d", r.System, r.Completions, want)
		}
		if r.CompletionsPerSec <= 0 || r.CPUSeconds <= 0 {
			t.Errorf("%s: completions/s %.1f CPU s %.2f", r.System, r.CompletionsPerSec, r.CPUSeconds)
		}
	}
	for _, s := range []string{"ratios to agentslice-sqlite", "restate", "dbos"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q", s)
		}
	}
}

// TestProseSizes checks that the workers' simulated model answers with the
// density benchmark's sizes: 12 chunks of 95 bytes, a tool call on the
// first completion of a turn, 350-byte tool results.
func TestProseSizes(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	out, err := exec.Command("node", "-e", `const p = require('./prose');
const a = p.completion('agent-000001', 3, 0), b = p.completion('agent-000001', 3, 1), c = p.completion('agent-000002', 3, 0);
console.log([a.text.length, b.text.length, !!a.tool_call, !!b.tool_call, a.text === c.text, a.text === p.completion('agent-000001', 3, 0).text, p.toolResult('x', 1).length].join(','));`).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "1140,1140,true,false,false,true,350"; got != want {
		t.Errorf("sizes/determinism %s, want %s", got, want)
	}
}

// TestProseSameInGoAndJS: agentslice's model (prose.go) writes the very
// text the peers' workers (prose.js) write, byte for byte.
func TestProseSameInGoAndJS(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	words, err := loadWords("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", "-e", `const p = require('./prose');
process.stdout.write(JSON.stringify([p.seedOf('chunk', 'agent-000007', '3'), p.text(p.seedOf('chunk', 'agent-000007', '3'), 95), p.text(12345, 1140)]));`).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	var js []any
	if err := json.Unmarshal(out, &js); err != nil || len(js) != 3 {
		t.Fatalf("node printed %s (%v)", out, err)
	}
	seed := seedOf("chunk", "agent-000007", "3")
	if got := uint32(js[0].(float64)); got != seed {
		t.Errorf("seedOf: JS %d, Go %d", got, seed)
	}
	if got := proseText(words, seed, 95); got != js[1] {
		t.Errorf("95 bytes: Go %q, JS %q", got, js[1])
	}
	if got := proseText(words, 12345, 1140); got != js[2] {
		t.Errorf("1140 bytes differ: Go %q..., JS %q...", got[:80], js[2].(string)[:80])
	}
}

func TestCallbacksRefuseBadBodies(t *testing.T) {
	cb, err := newCallbacks()
	if err != nil {
		t.Fatal(err)
	}
	defer cb.srv.Close()
	for _, body := range []string{"", "{", `{"turn": 1}`, `{"agent": 5}`} {
		res, err := http.Post(cb.url+"/waiting", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("body %q: %s, want 400", body, res.Status)
		}
	}
	res, err := http.Post(cb.url+"/done", "application/json", strings.NewReader(`{"agent": "a", "turn": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	_, done := cb.chans("a")
	s, err := await(context.Background(), done, 2, "done", time.Second)
	if err != nil || s.Agent != "a" {
		t.Fatalf("done signal: %+v %v", s, err)
	}
}

// TestMissingPeerIsReported: a peer whose packages are not installed is a
// failed row naming why, not a skipped one.
func TestMissingPeerIsReported(t *testing.T) {
	dir := t.TempDir()
	r, err := runPeer(context.Background(), config{agents: 1, turns: 1, conc: 1, timeout: time.Second}, &restatePeer{dir: dir}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "peers-deps.sh") {
		t.Fatalf("row %+v, err %v: want an error naming scripts/peers-deps.sh", r, err)
	}
	d := &dbosPeer{dir: dir}
	if err := d.start(context.Background(), &callbacks{url: "http://127.0.0.1:1"}, t.TempDir()); err == nil || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Fatalf("dbos without a DSN: %v", err)
	}
	d.stop()
}

func TestProcMeasures(t *testing.T) {
	self := []int{os.Getpid()}
	m := memOf(self)
	if m.RSS <= 0 || m.PSS <= 0 || m.PSS > m.RSS {
		t.Errorf("own memory: %+v", m)
	}
	if got := memOf([]int{1 << 30}); got != (procMem{}) {
		t.Errorf("a pid that does not exist counted %+v", got)
	}
	// Burn some CPU so the ticks move.
	c0 := cpuOf(self)
	x := 0
	for t0 := time.Now(); time.Since(t0) < 100*time.Millisecond; {
		x++
	}
	if cpuOf(self) <= c0 {
		t.Errorf("CPU did not advance over a busy loop (%d iterations)", x)
	}
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, make([]byte, 1<<16), 0o644)
	if n := dirBytes(filepath.Dir(f)); n < 1<<16 {
		t.Errorf("dirBytes %d, want >= 64 KiB", n)
	}
}

func TestQuantilesAndRatios(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(101-i)*time.Millisecond)
	}
	if p50, p99 := quantileMS(d, 0.5), quantileMS(d, 0.99); p50 != 50 || p99 != 99 {
		t.Errorf("p50 %.0f p99 %.0f, want 50, 99", p50, p99)
	}
	ref := &row{}
	if got := ratio(ref, 50, 100, false); got != " (0.50x*)" {
		t.Errorf("lower is better, half: %q", got)
	}
	if got := ratio(ref, 50, 100, true); got != " (0.50x)" {
		t.Errorf("higher is better, half: %q", got)
	}
	if got := ratio(ref, 0, 100, false); got != "" {
		t.Errorf("no figure (a store without disk): %q", got)
	}
	if got := ratio(nil, 50, 100, true); got != "" {
		t.Errorf("no reference: %q", got)
	}
}
