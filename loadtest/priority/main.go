// Command priority measures the embedded scheduler's priority classes: a
// flood of background threads woken at once while interactive users keep
// talking, against a simulated model provider with a realistic latency and
// a provider-style rate limit.
//
// It runs three variants: priority (the scheduler's classes and the
// model's budget), fifo (the same budget, plain arrival order) and
// no_flood (the interactive users alone), prints one line per variant and,
// last, one JSON line with the figures; it writes a JSON file and an SVG
// chart to -out. Latencies are simulated, so the figures depend little on
// the machine, but the machine is named in the output.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

type config struct {
	background  int
	users       int
	thinkMin    time.Duration
	thinkMax    time.Duration
	latency     time.Duration
	jitter      time.Duration
	concurrency int
	tpm         int
	tokens      int
	warmup      time.Duration
	noFlood     time.Duration
	out         string
}

func main() {
	var c config
	flag.IntVar(&c.background, "background", 10000, "background threads woken at once")
	flag.IntVar(&c.users, "users", 100, "interactive users, each in its own thread")
	flag.DurationVar(&c.thinkMin, "think-min", 2*time.Second, "shortest pause of a user between a reply and the next message")
	flag.DurationVar(&c.thinkMax, "think-max", 4*time.Second, "longest such pause")
	flag.DurationVar(&c.latency, "latency", 400*time.Millisecond, "the simulated model's median latency per completion")
	flag.DurationVar(&c.jitter, "jitter", 200*time.Millisecond, "spread of the latency (uniform, ± half)")
	flag.IntVar(&c.concurrency, "concurrency", 256, "the provider's concurrency limit (and the model's budget)")
	flag.IntVar(&c.tpm, "tpm", 24_000_000, "the provider's tokens-per-minute limit")
	flag.IntVar(&c.tokens, "tokens", 1000, "tokens (input + output) per completion")
	flag.DurationVar(&c.warmup, "warmup", 3*time.Second, "users alone before the flood")
	flag.DurationVar(&c.noFlood, "no-flood", 20*time.Second, "length of the no_flood run (after the warm-up)")
	flag.StringVar(&c.out, "out", "loadtest/results", "directory for the JSON result and the SVG chart")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "priority:", err)
		os.Exit(1)
	}
}

