// Command million is `make loadtest-million` (issue 35): a million
// durable agents on one machine. It creates agents on serve's durable
// store (the infinity profile's shape, 4 turns each) at growing sizes and,
// at each size, runs the real `agentslice serve` on the data directory and
// measures: RSS and disk per idle agent, GET /threads page time, serve's
// durable throughput, and the wake-up latency of random idle agents under
// a background load at half that throughput. At the last size it
// SIGKILLs serve with work in flight and measures recovery (time to ready,
// time until every accepted message is answered, messages lost), and it
// measures the same wake-up figures on serve's memory store. It prints one
// JSON line and writes a chart of RSS and wake-up latency against the
// number of agents. With -sleepers N it measures sleeping agents instead
// (sleepers.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

type config struct {
	agents, turns                  int
	steps                          []int
	data, out, chart, bin          string
	keep                           bool
	wakeN, wakeConc, bgAgents      int
	wakeRate                       float64
	satSeconds                     time.Duration
	killMessages, memAgents, pages int
	existing                       int
	seed                           uint64
	serveNice                      int  // -serve-nice (priority.go)
	serveNiceSet                   bool // -serve-nice given: serve's threads are reniced to it
	stages                         bool // -stages (stages.go)
	fsyncN, fsyncBytes             int  // -fsync-probe, -fsync-probe-bytes (fsync.go)
	fsyncOnly                      bool // -fsync-probe-only
}

// step is what one size measured.
type step struct {
	Agents              int       `json:"agents"`
	PopulateSeconds     float64   `json:"populate_seconds"`
	PopulateCPS         float64   `json:"populate_completions_per_sec"`
	PopulateCPUUs       float64   `json:"populate_cpu_us_per_completion"`
	PopulateRSSPerAgent int64     `json:"populate_rss_bytes_per_idle_agent"`
	ReadySeconds        float64   `json:"serve_ready_seconds"`
	RSSBytes            int64     `json:"serve_rss_bytes"`
	RSSPerIdleAgent     int64     `json:"rss_bytes_per_idle_agent"`
	RSSAfterWake        int64     `json:"serve_rss_bytes_after_wake"`
	DiskBytes           int64     `json:"disk_bytes"`
	DiskPerAgent        int64     `json:"disk_bytes_per_agent"`
	JournalBytes        int64     `json:"journal_file_bytes"`
	PageMS              []float64 `json:"threads_page_ms"`
	PageTotal           int       `json:"threads_total"`
	FilteredPageMS      []float64 `json:"filtered_threads_page_ms"` // filteredPages, in order
	DurableRate         float64   `json:"durable_messages_per_sec"`
	BackgroundRate      float64   `json:"background_messages_per_sec"`
	BackgroundDone      float64   `json:"background_done_per_sec"`
	Wake                wakeStats `json:"wake"`
	// WakeStages is where the wake-ups' time went inside serve (-stages).
	WakeStages *stageStats `json:"wake_stages,omitempty"`
}

// Result is the final JSON line.
type Result struct {
	Agents                  int       `json:"agents"`
	Turns                   int       `json:"turns"`
	RSSBytesPerIdleAgent    int64     `json:"rss_bytes_per_idle_agent"`
	DiskBytesPerAgent       int64     `json:"disk_bytes_per_agent"`
	WakeP50MS               float64   `json:"wake_p50_ms"`
	WakeP99MS               float64   `json:"wake_p99_ms"`
	WakeMaxMS               float64   `json:"wake_max_ms"`
	WakeModelMS             float64   `json:"wake_model_ms"`
	WakeN                   int       `json:"wake_agents"`
	DurableRate             float64   `json:"durable_messages_per_sec"`
	BackgroundRate          float64   `json:"background_messages_per_sec"`
	RecoveryReadySeconds    float64   `json:"recovery_ready_seconds"`
	RecoveryConsumedSeconds float64   `json:"recovery_consumed_seconds"`
	MessagesInFlight        int       `json:"messages_in_flight"`
	MessagesLost            int       `json:"messages_lost"`
	ThreadsPageMS           float64   `json:"threads_page_ms"`
	MemoryAgents            int       `json:"memory_agents"`
	MemoryWakeP50MS         float64   `json:"memory_wake_p50_ms"`
	MemoryWakeP99MS         float64   `json:"memory_wake_p99_ms"`
	MemoryWakeMaxMS         float64   `json:"memory_wake_max_ms"`
	MemoryRate              float64   `json:"memory_messages_per_sec"`
	BaselineRSSBytes        int64     `json:"serve_baseline_rss_bytes"`
	Steps                   []step    `json:"steps"`
	Machine                 string    `json:"machine"`
	Load                    string    `json:"load"`
	Date                    string    `json:"date"`
	Memory                  wakeStats `json:"memory_wake"`
	ServeNice               *int      `json:"serve_nice,omitempty"` // -serve-nice, if given
	// The fsync probe on the data directory's filesystem, before the
	// measurements (fsync.go), and the share of the last size's slowest
	// wake-ups spent in the journal's commit (-stages).
	FsyncP50MS         float64     `json:"fsync_p50_ms"`
	FsyncP99MS         float64     `json:"fsync_p99_ms"`
	FsyncMaxMS         float64     `json:"fsync_max_ms"`
	Fsync              *fsyncStats `json:"fsync,omitempty"`
	WakeP99CommitShare *float64    `json:"wake_p99_commit_share,omitempty"`
}

