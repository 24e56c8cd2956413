package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

// The sleepers phase (-sleepers N): N agents each in a sleep whose
// wake-up is due at a time spread evenly over -sleep-spread from
// -sleep-lead after the population starts; then the real serve restarts
// on the directory and the phase reports serve's time to ready, its RSS
// per sleeping agent, how many timers it armed at start and how many it
// left for later (limits.timer_horizon), and the lateness of the wake-ups
// that fall due in the -sleep-watch after it is ready: from the timer's
// time to the sleep's result in history.

type sleepConfig struct {
	n                   int
	spread, lead, watch time.Duration
	horizon             string // serve's limits.timer_horizon ("": its default)
}

// SleepResult is the phase's JSON line.
type SleepResult struct {
	Sleepers          int     `json:"sleepers"`
	SpreadSeconds     float64 `json:"sleep_spread_seconds"`
	TimerHorizon      string  `json:"timer_horizon"`
	PopulateSeconds   float64 `json:"populate_seconds"`
	DiskBytesPerAgent int64   `json:"disk_bytes_per_agent"`
	ReadySeconds      float64 `json:"serve_ready_seconds"`
	BaselineRSSBytes  int64   `json:"serve_baseline_rss_bytes"`
	RSSBytes          int64   `json:"serve_rss_bytes"`
	RSSPerSleeper     int64   `json:"rss_bytes_per_sleeping_agent"`
	RSSAfterWatch     int64   `json:"serve_rss_bytes_after_watch"`
	ArmedAtStart      int     `json:"timers_armed_at_start"`
	LaterAtStart      int     `json:"timers_left_for_later"`
	DueAtStart        int     `json:"wakes_due_before_ready"`
	Watched           int     `json:"wakes_due_in_watch"`
	Woken             int     `json:"wakes_seen"`
	Missing           int     `json:"wakes_missing"`
	LateP50MS         float64 `json:"wake_lateness_p50_ms"`
	LateP99MS         float64 `json:"wake_lateness_p99_ms"`
	LateMaxMS         float64 `json:"wake_lateness_max_ms"`
	Machine           string  `json:"machine"`
	Load              string  `json:"load"`
	Date              string  `json:"date"`
}

