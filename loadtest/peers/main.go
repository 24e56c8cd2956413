// Command peers runs one agent workload on agentslice and on the
// durable-execution engines a user would pick instead (issue 37): Restate
// and DBOS, each with its public SDK in a Node worker under
// loadtest/peers/, started and stopped by this harness in one invocation.
//
//	bash scripts/peers-deps.sh && go run ./loadtest/peers -agents 1000
//
// N agents, T turns each; a turn is a user message, a simulated ~1.2 KB
// completion ending in a run_command tool call, the tool result delivered
// later from outside as an event (Restate: an awakeable resolved through
// the ingress; DBOS: DBOS.send to the workflow's recv), and a second
// completion. The last turn's tool result is held back, so every agent ends
// waiting for an external event; then memory and disk are measured, and the
// agents are woken (the wake-up latency, under the load of the others).
// Output: one JSON line per system, then a table of ratios to agentslice;
// the JSON lines also land in -out.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

// row is one system's result line.
type row struct {
	System string `json:"system"`
	// Status is ok, failed (Reason says why) or not_run (Reason says why).
	Status                  string  `json:"status"`
	Reason                  string  `json:"reason,omitempty"`
	Mode                    string  `json:"mode,omitempty"`
	Agents                  int     `json:"agents"`
	Turns                   int     `json:"turns"`
	Completions             int64   `json:"completions"`
	Seconds                 float64 `json:"seconds"`
	CompletionsPerSec       float64 `json:"completions_per_sec"`
	CPUSeconds              float64 `json:"cpu_seconds"`
	CPUMsPerCompletion      float64 `json:"cpu_ms_per_completion"`
	BaselineBytes           int64   `json:"baseline_bytes"`
	WaitingBytes            int64   `json:"waiting_bytes"`
	BytesPerWaitingAgent    int64   `json:"bytes_per_waiting_agent"`
	RSSBytesPerWaitingAgent int64   `json:"rss_sum_bytes_per_waiting_agent"`
	// BytesPerIdleAgent is the same figure once every agent has been woken
	// and finished its last turn (idle, waiting for a next user message;
	// what the density benchmark measures), after a 2 s pause.
	BytesPerIdleAgent int64   `json:"bytes_per_idle_agent,omitempty"`
	WakeP50Ms         float64 `json:"wake_p50_ms,omitempty"`
	WakeP99Ms         float64 `json:"wake_p99_ms,omitempty"`
	WakeSamples       int     `json:"wake_samples,omitempty"`
	WakeNote          string  `json:"wake_note,omitempty"`
	DiskBytesPerAgent int64   `json:"disk_bytes_per_agent"`
	// Largest is the ramp's result (-ramp): the most agents left waiting
	// with the system's processes within -limit-gib.
	Largest   *largest          `json:"largest,omitempty"`
	Processes string            `json:"processes_counted,omitempty"`
	Settings  map[string]string `json:"settings,omitempty"`
	Machine   string            `json:"machine"`
	Date      string            `json:"date"`
}

type config struct {
	systems             []string
	agents, turns, conc int
	samples, warmup     int
	settle, timeout     time.Duration
	root, out, dsn      string
	keep                bool
	// limit bounds the system's processes' memory (sum of Pss) in every
	// drive; ramp, when positive, is how long the ramp to the largest N
	// within limit may run after the measured run.
	limit int64
	ramp  time.Duration
	// child: run the one system in this process (agentslice's rows run
	// so, each in a fresh child of the harness).
	child bool
}

const allSystems = "agentslice-memory,agentslice-sqlite,density-sqlite,restate,dbos,cloudflare"