func main() {
	var c config
	var steps string
	flag.IntVar(&c.agents, "agents", 1000000, "agents at the last size")
	flag.StringVar(&steps, "steps", "10000,100000", "smaller sizes measured on the way (comma-separated; those below -agents are kept)")
	flag.IntVar(&c.turns, "turns", 4, "turns per agent when it is created")
	flag.StringVar(&c.data, "data", "", "data directory (default: a temporary one, removed at the end)")
	flag.BoolVar(&c.keep, "keep", false, "keep the data directory")
	flag.StringVar(&c.out, "out", "loadtest/results", "directory for the JSON result")
	flag.StringVar(&c.chart, "chart", "docs/million.svg", "the chart of RSS and wake-up latency against agents (\"\": none)")
	flag.StringVar(&c.bin, "serve", "", "the agentslice binary (default: built from ./cmd/agentslice)")
	flag.IntVar(&c.wakeN, "wake", 10000, "idle agents woken at random at each size")
	flag.Float64Var(&c.wakeRate, "wake-rate", 500, "wake-ups sent per second")
	flag.IntVar(&c.wakeConc, "wake-concurrency", 64, "wake-ups in flight at most")
	flag.IntVar(&c.bgAgents, "background-agents", 1000, "agents that carry the background load")
	flag.DurationVar(&c.satSeconds, "saturate", 10*time.Second, "how long serve's durable throughput is measured")
	flag.IntVar(&c.killMessages, "kill-messages", 2000, "messages sent to idle agents around the kill -9")
	flag.IntVar(&c.memAgents, "memory-agents", 100000, "agents created on serve's memory store (through its API, one message each) for the comparison (0: skip)")
	flag.IntVar(&c.pages, "pages", 3, "GET /threads pages timed at each size")
	flag.IntVar(&c.existing, "existing", 0, "agents -data already holds from an earlier run with -keep (they are not created again)")
	flag.IntVar(&c.serveNice, "serve-nice", 0, "nice value of serve's threads once it is ready (negative: a higher priority than the machine's other processes; needs root; not given: serve inherits the harness's)")
	flag.BoolVar(&c.stages, "stages", true, "trace the wake-ups' slices in serve (OpenTelemetry to a receiver in the harness; the background load is not traced) and print where their time went")
	flag.IntVar(&c.fsyncN, "fsync-probe", 2000, "appends, each fdatasynced as the journal does, timed on the data directory's filesystem before the measurements (0: no probe)")
	flag.IntVar(&c.fsyncBytes, "fsync-probe-bytes", 4096, "bytes in each of the fsync probe's appends")
	flag.BoolVar(&c.fsyncOnly, "fsync-probe-only", false, "run the fsync probe on -data's filesystem (default: the temporary directory's), print it and stop")
	flag.Uint64Var(&c.seed, "seed", uint64(time.Now().UnixNano()), "random seed (which agents wake)")
	var sc sleepConfig
	flag.IntVar(&sc.n, "sleepers", 0, "instead of the rest: this many agents each in a sleep, then serve restarted on them (sleepers.go)")
	flag.DurationVar(&sc.spread, "sleep-spread", time.Hour, "the sleepers' wake-ups are due evenly over this long")
	flag.DurationVar(&sc.lead, "sleep-lead", 2*time.Minute, "from this long after the population starts")
	flag.DurationVar(&sc.watch, "sleep-watch", 2*time.Minute, "how long serve runs after it is ready, waking the sleepers due")
	flag.StringVar(&sc.horizon, "timer-horizon", "", "serve's limits.timer_horizon (\"\": its default; off: every timer armed at start)")
	flag.Parse()
	flag.Visit(func(f *flag.Flag) { c.serveNiceSet = c.serveNiceSet || f.Name == "serve-nice" })
	if sc.n > 0 {
		if err := runSleepers(context.Background(), c, sc); err != nil {
			fmt.Fprintln(os.Stderr, "million:", err)
			os.Exit(1)
		}
		return
	}
	if c.fsyncOnly {
		if err := runFsyncOnly(c); err != nil {
			fmt.Fprintln(os.Stderr, "million:", err)
			os.Exit(1)
		}
		return
	}
	for _, s := range strings.Split(steps, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "million: -steps: %q is not a positive number\n", s)
			os.Exit(2)
		}
		if n < c.agents && n > c.existing {
			c.steps = append(c.steps, n)
		}
	}
	c.steps = append(c.steps, c.agents)
	if c.agents <= c.bgAgents || c.turns <= 0 {
		fmt.Fprintf(os.Stderr, "million: -agents (%d) must exceed -background-agents (%d) and -turns (%d) be positive\n", c.agents, c.bgAgents, c.turns)
		os.Exit(2)
	}
	runTag = strconv.FormatUint(c.seed%(36*36*36*36), 36)
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "million:", err)
		os.Exit(1)
	}
}

