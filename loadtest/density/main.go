// Command density is agentslice's density benchmark: N agents × T turns on
// the embedded runtime (in-memory stores, simulated model, an asynchronous
// tool whose results come back through the input queue), launched in waves,
// with the resident memory sampled after each wave once its agents are idle.
// It reproduces the workload of Infinity's agent_scale benchmark so that the
// figures compare, and runs the conventional design beside it.
//
//	go run ./loadtest/density -agents 80000 -turns 20 -profile infinity
//
// Output: a progress bar on stderr, the CSV "agents,rss_bytes" and a summary
// on stdout, then one final JSON line; CSV, JSON and an SVG chart are also
// written to -out.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/schollz/progressbar/v3"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/timeline"
	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

type config struct {
	agents, turns, wave int
	profile             string
	out                 string
	baselineAgents      int
	baselineChild       bool
	progress            bool
	cpuProfile          string
	memProfile          string
	mutexProfile        string
	scaling             bool
	store, data         string
	heldEachWave        bool
	traceRatio          float64
	codecUs             float64 // -codec-us
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
		fmt.Fprintf(os.Stderr, "density: ignoring %s=%q: not a number\n", name, v)
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if v := os.Getenv(name); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
		fmt.Fprintf(os.Stderr, "density: ignoring %s=%q: not a number\n", name, v)
	}
	return def
}

func envStr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// usageText is what density -h prints before the flags.
const usageText = `density: agentslice's density benchmark.

It runs N agents of T turns each on the embedded runtime (the in-memory store,
or serve's durable store with -store sqlite; the simulated model; an
asynchronous tool whose results come back through the input queue), launched
in waves of -wave agents. After each wave, once its
agents are idle, it freezes their history and samples the resident memory (RSS,
after a GC that returns freed memory to the OS; see -held-rss): the CSV
"agents,rss_bytes" on stdout is that series. The workload
is Infinity's agent_scale benchmark (profile "infinity": the same fixed texts
in every agent, as there; "unique": different prose for every agent and turn),
so the bytes per idle agent compare with Infinity's published figures. Unless
-baseline-agents is -1, a child process then measures the conventional design
(one goroutine and one in-memory conversation per waiting agent) on
min(agents, 10000) agents.

It reports the bytes per idle agent, completions per second and per CPU-second,
and the history size, and writes CSV, JSON and an SVG chart to -out. Speed
figures depend on the machine, which the output names; memory figures much less.

usage: go run ./loadtest/density [flags]

`