func main() {
	var c config
	var systems string
	flag.StringVar(&systems, "systems", allSystems, "comma-separated systems to run")
	flag.IntVar(&c.agents, "agents", 1000, "agents per system")
	flag.IntVar(&c.turns, "turns", 20, "turns per agent")
	flag.IntVar(&c.conc, "conc", 64, "turns in flight at once (the users' concurrency, the same for every peer)")
	flag.IntVar(&c.samples, "samples", 100, "waiting agents woken one at a time for the wake-up latency")
	flag.IntVar(&c.warmup, "warmup", 64, "peers only: agents run through two turns and woken before the baseline is taken (excluded from every figure)")
	flag.DurationVar(&c.settle, "settle", 70*time.Second, "wait after the last agent is waiting before memory is sampled (past Restate's 1 min inactivity timeout, after which it suspends invocations), the same for every peer")
	flag.DurationVar(&c.timeout, "timeout", 2*time.Minute, "longest wait for one signal from a worker")
	flag.StringVar(&c.root, "root", ".", "the agentslice module root")
	flag.StringVar(&c.out, "out", "loadtest/results", "directory for peers.jsonl")
	flag.StringVar(&c.dsn, "pg-dsn", os.Getenv("AGENTSLICE_TEST_PG_DSN"), "PostgreSQL for DBOS (a schema of its own is created and dropped)")
	limitGiB := flag.Float64("limit-gib", 8, "memory limit of a system's processes (sum of Pss): a drive that passes it stops, and the ramp stays under it")
	flag.DurationVar(&c.ramp, "ramp", 0, "after the measured run, add waves of waiting agents for at most this long, to find the largest N within -limit-gib (0: no ramp)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory (logs, Restate's base dir)")
	flag.BoolVar(&c.child, "child", false, "internal: run the one agentslice system of -systems in this process and print its row")
	table := flag.String("table", "", "print the table of an earlier run's peers.jsonl and exit")
	chartOut := flag.String("chart", "", "write an SVG chart of the run (or of -table's file) to this path")
	flag.Parse()
	if *table != "" {
		rows, err := readRows(*table)
		if err != nil {
			fmt.Fprintln(os.Stderr, "peers:", err)
			os.Exit(1)
		}
		printTable(os.Stdout, rows)
		if *chartOut != "" {
			if err := os.WriteFile(*chartOut, []byte(peersChart(rows)), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "peers:", err)
				os.Exit(1)
			}
		}
		return
	}
	c.limit = int64(*limitGiB * (1 << 30))
	c.systems = strings.Split(systems, ",")
	if c.agents <= 0 || c.turns <= 0 || c.conc <= 0 || c.samples < 0 {
		fmt.Fprintln(os.Stderr, "peers: -agents, -turns and -conc must be positive and -samples not negative")
		os.Exit(2)
	}
	rows, err := run(context.Background(), c, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
	if err := writeRows(c.out, rows); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
	if *chartOut != "" && !c.child {
		if err := os.WriteFile(*chartOut, []byte(peersChart(rows)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "peers:", err)
			os.Exit(1)
		}
	}
	for _, r := range rows {
		if r.Status == "failed" {
			os.Exit(1)
		}
	}
}

// run runs every system in c.systems, one after the other, printing each
// row's JSON line as it ends and the table at the end.
func run(ctx context.Context, c config, w io.Writer) ([]row, error) {
	root, err := filepath.Abs(c.root)
	if err != nil {
		return nil, err
	}
	c.root = root
	work, err := os.MkdirTemp("", "peers-")
	if err != nil {
		return nil, err
	}
	if c.keep {
		fmt.Fprintln(os.Stderr, "peers: work directory", work)
	} else {
		defer os.RemoveAll(work)
	}
	machine, date := hostinfo.Machine(), time.Now().UTC().Format(time.RFC3339)
	var rows []row
	for _, s := range c.systems {
		s = strings.TrimSpace(s)
		var r row
		switch s {
		case "agentslice-memory", "agentslice-sqlite":
			if !c.child {
				r, err = runChild(ctx, c, s)
				break
			}
			r, err = runPeer(ctx, c, &aslicePeer{store: strings.TrimPrefix(s, "agentslice-"), root: root}, work)
			if err == nil {
				r.Mode = "in process (the harness's process: the driver's Sends go straight to the input queue, no HTTP)"
			}
		case "density-memory", "density-sqlite":
			r, err = runAgentslice(ctx, root, work, strings.TrimPrefix(s, "density-"), c.agents, c.turns)
		case "restate":
			r, err = runPeer(ctx, c, &restatePeer{dir: filepath.Join(root, "loadtest/peers")}, work)
		case "dbos":
			r, err = runPeer(ctx, c, &dbosPeer{dir: filepath.Join(root, "loadtest/peers"), dsn: c.dsn}, work)
		case "cloudflare":
			r, err = runPeer(ctx, c, &cloudflarePeer{dir: filepath.Join(root, "loadtest/peers")}, work)
		default:
			return rows, fmt.Errorf("unknown system %q (want some of %s)", s, allSystems)
		}
		r.System, r.Machine, r.Date = s, machine, date
		if r.Agents == 0 {
			r.Agents, r.Turns = c.agents, c.turns
		}
		if err != nil {
			r.Status, r.Reason = "failed", err.Error()
		} else if r.Status == "" {
			r.Status = "ok"
		}
		line, _ := json.Marshal(r)
		fmt.Fprintln(w, string(line))
		rows = append(rows, r)
	}
	if !c.child {
		printTable(w, rows)
	}
	return rows, nil
}