// Result is what the program prints last, as one JSON line.
type Result struct {
	InteractiveP50Priority float64 `json:"interactive_p50_ms_priority"`
	InteractiveP99Priority float64 `json:"interactive_p99_ms_priority"`
	InteractiveP50FIFO     float64 `json:"interactive_p50_ms_fifo"`
	InteractiveP99FIFO     float64 `json:"interactive_p99_ms_fifo"`
	InteractiveP50NoFlood  float64 `json:"interactive_p50_ms_no_flood"`
	InteractiveP99NoFlood  float64 `json:"interactive_p99_ms_no_flood"`
	BackgroundCPSPriority  float64 `json:"background_cps_priority"`
	BackgroundCPSFIFO      float64 `json:"background_cps_fifo"`
	BackgroundMaxWaitPrio  float64 `json:"background_max_wait_ms_priority"`
	BackgroundMaxWaitFIFO  float64 `json:"background_max_wait_ms_fifo"`
	ThrottlePriority       int64   `json:"throttle_errors_priority"`
	ThrottleFIFO           int64   `json:"throttle_errors_fifo"`
	ThrottleNoFlood        int64   `json:"throttle_errors_no_flood"`
	// Provider calls and interactive messages answered during the flood:
	// fifo answers users late and several messages per slice, so it spends
	// less of the provider's budget on them and more on background.
	CallsPriority           int64 `json:"provider_calls_priority"`
	CallsFIFO               int64 `json:"provider_calls_fifo"`
	InteractiveMsgsPriority int   `json:"interactive_messages_priority"`
	InteractiveMsgsFIFO     int   `json:"interactive_messages_fifo"`
	// The targets of issue 17, evaluated.
	P99WithinTwiceNoFlood bool    `json:"p99_within_2x_no_flood"`
	BackgroundLossPct     float64 `json:"background_throughput_loss_pct"`

	Workload   string  `json:"workload"`
	Machine    string  `json:"machine"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Seconds    float64 `json:"seconds"`
}

// variant is the outcome of one run.
type variant struct {
	name        string
	interactive []time.Duration // reply latencies of messages sent during the measured window
	bgCPS       float64
	bgMaxWait   time.Duration
	throttles   int64
	calls       int64
	seconds     float64
}

func run(c config) error {
	start, cpu0 := time.Now(), hostinfo.CPUTime()
	var vs []*variant
	for _, name := range []string{"no_flood", "priority", "fifo"} {
		v, err := runVariant(c, name)
		if err != nil {
			return fmt.Errorf("variant %s: %w", name, err)
		}
		vs = append(vs, v)
		fmt.Printf("%-8s interactive n=%d p50=%.0fms p99=%.0fms max=%.0fms; background %.1f completions/s, max wait %.0fms; "+
			"provider calls %d, throttled %d; %.1fs\n", v.name, len(v.interactive), ms(pct(v.interactive, 50)), ms(pct(v.interactive, 99)),
			ms(pct(v.interactive, 100)), v.bgCPS, ms(v.bgMaxWait), v.calls, v.throttles, v.seconds)
	}
	nf, pr, ff := vs[0], vs[1], vs[2]
	r := Result{
		InteractiveP50Priority: ms(pct(pr.interactive, 50)), InteractiveP99Priority: ms(pct(pr.interactive, 99)),
		InteractiveP50FIFO: ms(pct(ff.interactive, 50)), InteractiveP99FIFO: ms(pct(ff.interactive, 99)),
		InteractiveP50NoFlood: ms(pct(nf.interactive, 50)), InteractiveP99NoFlood: ms(pct(nf.interactive, 99)),
		BackgroundCPSPriority: round1(pr.bgCPS), BackgroundCPSFIFO: round1(ff.bgCPS),
		BackgroundMaxWaitPrio: ms(pr.bgMaxWait), BackgroundMaxWaitFIFO: ms(ff.bgMaxWait),
		ThrottlePriority: pr.throttles, ThrottleFIFO: ff.throttles, ThrottleNoFlood: nf.throttles,
		CallsPriority: pr.calls, CallsFIFO: ff.calls, InteractiveMsgsPriority: len(pr.interactive), InteractiveMsgsFIFO: len(ff.interactive),
		Workload: fmt.Sprintf("%d background threads woken at once after %s; %d interactive users, a message each %s-%s (open loop); "+
			"simulated model %s±%s, %d tokens/completion; provider limit %d concurrent, %d tokens/min (bucket of one minute); budget = the provider's limits",
			c.background, c.warmup, c.users, c.thinkMin, c.thinkMax, c.latency, c.jitter/2, c.tokens, c.concurrency, c.tpm),
		Machine: hostinfo.Machine(), CPUSeconds: round1((hostinfo.CPUTime() - cpu0).Seconds()), Seconds: round1(time.Since(start).Seconds()),
	}
	r.P99WithinTwiceNoFlood = r.InteractiveP99Priority <= 2*r.InteractiveP99NoFlood
	if ff.bgCPS > 0 {
		r.BackgroundLossPct = round1(100 * (ff.bgCPS - pr.bgCPS) / ff.bgCPS)
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", c.out, err)
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.out, "priority.json"), append(line, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the result: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.out, "priority.svg"), []byte(chart(&r, vs)), 0o644); err != nil {
		return fmt.Errorf("writing the chart: %w", err)
	}
	fmt.Println(string(line))
	return nil
}

// driver runs one variant's users and flood and records, per message, when
// it was sent and when the slice that consumed it finished (the engine's
// observer names the messages of each slice, so a reply that answers two
// messages counts for both).
type driver struct {
	mu      sync.Mutex
	sent    map[string]time.Time // message ID → send time, until consumed
	floodAt time.Time
	inter   []time.Duration // latencies of interactive messages sent after floodAt
	bgLeft  int
	bgLast  time.Time
	bgAll   chan struct{}
}

func (d *driver) Observe(ctx context.Context, ev runtime.Event) {
	if ev.Type != runtime.EventSliceFinished || ev.Err != nil {
		return
	}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ev.MessageIDs {
		at, ok := d.sent[id]
		if !ok {
			continue
		}
		delete(d.sent, id)
		if strings.HasPrefix(id, "bg-") {
			d.bgLast = later(d.bgLast, now)
			if d.bgLeft--; d.bgLeft == 0 {
				close(d.bgAll)
			}
		} else if at.After(d.floodAt) {
			d.inter = append(d.inter, now.Sub(at))
		}
	}
}

func (d *driver) record(ids ...string) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		d.sent[id] = now
	}
}

func runVariant(c config, name string) (*variant, error) {
	prov := newProvider(c.latency, c.jitter, c.concurrency, c.tpm, c.tokens)
	sched := local.SchedulerConfig{FIFO: name == "fifo",
		Budget: &local.Budget{Concurrency: c.concurrency, TokensPerMinute: c.tpm, EstimateTokens: c.tokens}}
	flood := name != "no_flood"
	t0 := time.Now()
	d := &driver{sent: map[string]time.Time{}, bgAll: make(chan struct{}), floodAt: t0.Add(c.warmup)}
	if flood {
		d.bgLeft = c.background
	}
	sys, err := local.New(local.Config{
		Model: prov, Tools: runtime.NewToolbox(), Observer: d,
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Limits:    runtime.Limits{RetryBase: 50 * time.Millisecond, ModelAttempts: 8},
		Scheduler: sched,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := sys.Start(ctx); err != nil {
		return nil, err
	}
	defer sys.Stop()

	v := &variant{name: name}
	var (
		wg   sync.WaitGroup
		stop = make(chan struct{})
		errs = make(chan error, c.users+1)
	)
	// Open loop: each user sends a message every think time, whether or
	// not the last one was answered (a late reply then answers several).
	for u := range c.users {
		id := "user-" + strconv.Itoa(u)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(u), 17))
			think := func() time.Duration {
				return c.thinkMin + time.Duration(rng.Int64N(int64(c.thinkMax-c.thinkMin)+1))
			}
			if !pause(stop, time.Duration(rng.Int64N(int64(c.thinkMax)+1))) {
				return
			}
			for turn := 0; ; turn++ {
				m := runtime.Message{V: runtime.MessageVersion, ID: id + "-" + strconv.Itoa(turn), ThreadID: id,
					Kind: runtime.KindUser, Text: "what is the status of the build?", Class: runtime.ClassInteractive}
				d.record(m.ID)
				if err := sys.Send(ctx, m); err != nil {
					errs <- err
					return
				}
				if !pause(stop, think()) {
					return
				}
			}
		}()
	}
	time.Sleep(time.Until(d.floodAt))
	if flood {
		msgs := make([]runtime.Message, c.background)
		ids := make([]string, c.background)
		for i := range msgs {
			th := fmt.Sprintf("bg-%05d", i)
			msgs[i] = runtime.Message{V: runtime.MessageVersion, ID: th + "-wake", ThreadID: th, Kind: runtime.KindUser,
				Text: "the nightly export finished; summarise it", Class: runtime.ClassBackground}
			ids[i] = msgs[i].ID
		}
		d.record(ids...)
		if err := sys.Send(ctx, msgs...); err != nil {
			return nil, fmt.Errorf("sending the flood: %w", err)
		}
		select {
		case <-d.bgAll:
		case <-time.After(15 * time.Minute):
			return nil, fmt.Errorf("the flood did not drain in 15 minutes (%d left)", d.bgLeft)
		}
		d.mu.Lock()
		v.bgMaxWait = d.bgLast.Sub(d.floodAt)
		d.mu.Unlock()
		v.bgCPS = float64(c.background) / v.bgMaxWait.Seconds()
	} else {
		time.Sleep(c.noFlood)
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, fmt.Errorf("a user's send failed: %w", err)
	default:
	}
	if dead, n := sys.DeadLetters(); n > 0 {
		return nil, fmt.Errorf("%d messages dead-lettered, first: %s", n, dead[0].Reason)
	}
	d.mu.Lock()
	v.interactive = d.inter
	d.mu.Unlock()
	v.throttles, v.calls = prov.throttles.Load(), prov.calls.Load()
	v.seconds = time.Since(t0).Seconds()
	return v, nil
}

func pause(stop chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func ms(d time.Duration) float64 { return round1(float64(d) / float64(time.Millisecond)) }

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