func main() {
	var c config
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), usageText)
		flag.PrintDefaults()
	}
	flag.IntVar(&c.agents, "agents", envInt("AGENTS", 10000), "number of agents (env AGENTS)")
	flag.StringVar(&c.store, "store", envStr("STORE", "memory"), "memory, or sqlite: the durable store of serve (env STORE)")
	flag.StringVar(&c.data, "data", "", "data directory of -store sqlite (default: a temporary one, removed at the end)")
	flag.IntVar(&c.turns, "turns", envInt("TURNS", 20), "turns per agent (env TURNS)")
	flag.IntVar(&c.wave, "wave", envInt("WAVE", 500), "agents launched per wave (env WAVE)")
	flag.StringVar(&c.profile, "profile", envStr("PROFILE", "infinity"), "infinity or unique (env PROFILE)")
	flag.StringVar(&c.out, "out", "loadtest/results", "directory for CSV, JSON and the chart")
	flag.IntVar(&c.baselineAgents, "baseline-agents", 0, "agents in the conventional-design baseline (default min(agents, 10000); -1 skips it)")
	flag.BoolVar(&c.baselineChild, "baseline-child", false, "internal: run as the baseline child process")
	flag.BoolVar(&c.progress, "progress", true, "show a progress bar on stderr")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	flag.StringVar(&c.memProfile, "memprofile", "", "write a heap profile (idle agents) to this file")
	flag.StringVar(&c.mutexProfile, "mutexprofile", "", "write a mutex contention profile of the run (every contended lock sampled) to this file")
	flag.BoolVar(&c.heldEachWave, "held-rss", false, "sample the RSS of every wave but the last as the process holds it, without the GC and FreeOSMemory that the next wave pays for by faulting the returned memory in again (about 10% of the CPU of the infinity profile); the last sample, the figure per idle agent, is taken after them as always")
	flag.BoolVar(&c.scaling, "scaling", false, "run the profile at GOMAXPROCS=1 and at every core, each in a child process, and print one JSON line comparing them")
	flag.Float64Var(&c.codecUs, "codec-us", 0, "the cold tier's codec alone, CPU-µs per completion, as make bench-codec measures it for the level the store keeps (0: the store's freezing, timed before the run); the run prints its completions/s as a fraction of 1 / (codec µs + slice µs), the slice µs measured before the run on a store that never freezes")
	flag.Float64Var(&c.traceRatio, "trace-ratio", envFloat("TRACE_RATIO", 0), "trace the slices with OpenTelemetry, sampling this share of the turns (parentbased_traceidratio), into a batching span processor whose exporter discards (env TRACE_RATIO; 0: tracing off, as by default)")
	flag.Parse()
	if err := c.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "density:", err)
		os.Exit(2)
	}
	if c.baselineChild {
		if err := runBaselineChild(c.agents, c.turns, c.profile); err != nil {
			fmt.Fprintln(os.Stderr, "density baseline:", err)
			os.Exit(1)
		}
		return
	}
	if c.scaling {
		if err := runScaling(c); err != nil {
			fmt.Fprintln(os.Stderr, "density:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "density:", err)
		os.Exit(1)
	}
}

func (c *config) validate() error {
	switch {
	case c.agents <= 0:
		return fmt.Errorf("-agents must be positive, got %d", c.agents)
	case c.turns <= 0:
		return fmt.Errorf("-turns must be positive, got %d", c.turns)
	case c.wave <= 0:
		return fmt.Errorf("-wave must be positive, got %d", c.wave)
	case c.profile != "infinity" && c.profile != "unique":
		return fmt.Errorf("-profile must be infinity or unique, got %q", c.profile)
	case c.store != "" && c.store != "memory" && c.store != "sqlite":
		return fmt.Errorf("-store must be memory or sqlite, got %q", c.store)
	case c.traceRatio < 0 || c.traceRatio > 1:
		return fmt.Errorf("-trace-ratio must be from 0 to 1, got %v", c.traceRatio)
	}
	if c.baselineAgents == 0 {
		c.baselineAgents = min(c.agents, 10000)
	}
	return nil
}

// Result is the final JSON line.
type Result struct {
	Profile                 string  `json:"profile"`
	Agents                  int     `json:"agents"`
	Turns                   int     `json:"turns"`
	Wave                    int     `json:"wave"`
	Completions             int64   `json:"completions"`
	Seconds                 float64 `json:"seconds"`
	CompletionsPerSec       float64 `json:"completions_per_sec"`
	FreezeSeconds           float64 `json:"freeze_seconds"`
	CPUSeconds              float64 `json:"cpu_seconds"`
	CompletionsPerCPUSec    float64 `json:"completions_per_cpu_sec"`
	CPUMicrosPerCompletion  float64 `json:"cpu_us_per_completion"`
	AllocsPerCompletion     float64 `json:"allocs_per_completion"`
	AllocBytesPerCompletion float64 `json:"alloc_bytes_per_completion"`
	GCCPUShare              float64 `json:"gc_cpu_share"`
	RSSBytes                int64   `json:"rss_bytes"`
	BaselineRSSBytes        int64   `json:"baseline_rss_bytes"`
	BytesPerIdleAgent       int64   `json:"bytes_per_idle_agent"`
	HistoryBytesPerAgentRaw int64   `json:"history_bytes_per_agent_raw"`
	StoredBytesPerAgent     int64   `json:"stored_bytes_per_agent"`
	Store                   string  `json:"store"`
	DiskBytesPerAgent       int64   `json:"disk_bytes_per_agent,omitempty"`
	// JournalSyncs and JournalRecords count the sqlite store's group
	// commits (one write and one fdatasync each) and the records in them.
	JournalSyncs   int64 `json:"journal_syncs,omitempty"`
	JournalRecords int64 `json:"journal_records,omitempty"`
	// JournalBytes is what those groups wrote.
	JournalBytes int64 `json:"journal_bytes,omitempty"`
	// JournalFileBytes is the size of the journal's files after the run's
	// last checkpoint: the open segment and the spare (reused blocks), a
	// fixed cost not divided among the agents.
	JournalFileBytes        int64   `json:"journal_file_bytes,omitempty"`
	AgentHistoryZstdRatio   float64 `json:"agent_history_zstd_ratio"`
	ConventionalBytesPerAgt int64   `json:"conventional_bytes_per_waiting_agent,omitempty"`
	ConventionalRatio       float64 `json:"conventional_over_agentslice,omitempty"`
	// ConventionalAgents is how many agents the baseline measured; the
	// chart extrapolates its per-agent figure to Agents.
	ConventionalAgents int    `json:"conventional_agents_measured,omitempty"`
	GOMAXPROCS         int    `json:"gomaxprocs"`
	Machine            string `json:"machine"`
	Goroutines         int    `json:"goroutines_when_idle"`
	DeadLetters        int    `json:"dead_letters"`
	Verified           bool   `json:"history_verified"`
	// TraceRatio is -trace-ratio: the share of turns traced (0: off).
	TraceRatio       float64 `json:"trace_ratio,omitempty"`
	HeapLivePerAgent int64   `json:"heap_live_bytes_per_agent"`
	HeapSpanPerAgent int64   `json:"heap_inuse_span_bytes_per_agent"`
	// CodecUs and SliceUs are CPU-µs per completion of the cold tier's
	// codec and of a slice, each measured apart from the run
	// (calibrate.go; CodecUsFrom and SliceUsFrom say how); CodecBound is
	// 1 / (CodecUs + SliceUs), completions per second, and
	// CodecBoundFraction the run's completions/s over it. RunFreezeUs and
	// RunSliceUs are the run's own CPU per completion, freezing and the
	// rest, for comparison.
	CodecUs            float64 `json:"codec_us_per_completion,omitempty"`
	CodecUsFrom        string  `json:"codec_us_from,omitempty"`
	SliceUs            float64 `json:"slice_us_per_completion,omitempty"`
	SliceUsFrom        string  `json:"slice_us_from,omitempty"`
	RunFreezeUs        float64 `json:"run_freeze_us_per_completion,omitempty"`
	RunSliceUs         float64 `json:"run_rest_us_per_completion,omitempty"`
	CodecBound         float64 `json:"codec_bound_completions_per_sec,omitempty"`
	CodecBoundFraction float64 `json:"fraction_of_codec_bound,omitempty"`
	// Time is where the workload's time went (internal/timeline), over
	// every agent's history, read after the measurements.
	Time *timeline.Stats `json:"time,omitempty"`
}

type sample struct {
	agents int
	rss    int64
}

func run(c config) error {
	w := newWorkload(c.profile)
	opened, err := openStore(c)
	if err != nil {
		return err
	}
	defer opened.close()
	store := opened.store
	// The codec bound's inputs, each measured apart from the run, before
	// it (calibrate.go).
	var cal calibration
	if c.store == "" || c.store == "memory" {
		if cal, err = calibrate(c, w); err != nil {
			return err
		}
	}
	var completions atomic.Int64
	tracing := discardTracing(c.traceRatio)
	defer func() { _ = tracing.Shutdown(context.Background()) }()
	sys, d, err := startSystem(c, w, store, opened.inbox, tracing.Tracer(), &completions)
	if err != nil {
		return err
	}
	defer sys.Stop()

	base := rss()
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if c.mutexProfile != "" {
		goruntime.SetMutexProfileFraction(1)
	}
	var heap0 goruntime.MemStats
	goruntime.ReadMemStats(&heap0)
	total := int64(c.agents) * int64(c.turns) * 2
	bar := startBar(c.progress, total, &completions)
	fmt.Printf("# agentslice density: profile=%s store=%s agents=%d turns=%d wave=%d (%d completions); %s\n",
		c.profile, c.store, c.agents, c.turns, c.wave, total, hostinfo.Machine())
	fmt.Println("agents,rss_bytes")
	var samples []sample
	var busy, freeze, freezeCPU, cpu time.Duration
	var stats runStats
	for start := 0; start < c.agents; start += c.wave {
		n := min(c.wave, c.agents-start)
		t0, c0, s0 := time.Now(), hostinfo.CPUTime(), readRunStats()
		d.launch(start, n)
		<-d.done
		select {
		case <-sys.Idle():
		case <-time.After(time.Minute):
			return errors.New("threads still active a minute after their wave finished")
		}
		t1, fc := time.Now(), hostinfo.CPUTime()
		store.FreezeIdle(0)
		freeze += time.Since(t1)
		freezeCPU += hostinfo.CPUTime() - fc
		busy += time.Since(t0)
		cpu += hostinfo.CPUTime() - c0
		stats.add(readRunStats().sub(s0))
		var r int64
		if c.heldEachWave && start+n < c.agents {
			r = heldRSS()
		} else {
			r = rss()
		}
		samples = append(samples, sample{start + n, r})
		bar.println(fmt.Sprintf("%d,%d", start+n, r))
	}
	bar.stop()
	// The heap profile of the idle population, taken now: verify and the
	// time accounting below thaw every agent.
	if c.memProfile != "" {
		if err := writeHeapProfile(c.memProfile); err != nil {
			return err
		}
	}
	if f := d.failures.Load(); f > 0 {
		return fmt.Errorf("%d agents ended with an error output; first: %s", f, d.firstErr())
	}

	res := Result{Profile: c.profile, Agents: c.agents, Turns: c.turns, Wave: c.wave, Completions: completions.Load(),
		Seconds: busy.Seconds(), FreezeSeconds: freeze.Seconds(), GOMAXPROCS: goruntime.GOMAXPROCS(0), Machine: hostinfo.Machine(), TraceRatio: c.traceRatio}
	res.CompletionsPerSec = float64(res.Completions) / res.Seconds
	res.CPUSeconds = cpu.Seconds()
	res.CompletionsPerCPUSec = float64(res.Completions) / res.CPUSeconds
	res.CPUMicrosPerCompletion = res.CPUSeconds * 1e6 / float64(res.Completions)
	res.codecBound(cal, freezeCPU)
	res.AllocsPerCompletion = float64(stats.allocObjects) / float64(res.Completions)
	res.AllocBytesPerCompletion = float64(stats.allocBytes) / float64(res.Completions)
	if stats.usedCPU > 0 {
		res.GCCPUShare = stats.gcCPU / stats.usedCPU
	}
	res.RSSBytes = samples[len(samples)-1].rss
	res.BaselineRSSBytes = base
	res.BytesPerIdleAgent = (res.RSSBytes - base) / int64(c.agents)
	st := store.Stats()
	res.HistoryBytesPerAgentRaw = int64(st.RawBytes) / int64(c.agents)
	res.StoredBytesPerAgent = int64(st.ColdBytes+st.HotBytes) / int64(c.agents)
	res.Store = c.store
	dbBytes, journalBytes := opened.diskBytes()
	res.DiskBytesPerAgent, res.JournalFileBytes = dbBytes/int64(c.agents), journalBytes
	if opened.db != nil {
		js := opened.db.JournalStats()
		res.JournalSyncs, res.JournalRecords, res.JournalBytes = js.Syncs, js.Records, js.Bytes
	}
	res.Goroutines = goruntime.NumGoroutine()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	res.HeapLivePerAgent = int64(ms.HeapAlloc-heap0.HeapAlloc) / int64(c.agents)
	res.HeapSpanPerAgent = int64(ms.HeapInuse-heap0.HeapInuse) / int64(c.agents)
	_, res.DeadLetters = sys.DeadLetters()
	if res.Completions != total {
		return fmt.Errorf("ran %d completions, want %d", res.Completions, total)
	}
	ratio, err := verify(store, w, c)
	if err != nil {
		return fmt.Errorf("history check failed: %w", err)
	}
	res.Verified, res.AgentHistoryZstdRatio = true, ratio
	if res.Time, err = timeOf(store, c); err != nil {
		return fmt.Errorf("reading the time accounting: %w", err)
	}

	if c.baselineAgents > 0 {
		b, err := runBaseline(c.baselineAgents, c.turns, c.profile)
		if err != nil {
			return err
		}
		res.ConventionalBytesPerAgt, res.ConventionalAgents = b.BytesPerAgent, c.baselineAgents
		if res.BytesPerIdleAgent > 0 {
			res.ConventionalRatio = float64(b.BytesPerAgent) / float64(res.BytesPerIdleAgent)
		}
	}
	if c.mutexProfile != "" {
		if err := writeProfile("mutex", c.mutexProfile); err != nil {
			return err
		}
	}
	summary(os.Stdout, &res)
	if err := writeResults(c.out, &res, samples); err != nil {
		return err
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
	return nil
}

// writeProfile writes the named runtime/pprof profile to path.
func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeHeapProfile writes a heap profile (after a collection) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	goruntime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// startSystem starts the embedded system of a run on store, with the
// workload's model (counting its completions), tool and users.
func startSystem(c config, w *workload, store runtime.HistoryStore, inbox local.Inbox, tracer runtime.Tracer, completions *atomic.Int64) (*local.System, *driver, error) {
	d := &driver{w: w, turns: c.turns, done: make(chan struct{}, 1)}
	tb := runtime.NewToolbox()
	sys, err := local.New(local.Config{
		Tracer:  tracer,
		Model:   countingModel{w.model(), completions},
		Tools:   tb,
		History: store,
		Output:  local.OutputFunc(d.publish),
		// The default observer (slog at the logger's level, as in serve):
		// it wants no event of a slice that went well, so none is built.
		Inbox:  inbox,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return nil, nil, err
	}
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: toolName, Description: "Run a shell command."}, Async: &tool{w: w, q: sys}})
	d.sys = sys
	if err := sys.Start(context.Background()); err != nil {
		return nil, nil, err
	}
	return sys, d, nil
}