// filteredPages are the filtered GET /threads pages timed at each size:
// by status (an index walk), by agent (none has one: an empty answer),
// by a piece of the title (every root's row read).
var filteredPages = []string{"limit=50&status=idle", "limit=50&status=sleeping", "limit=50&agent=nobody", "limit=50&q=agent-0000042"}

// runTag keeps this run's message IDs apart from an earlier run's on a
// kept directory (-existing): a message ID is unique within its thread.
var runTag string

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "million %s: "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, c config) error {
	work, err := os.MkdirTemp("", "million-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if c.data == "" {
		c.data = filepath.Join(work, "data")
	} else if !c.keep {
		defer os.RemoveAll(c.data)
	}
	if c.bin == "" {
		logf("building ./cmd/agentslice")
		if c.bin, err = buildServe(ctx, work); err != nil {
			return err
		}
	}
	cfg, err := serveConfig(work, "sqlite", c.data)
	if err != nil {
		return err
	}
	fmt.Printf("# agentslice million: agents=%d steps=%v turns=%d wake=%d; %s; %s\n", c.agents, c.steps, c.turns, c.wakeN, hostinfo.Machine(), loadavg())
	res := Result{Agents: c.agents, Turns: c.turns, Machine: hostinfo.Machine(), Date: time.Now().UTC().Format(time.RFC3339)}
	rng := rand.New(rand.NewPCG(c.seed, 35))
	if c.fsyncN > 0 {
		// first, on the idle data directory's filesystem: the disk's own
		// figure, before serve's load is on it
		fs, err := probeFsync(c.data, c.fsyncN, c.fsyncBytes, disk.SyncData)
		if err != nil {
			return err
		}
		res.Fsync, res.FsyncP50MS, res.FsyncP99MS, res.FsyncMaxMS = &fs, fs.P50, fs.P99, fs.Max
		logf("%s, in %s", fs, c.data)
	}

	// serve's own footprint, on an empty directory
	base := filepath.Join(work, "empty")
	if err := os.MkdirAll(filepath.Join(work, "baseline"), 0o700); err != nil {
		return err
	}
	bcfg, err := serveConfig(filepath.Join(work, "baseline"), "sqlite", base)
	if err != nil {
		return err
	}
	bp, err := startServe(ctx, c.bin, bcfg, nil)
	if err != nil {
		return err
	}
	time.Sleep(3 * time.Second)
	res.BaselineRSSBytes = bp.rss()
	logf("serve on an empty directory: RSS %.1f MB", float64(res.BaselineRSSBytes)/1e6)
	if err := bp.stop(); err != nil {
		return err
	}
	os.Remove(bcfg)

	var stages *stageRecorder
	if c.stages {
		if stages, err = startStages(); err != nil {
			return err
		}
		defer stages.close()
	}
	if c.serveNiceSet {
		res.ServeNice = &c.serveNice
	}
	have := c.existing
	bg := make([]string, c.bgAgents)
	for i := range bg {
		bg[i] = agentName(i)
	}
	for si, n := range c.steps {
		last := si == len(c.steps)-1
		logf("populating agents %d to %d (%d turns each)", have, n, c.turns)
		pop, err := populate(ctx, c.data, have, n, c.turns)
		if err != nil {
			return err
		}
		have = n
		st := step{Agents: n, PopulateSeconds: pop.Seconds, PopulateCPS: pop.CompletionsPerSec, PopulateRSSPerAgent: pop.RSSBytes / int64(n)}
		if pop.Completions > 0 {
			st.PopulateCPUUs = pop.CPUSeconds * 1e6 / float64(pop.Completions)
		}
		st.DiskBytes = dirBytes(c.data, func(name string) bool { return strings.HasPrefix(name, "agentslice.db") })
		st.JournalBytes = dirBytes(c.data, func(name string) bool { return strings.HasPrefix(name, "journal") })
		st.DiskPerAgent = st.DiskBytes / int64(n)
		logf("%d agents: %.0f completions/s populating; %d bytes on disk per agent; starting serve", n, pop.CompletionsPerSec, st.DiskPerAgent)

		p, err := startServe(ctx, c.bin, cfg, stagesEnv(stages))
		if err != nil {
			return err
		}
		if c.serveNiceSet {
			if err := renice(p.cmd.Process.Pid, c.serveNice); err != nil {
				p.kill()
				return err
			}
		}
		st.ReadySeconds = p.ready.Seconds()
		time.Sleep(3 * time.Second)
		st.RSSBytes = p.rss()
		st.RSSPerIdleAgent = (st.RSSBytes - res.BaselineRSSBytes) / int64(n)
		logf("serve ready in %.2f s, RSS %.1f MB (%d bytes per idle agent)", st.ReadySeconds, float64(st.RSSBytes)/1e6, st.RSSPerIdleAgent)
		a := newAPI(p.url)
		a.stages = stages
		cursor := ""
		for i := 0; i < c.pages; i++ {
			d, next, total, err := a.page(ctx, cursor)
			if err != nil {
				p.kill()
				return err
			}
			st.PageMS, st.PageTotal, cursor = append(st.PageMS, ms(d)), total, next
			if next == "" {
				break
			}
		}
		logf("GET /threads pages: %v ms (total %d)", st.PageMS, st.PageTotal)
		for _, q := range filteredPages {
			d, _, total, err := a.pageOf(ctx, q)
			if err != nil {
				p.kill()
				return err
			}
			st.FilteredPageMS = append(st.FilteredPageMS, ms(d))
			logf("GET /threads?%s: %.1f ms (total %d)", q, ms(d), total)
		}
		if err := a.stream(ctx); err != nil {
			p.kill()
			return err
		}
		if st.DurableRate, err = throughput(ctx, a, bg, c.satSeconds, strconv.Itoa(n)); err != nil {
			p.kill()
			return err
		}
		st.BackgroundRate = st.DurableRate / 2
		logf("serve's durable throughput: %.0f messages/s; background load at %.0f/s", st.DurableRate, st.BackgroundRate)
		taken := map[int]bool{}
		for i := range c.bgAgents {
			taken[i] = true
		}
		var wakeAgents []string
		for _, i := range pick(rng, 0, n, min(c.wakeN, n-c.bgAgents-c.killMessages), taken) {
			wakeAgents = append(wakeAgents, agentName(i))
		}
		b := startBackground(ctx, a, bg, st.BackgroundRate, fmt.Sprintf("%d", n))
		t0, r0 := time.Now(), b.replies.Load()
		st.Wake = wake(ctx, a, wakeAgents, c.wakeRate, c.wakeConc, strconv.Itoa(n))
		st.BackgroundDone = float64(b.replies.Load()-r0) / time.Since(t0).Seconds()
		if stages != nil {
			bd := stages.breakdown(ctx, 2*time.Second)
			st.WakeStages = &bd
			logf("wake-up stages: %s", bd)
		}
		logf("wake-up of %d idle agents: p50 %.2f ms, p99 %.2f ms, max %.2f ms (POST p99 %.2f ms, model %.2f ms; errors %d); background %.0f/s done",
			st.Wake.N, st.Wake.P50, st.Wake.P99, st.Wake.Max, st.Wake.PostP99, st.Wake.ModelMS, st.Wake.Errors, st.BackgroundDone)
		st.RSSAfterWake = p.rss()
		if !last {
			b.stop()
			a.stop()
			if err := p.stop(); err != nil {
				return err
			}
			res.Steps = append(res.Steps, st)
			continue
		}
		// the kill -9, with the background load and a burst of messages in flight
		killIdx := pick(rng, 0, n, c.killMessages, taken)
		rec, err := killAndRecover(ctx, c, p, a, b, cfg, killIdx)
		if err != nil {
			return err
		}
		res.Steps = append(res.Steps, st)
		res.RecoveryReadySeconds, res.RecoveryConsumedSeconds = rec.ready, rec.consumed
		res.MessagesInFlight, res.MessagesLost = rec.inFlight, rec.lost
		logf("recovery: ready in %.2f s, every accepted message answered %.2f s after the restart; %d in flight, %d lost",
			rec.ready, rec.consumed, rec.inFlight, rec.lost)
	}
	final := res.Steps[len(res.Steps)-1]
	res.RSSBytesPerIdleAgent, res.DiskBytesPerAgent = final.RSSPerIdleAgent, final.DiskPerAgent
	res.WakeP50MS, res.WakeP99MS, res.WakeMaxMS, res.WakeModelMS, res.WakeN = final.Wake.P50, final.Wake.P99, final.Wake.Max, final.Wake.ModelMS, final.Wake.N
	res.DurableRate, res.BackgroundRate = final.DurableRate, final.BackgroundRate
	if final.WakeStages != nil {
		share := final.WakeStages.P99CommitShare
		res.WakeP99CommitShare = &share
	}
	for _, v := range final.PageMS {
		res.ThreadsPageMS = max(res.ThreadsPageMS, v)
	}
	if c.memAgents > 0 {
		m, err := memoryRun(ctx, c, work, rng)
		if err != nil {
			return err
		}
		res.Memory, res.MemoryAgents, res.MemoryRate = m.wake, m.agents, m.rate
		res.MemoryWakeP50MS, res.MemoryWakeP99MS, res.MemoryWakeMaxMS = m.wake.P50, m.wake.P99, m.wake.Max
	}
	res.Load = loadavg()
	if c.chart != "" {
		if err := os.WriteFile(c.chart, []byte(chart(&res)), 0o644); err != nil {
			return err
		}
	}
	if res.Fsync != nil {
		fmt.Printf("# fsync probe: p50 %.2f / p99 %.2f / max %.2f ms; wake-up p50 %.2f / p99 %.2f ms at %d agents", res.FsyncP50MS, res.FsyncP99MS, res.FsyncMaxMS, res.WakeP50MS, res.WakeP99MS, res.Agents)
		if res.WakeP99CommitShare != nil {
			fmt.Printf("; serve's commit stage (the journal's queue, group write and sync) is %.0f%% of the wake-ups at or above p99", 100**res.WakeP99CommitShare)
		}
		fmt.Println()
	}
	line, _ := json.Marshal(res)
	if err := os.MkdirAll(c.out, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(c.out, fmt.Sprintf("million-%d.json", c.agents)), append(line, '\n'), 0o644)
	}
	fmt.Println(string(line))
	return nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load average unknown"
	}
	return "load average " + strings.Join(f[:3], " ")
}

// runFsyncOnly is -fsync-probe-only: the probe alone, its summary and a
// JSON line with the same fsync fields as a full run's.
func runFsyncOnly(c config) error {
	dir := c.data
	if dir == "" {
		work, err := os.MkdirTemp("", "million-fsync-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(work)
		dir = work
	}
	fs, err := probeFsync(dir, c.fsyncN, c.fsyncBytes, disk.SyncData)
	if err != nil {
		return err
	}
	fmt.Printf("# agentslice million -fsync-probe-only: %s, in %s; %s; %s\n", fs, dir, hostinfo.Machine(), loadavg())
	line, _ := json.Marshal(struct {
		P50     float64    `json:"fsync_p50_ms"`
		P99     float64    `json:"fsync_p99_ms"`
		Max     float64    `json:"fsync_max_ms"`
		Fsync   fsyncStats `json:"fsync"`
		Dir     string     `json:"dir"`
		Machine string     `json:"machine"`
		Load    string     `json:"load"`
		Date    string     `json:"date"`
	}{fs.P50, fs.P99, fs.Max, fs, dir, hostinfo.Machine(), loadavg(), time.Now().UTC().Format(time.RFC3339)})
	fmt.Println(string(line))
	return nil
}