// childEnv marks a child of the harness (see runChild).
const childEnv = "AGENTSLICE_PEERS_CHILD"

// runChild runs an in-process system in a fresh child of the harness
// (this binary with -child), so that no other system's heap shares its
// process, and returns its row.
func runChild(ctx context.Context, c config, system string) (row, error) {
	exe, err := os.Executable()
	if err != nil {
		return row{}, err
	}
	out, err := os.MkdirTemp("", "peers-child-")
	if err != nil {
		return row{}, err
	}
	defer os.RemoveAll(out)
	cmd := exec.CommandContext(ctx, exe, "-child", "-systems", system, "-agents", fmt.Sprint(c.agents), "-turns", fmt.Sprint(c.turns),
		"-conc", fmt.Sprint(c.conc), "-samples", fmt.Sprint(c.samples), "-warmup", fmt.Sprint(c.warmup),
		"-settle", c.settle.String(), "-timeout", c.timeout.String(), "-root", c.root, "-out", out,
		"-limit-gib", fmt.Sprint(float64(c.limit)/(1<<30)), "-ramp", c.ramp.String())
	cmd.Stderr = os.Stderr
	// The test binary runs main when it sees this (TestMain), so the
	// harness's tests fork children the same way.
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdout, err := cmd.Output()
	if err != nil {
		return row{}, fmt.Errorf("child for %s: %w", system, err)
	}
	for _, line := range strings.Split(string(stdout), "\n") {
		if strings.HasPrefix(line, "{") {
			var r row
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return row{}, fmt.Errorf("child for %s printed %q: %w", system, line, err)
			}
			if r.Status != "ok" {
				return r, fmt.Errorf("%s", r.Reason)
			}
			r.Status = ""
			return r, nil
		}
	}
	return row{}, fmt.Errorf("child for %s printed no row: %s", system, stdout)
}