// countingModel counts the completions its model streamed in full (the
// progress bar and the total check read it).
type countingModel struct {
	runtime.Model
	n *atomic.Int64
}

func (m countingModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	err := m.Model.Complete(ctx, req, w)
	if err == nil {
		m.n.Add(1)
	}
	return err
}

// driver plays the users: on each agent's reply it sends the next turn.
type driver struct {
	w     *workload
	sys   *local.System
	turns int
	// turn counts each agent's turns. It is filled before a wave starts
	// and only read during it, so the users take no shared lock.
	turn    map[string]*atomic.Int32
	pending atomic.Int64
	done    chan struct{}

	failures atomic.Int64
	errMu    sync.Mutex
	err      string
}

func (d *driver) launch(start, n int) {
	d.turn = make(map[string]*atomic.Int32, n)
	for i := start; i < start+n; i++ {
		d.turn[agentName(i)] = new(atomic.Int32)
	}
	d.pending.Store(int64(n))
	// The wave's users all start at once, each on its own (as clients of
	// serve would): a durable Send waits for the disk, so one loop sending
	// 500 first messages one after the other would start the last agent
	// 500 syncs after the first.
	var wg sync.WaitGroup
	for i := start; i < start+n; i++ {
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			d.next(agentName(i))
		}()
	}
	wg.Wait()
}