func runSleepers(ctx context.Context, c config, sc sleepConfig) error {
	work, err := os.MkdirTemp("", "million-sleepers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	data := c.data
	if data == "" {
		data = filepath.Join(work, "data")
	} else if !c.keep {
		defer os.RemoveAll(data)
	}
	if c.bin == "" {
		logf("building ./cmd/agentslice")
		if c.bin, err = buildServe(ctx, work); err != nil {
			return err
		}
	}
	res := SleepResult{Sleepers: sc.n, SpreadSeconds: sc.spread.Seconds(), TimerHorizon: sc.horizon, Machine: hostinfo.Machine(),
		Date: time.Now().UTC().Format(time.RFC3339)}
	if res.TimerHorizon == "" {
		res.TimerHorizon = "default"
	}
	if res.BaselineRSSBytes, err = baselineRSS(ctx, c.bin, work, sc.horizon); err != nil {
		return err
	}
	logf("populating %d sleeping agents (due over %v from %v after the start)", sc.n, sc.spread, sc.lead)
	t0 := time.Now()
	if err := populateSleepers(ctx, data, sc, rand.New(rand.NewPCG(c.seed, 36))); err != nil {
		return err
	}
	res.PopulateSeconds = time.Since(t0).Seconds()
	res.DiskBytesPerAgent = dirBytes(data, func(string) bool { return true }) / int64(sc.n)
	due, err := dueTimes(data)
	if err != nil {
		return err
	}
	logf("populated in %.1f s, %d timers stored, %d bytes on disk per agent; starting serve", res.PopulateSeconds, len(due), res.DiskBytesPerAgent)

	cfg, err := sleepServeConfig(work, data, sc.horizon)
	if err != nil {
		return err
	}
	p, err := startServe(ctx, c.bin, cfg, nil)
	if err != nil {
		return err
	}
	defer p.kill()
	ready := p.started.Add(p.ready)
	res.ReadySeconds = p.ready.Seconds()
	time.Sleep(3 * time.Second)
	res.RSSBytes = p.rss()
	res.RSSPerSleeper = (res.RSSBytes - res.BaselineRSSBytes) / int64(sc.n)
	res.ArmedAtStart, res.LaterAtStart = rearmed(p.logs.String())
	logf("serve ready in %.2f s; RSS %.1f MB (%d bytes per sleeping agent); %d timers armed at start, %d left for later",
		res.ReadySeconds, float64(res.RSSBytes)/1e6, res.RSSPerSleeper, res.ArmedAtStart, res.LaterAtStart)

	watchEnd := ready.Add(sc.watch)
	time.Sleep(time.Until(watchEnd.Add(10 * time.Second))) // the last ones' slices finish
	res.RSSAfterWatch = p.rss()
	var watched []string
	for th, at := range due {
		switch {
		case !at.After(ready):
			res.DueAtStart++
		case at.Before(watchEnd):
			watched = append(watched, th)
		}
	}
	res.Watched = len(watched)
	a := newAPI(p.url)
	var late []float64
	for _, th := range watched {
		at, ok, err := wokenAt(ctx, a, th)
		if err != nil {
			return err
		}
		if !ok {
			res.Missing++
			continue
		}
		late = append(late, float64(at.Sub(due[th]).Microseconds())/1000)
	}
	res.Woken = len(late)
	res.LateP50MS, res.LateP99MS, res.LateMaxMS = percentiles(late)
	logf("%d wakes due in the %v watched: %d seen, %d missing; lateness p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		res.Watched, sc.watch, res.Woken, res.Missing, res.LateP50MS, res.LateP99MS, res.LateMaxMS)
	if err := p.stop(); err != nil {
		return err
	}
	res.Load = loadavg()
	line, _ := json.Marshal(res)
	if err := os.MkdirAll(c.out, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(c.out, fmt.Sprintf("million-sleepers-%d.json", sc.n)), append(line, '\n'), 0o644)
	}
	fmt.Println(string(line))
	return nil
}

// baselineRSS is serve's RSS on an empty directory.
func baselineRSS(ctx context.Context, bin, work, horizon string) (int64, error) {
	dir := filepath.Join(work, "baseline")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	cfg, err := sleepServeConfig(dir, filepath.Join(work, "empty"), horizon)
	if err != nil {
		return 0, err
	}
	p, err := startServe(ctx, bin, cfg, nil)
	if err != nil {
		return 0, err
	}
	time.Sleep(3 * time.Second)
	rss := p.rss()
	return rss, p.stop()
}

// sleepServeConfig is serveConfig at log level info (the recovery line
// counts the timers armed) with the timer horizon asked for.
func sleepServeConfig(dir, data, horizon string) (string, error) {
	cfg := map[string]any{
		"listen": "127.0.0.1:0", "store": "sqlite", "data": data, "log_level": "info",
		"limits": map[string]any{"event_buffer": 1 << 16},
		"freeze": map[string]any{"every": "10s", "idle": "20s"},
	}
	if horizon != "" {
		cfg["limits"].(map[string]any)["timer_horizon"] = horizon
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "serve-sleepers.json")
	return path, os.WriteFile(path, b, 0o600)
}

var rearmedLine = regexp.MustCompile(`sleeps_rearmed=(\d+).*?timers_later=(\d+)`)

// rearmed reads serve's recovery line: the sleeps armed, the timers left.
func rearmed(log string) (armed, later int) {
	if m := rearmedLine.FindStringSubmatch(log); m != nil {
		armed, _ = strconv.Atoi(m[1])
		later, _ = strconv.Atoi(m[2])
	} else if m := regexp.MustCompile(`sleeps_rearmed=(\d+)`).FindStringSubmatch(log); m != nil {
		armed, _ = strconv.Atoi(m[1]) // a serve without a horizon
	}
	return armed, later
}

// dueTimes reads the stored timers: thread → due time.
func dueTimes(data string) (map[string]time.Time, error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, disk.FileName)+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT thread, at FROM timers`)
	if err != nil {
		return nil, fmt.Errorf("reading the timers: %w", err)
	}
	defer rows.Close()
	due := map[string]time.Time{}
	for rows.Next() {
		var th string
		var at int64
		if err := rows.Scan(&th, &at); err != nil {
			return nil, err
		}
		due[th] = time.Unix(0, at)
	}
	return due, rows.Err()
}

// wokenAt is when the thread's sleep got its result, if it has.
func wokenAt(ctx context.Context, a *api, thread string) (time.Time, bool, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"/threads/"+thread, nil)
	resp, err := a.http.Do(req)
	if err != nil {
		return time.Time{}, false, err
	}
	defer resp.Body.Close()
	var th struct {
		Items []struct {
			Kind string        `json:"kind"`
			Name string        `json:"name"`
			At   runtime.Stamp `json:"at"`
		} `json:"items"`
	}
	if resp.StatusCode != http.StatusOK {
		return time.Time{}, false, fmt.Errorf("GET /threads/%s: %s", thread, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&th); err != nil {
		return time.Time{}, false, err
	}
	for _, it := range th.Items {
		if it.Kind == "tool_result" {
			return it.At.Time(), true, nil
		}
	}
	return time.Time{}, false, nil
}

// populateSleepers makes n agents each sleep until its own time, through
// serve's durable store and the engine with the sleep tools on the
// store's timers: each agent's first message gets a model turn that
// calls sleep for the seconds left until its time.
func populateSleepers(ctx context.Context, dir string, sc sleepConfig, rng *rand.Rand) error {
	db, err := disk.Open(ctx, dir, disk.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now().Add(sc.lead)
	m := &sleeperModel{wake: make(map[string]time.Time, sc.n)}
	for i := range sc.n {
		m.wake[agentName(i)] = start.Add(time.Duration(rng.Float64() * float64(sc.spread)))
	}
	timers := db.Timers(nil)
	tb := runtime.NewToolbox()
	var failures atomic.Int64
	var firstErr atomic.Value
	sys, err := local.New(local.Config{
		Model: m, Tools: tb, History: db.History(), Inbox: db.Inbox(),
		Output: local.OutputFunc(func(_ context.Context, ev runtime.OutputEvent) error {
			if ev.Kind == "error" && failures.Add(1) == 1 {
				firstErr.Store(ev.ThreadID + ": " + ev.Text)
			}
			return nil
		}),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	timers.Queue = sys
	for _, e := range runtime.SleepTools(timers, nil) {
		tb.MustAdd(e)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := sys.Start(sctx); err != nil {
		return err
	}
	defer timers.Stop() // the rows stay: serve re-arms them
	defer sys.Stop()
	last := time.Now()
	for from := 0; from < sc.n; from += wave {
		n := min(wave, sc.n-from)
		for i := from; i < from+n; i++ {
			if err := sys.Send(ctx, runtime.Message{ID: "u-1", ThreadID: agentName(i), Kind: runtime.KindUser,
				Text: "Sleep until your time, then tell me."}); err != nil {
				return err
			}
		}
		for deadline := time.Now().Add(time.Minute); m.calls.Load() < int64(from+n) && failures.Load() == 0; {
			if time.Now().After(deadline) {
				return fmt.Errorf("populate: %d sleeps called a minute after wave %d was sent, want %d", m.calls.Load(), from, from+n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case <-sys.Idle():
		case <-time.After(time.Minute):
			return errors.New("populate: sleepers still active a minute after their wave")
		}
		db.History().FreezeIdle(0)
		if f := failures.Load(); f > 0 {
			return fmt.Errorf("populate: %d agents failed; first: %v", f, firstErr.Load())
		}
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			logf("populated %d of %d sleepers", from+n, sc.n)
		}
	}
	if m.calls.Load() != int64(sc.n) {
		return fmt.Errorf("populate: %d sleeps called, want %d", m.calls.Load(), sc.n)
	}
	return nil
}

// sleeperModel answers an agent's first message with a call of sleep for
// the seconds until its wake time, and anything later with a line.
type sleeperModel struct {
	mu    sync.Mutex
	wake  map[string]time.Time
	calls atomic.Int64
}

func (m *sleeperModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	for i := range req.History {
		if req.History[i].Kind == runtime.ItemToolResult {
			w.Text("Awake.")
			return nil
		}
	}
	m.mu.Lock()
	at, ok := m.wake[req.ThreadID]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("no wake time for %s", req.ThreadID)
	}
	w.Text("I will sleep until then.")
	w.ToolCall("", "sleep", fmt.Sprintf(`{"seconds": %.3f}`, max(0.001, time.Until(at).Seconds())))
	m.calls.Add(1)
	return nil
}