// runPeer starts p, drives the workload, measures, wakes, stops.
func runPeer(ctx context.Context, c config, p peer, work string) (r row, err error) {
	r.Mode = "over HTTP (worker processes on loopback)"
	cb, err := newCallbacks()
	if err != nil {
		return r, err
	}
	defer cb.srv.Close()
	dir := filepath.Join(work, p.name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	defer p.stop()
	if err := p.start(ctx, cb, dir); err != nil {
		return r, err
	}
	r.Settings = p.settings()
	r.Settings["users_concurrency"] = fmt.Sprint(c.conc)
	r.Settings["settle"] = c.settle.String()
	r.Settings["warmup_agents"] = fmt.Sprint(c.warmup)
	// Warm-up, excluded from every figure: c.warmup agents through two
	// turns and woken (connection pools grown, code paths compiled).
	if c.warmup > 0 {
		w, err := drive(ctx, p, cb, "warm", c.warmup, 2, c.conc, c.timeout, c.limit)
		if err != nil {
			return r, fmt.Errorf("warm-up: %w", err)
		}
		if _, err := wake(ctx, p, cb, w.waitingIDs, 2, c.conc, 0, c.timeout); err != nil {
			return r, fmt.Errorf("warm-up: %w", err)
		}
	}
	time.Sleep(2 * time.Second) // the same quiet start for every peer
	base := memOf(p.pids())
	disk0, err := p.diskBytes(ctx)
	if err != nil {
		return r, err
	}
	fmt.Fprintf(os.Stderr, "peers: %s: %d agents × %d turns\n", p.name(), c.agents, c.turns)
	d, err := drive(ctx, p, cb, "agent", c.agents, c.turns, c.conc, c.timeout, c.limit)
	if err != nil {
		return r, err
	}
	r.Completions, r.Seconds = d.completions, d.seconds
	r.CompletionsPerSec = float64(d.completions) / d.seconds
	r.CPUSeconds = d.cpu.Seconds()
	r.CPUMsPerCompletion = r.CPUSeconds * 1e3 / float64(d.completions)
	fmt.Fprintf(os.Stderr, "peers: %s: %.0f completions/s; every agent waiting; settling %s\n", p.name(), r.CompletionsPerSec, c.settle)
	time.Sleep(c.settle)
	if s, ok := p.(interface{ settled() }); ok {
		s.settled()
	}
	pids := p.pids()
	held := memOf(pids)
	r.Processes = fmt.Sprintf("%d processes: %s (sum of Pss from smaps_rollup; rss_sum sums VmRSS)", len(pids), processNames(pids))
	r.BaselineBytes, r.WaitingBytes = base.PSS, held.PSS
	r.BytesPerWaitingAgent = (held.PSS - base.PSS) / int64(c.agents)
	r.RSSBytesPerWaitingAgent = (held.RSS - base.RSS) / int64(c.agents)
	disk1, err := p.diskBytes(ctx)
	if err != nil {
		return r, err
	}
	r.DiskBytesPerAgent = (disk1 - disk0) / int64(c.agents)
	r.Settings["disk_bytes_total"] = fmt.Sprint(disk1)
	lat, err := wake(ctx, p, cb, d.waitingIDs, c.turns, c.conc, c.samples, c.timeout)
	if err != nil {
		return r, fmt.Errorf("waking the waiting agents: %w", err)
	}
	time.Sleep(2 * time.Second)
	if s, ok := p.(interface{ settled() }); ok {
		s.settled()
	}
	r.BytesPerIdleAgent = (memOf(p.pids()).PSS - base.PSS) / int64(c.agents)
	r.WakeSamples = len(lat)
	r.WakeP50Ms, r.WakeP99Ms = quantileMS(lat, 0.5), quantileMS(lat, 0.99)
	r.WakeNote = fmt.Sprintf("time from the tool result sent to the agent's done callback (wake-up, one completion, the callback), one sampled agent at a time while %d releasers wake the others", max(c.conc-1, 1))
	if c.ramp > 0 {
		r.Largest = rampUp(ctx, c, p, cb, base.PSS, r.CompletionsPerSec)
	}
	if n := cb.dropped.Load(); n > 0 {
		r.Settings["duplicate_callbacks_dropped"] = fmt.Sprint(n)
	}
	return r, nil
}

func processNames(pids []int) string {
	count := map[string]int{}
	var order []string
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		name := strings.TrimSpace(string(b))
		if err != nil {
			name = "gone"
		}
		if count[name] == 0 {
			order = append(order, name)
		}
		count[name]++
	}
	var parts []string
	for _, n := range order {
		parts = append(parts, fmt.Sprintf("%s×%d", n, count[n]))
	}
	return strings.Join(parts, ", ")
}

func writeRows(dir string, rows []row) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for _, r := range rows {
		line, _ := json.Marshal(r)
		b.Write(line)
		b.WriteByte('\n')
	}
	return os.WriteFile(filepath.Join(dir, "peers.jsonl"), []byte(b.String()), 0o644)
}

// readRows reads a peers.jsonl.
func readRows(path string) ([]row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []row
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}