func (d *driver) next(agent string) {
	t := int(d.turn[agent].Add(1))
	if t > d.turns {
		if d.pending.Add(-1) == 0 {
			d.done <- struct{}{}
		}
		return
	}
	err := d.sys.Send(context.Background(), runtime.Message{ID: "u-" + strconv.Itoa(t), ThreadID: agent,
		Kind: runtime.KindUser, Text: d.w.userText(agent, t)})
	if err != nil {
		d.fail(agent, err.Error())
	}
}

func (d *driver) publish(ctx context.Context, ev runtime.OutputEvent) error {
	switch ev.Kind {
	case "reply":
		d.next(ev.ThreadID)
	case "error":
		d.fail(ev.ThreadID, ev.Text)
	}
	return nil
}

func (d *driver) fail(agent, text string) {
	d.failures.Add(1)
	d.errMu.Lock()
	if d.err == "" {
		d.err = agent + ": " + text
	}
	d.errMu.Unlock()
	if d.pending.Add(-1) == 0 {
		d.done <- struct{}{}
	}
}

func (d *driver) firstErr() string {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return d.err
}

// progress is the progress bar on stderr. CSV rows go through println,
// which clears the bar first, so rows and bar never share a line.
type progress struct {
	mu   sync.Mutex // orders the bar's renders and the rows
	bar  *progressbar.ProgressBar
	quit chan struct{}
	wg   sync.WaitGroup
}

// startBar shows completions done of total, with the mean rate since the
// start (the bar's own rate jumps with each wave).
func startBar(show bool, total int64, n *atomic.Int64) *progress {
	p := &progress{}
	if !show {
		return p
	}
	p.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription("completions"),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetPredictTime(false))
	p.quit = make(chan struct{})
	start := time.Now()
	update := func() {
		done := n.Load()
		rate := float64(done) / max(time.Since(start).Seconds(), 1e-3)
		p.bar.Describe(fmt.Sprintf("completions (%s/s)", humanRate(rate)))
		_ = p.bar.Set64(done)
	}
	p.wg.Add(1)
	go func() { // owned by stop, which waits
		defer p.wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				p.mu.Lock()
				update()
				_ = p.bar.Finish()
				p.mu.Unlock()
				return
			case <-t.C:
				p.mu.Lock()
				update()
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// println prints a line on stdout without breaking the bar's line.
func (p *progress) println(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Println(line)
}

func (p *progress) stop() {
	if p.quit != nil {
		close(p.quit)
		p.wg.Wait()
	}
}

func humanRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.0fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// verify reloads the first and the last agent from the (frozen) store and
// checks every item against what the workload sent and streamed: the
// compact idle form must be lossless. It returns the zstd ratio of the first
// agent's history as JSON.
func verify(store runtime.HistoryStore, w *workload, c config) (float64, error) {
	var ratio float64
	for _, i := range []int{0, c.agents - 1} {
		name := agentName(i)
		th, err := store.Load(context.Background(), name)
		if err != nil {
			return 0, err
		}
		if len(th.Items) != c.turns*5 {
			return 0, fmt.Errorf("%s has %d items, want %d", name, len(th.Items), c.turns*5)
		}
		for t := 1; t <= c.turns; t++ {
			it := th.Items[(t-1)*5:]
			if it[0].Kind != runtime.ItemUser || it[0].Text != w.userText(name, t) {
				return 0, fmt.Errorf("%s turn %d: user item %q", name, t, trimTo(it[0].Text, 60))
			}
			if it[1].Kind != runtime.ItemAssistant || len(it[1].Text) != chunks*chunkBytes ||
				it[2].Kind != runtime.ItemToolCall || it[2].Args != toolArgs ||
				it[3].Kind != runtime.ItemToolResult || it[3].CallID != it[2].CallID || it[3].Text != w.resultText(runtime.Invocation{ThreadID: name, CallID: it[2].CallID}) ||
				it[4].Kind != runtime.ItemAssistant || len(it[4].Text) != chunks*chunkBytes {
				return 0, fmt.Errorf("%s turn %d: unexpected items:\n%+v\n%+v\n%+v\n%+v", name, t, it[1], it[2], it[3], it[4])
			}
		}
		if i == 0 {
			raw, _ := json.Marshal(th.Items)
			enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
			ratio = float64(len(raw)) / float64(len(enc.EncodeAll(raw, nil)))
			enc.Close()
		}
	}
	return ratio, nil
}

// timeOf is where the time of every agent's history went.
func timeOf(store runtime.HistoryStore, c config) (*timeline.Stats, error) {
	agg := timeline.NewAggregate("tool")
	for i := range c.agents {
		th, err := store.Load(context.Background(), agentName(i))
		if err != nil {
			return nil, err
		}
		agg.Add("", timeline.Of(th.Own(), 0))
	}
	st := agg.Stats()
	return &st, nil
}

func summary(out io.Writer, r *Result) {
	fmt.Fprintf(out, "# %d completions in %.1f s = %.0f completions/s (freezing idle histories: %.2f s of it); %.1f CPU-s = %.0f completions per CPU-second\n",
		r.Completions, r.Seconds, r.CompletionsPerSec, r.FreezeSeconds, r.CPUSeconds, r.CompletionsPerCPUSec)
	if r.CodecBound > 0 {
		fmt.Fprintf(out, "# codec bound: 1 / (%.2f codec µs [%s] + %.2f slice µs [%s]) = %.0f completions/s; this run did %.3f of it (its own CPU per completion: freezing %.2f µs, the rest %.2f µs)\n",
			r.CodecUs, r.CodecUsFrom, r.SliceUs, r.SliceUsFrom, r.CodecBound, r.CodecBoundFraction, r.RunFreezeUs, r.RunSliceUs)
	}
	fmt.Fprintf(out, "# per completion: %.2f CPU-µs, %.1f heap allocations (%.0f bytes); the garbage collector took %.1f%% of the CPU time\n",
		r.CPUMicrosPerCompletion, r.AllocsPerCompletion, r.AllocBytesPerCompletion, 100*r.GCCPUShare)
	fmt.Fprintf(out, "# RSS %.1f MB with %d idle agents (baseline %.1f MB): %d bytes per idle agent\n",
		float64(r.RSSBytes)/1e6, r.Agents, float64(r.BaselineRSSBytes)/1e6, r.BytesPerIdleAgent)
	fmt.Fprintf(out, "# where it goes per agent: %d bytes live heap, %d bytes in in-use heap spans (the rest of RSS is runtime and fragmentation)\n",
		r.HeapLivePerAgent, r.HeapSpanPerAgent)
	fmt.Fprintf(out, "# history per agent: %d bytes raw, %d bytes stored; one agent's history compresses %.1fx with zstd\n",
		r.HistoryBytesPerAgentRaw, r.StoredBytesPerAgent, r.AgentHistoryZstdRatio)
	if r.DiskBytesPerAgent > 0 {
		fmt.Fprintf(out, "# store %s: %d bytes on disk per agent (database and WAL after a checkpoint), plus %.1f MB of journal files (open segment and spare, a fixed cost); every commit and accepted message fsynced: %d journal syncs of %.1f records on average, %d journal bytes per completion\n",
			r.Store, r.DiskBytesPerAgent, float64(r.JournalFileBytes)/1e6, r.JournalSyncs, float64(r.JournalRecords)/float64(max(1, r.JournalSyncs)), r.JournalBytes/max(1, r.Completions))
	}
	if r.ConventionalBytesPerAgt > 0 {
		fmt.Fprintf(out, "# conventional design (goroutine per agent, history in a slice): %d bytes per waiting agent, %.1fx ours\n",
			r.ConventionalBytesPerAgt, r.ConventionalRatio)
	}
	if t := r.Time; t != nil {
		fmt.Fprintf(out, "# where the time goes (committed history, %d agents): wait fraction %.1f%% of %.1f agent-seconds active; ", t.Threads, 100*t.WaitFraction, t.Totals.Active())
		for _, c := range timeline.Causes {
			if c != timeline.Idle && t.Totals[c] > 0 {
				fmt.Fprintf(out, "%s %.1f s, ", c, t.Totals[c])
			}
		}
		fmt.Fprintf(out, "queue delay p50 %.3f s p99 %.3f s, tool latency p50 %.3f s p99 %.3f s\n", t.QueueDelay.P50, t.QueueDelay.P99, t.ToolLatency.P50, t.ToolLatency.P99)
	}
	fmt.Fprintf(out, "# reference: Infinity published ~154 KB per idle agent (50,000 x 20), later ~100 KB (80,000 x 20); ~7,800 completions/s on one EPYC thread\n")
}

func writeResults(dir string, r *Result, samples []sample) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, fmt.Sprintf("density-%s-%d", r.Profile, r.Agents))
	csv := "agents,rss_bytes\n"
	for _, s := range samples {
		csv += fmt.Sprintf("%d,%d\n", s.agents, s.rss)
	}
	js, _ := json.MarshalIndent(r, "", "  ")
	for name, data := range map[string][]byte{base + ".csv": []byte(csv), base + ".json": js, base + ".svg": []byte(chart(r, samples))} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("# wrote %s.{csv,json,svg}\n", base)
	return nil
}
