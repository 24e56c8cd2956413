// Command longrun is the long-running agent benchmark (issue 31): one
// simulated orchestrator on the embedded runtime takes -turns user turns,
// spawns a child every 50 turns (each works two completions and reports
// twice), opens a subscription every 100 turns (two events, then cancelled)
// and is compacted at a small context window. Per -every turns it prints
// the items and bytes each slice loaded, the tokens each completion was
// sent, the bytes the tree has stored and the CPU per slice; at the end one
// JSON line, also written to -out.
//
//	go run ./loadtest/longrun                          # memory store, 10,000 turns
//	go run ./loadtest/longrun -store sqlite -turns 2000
//	go run ./loadtest/longrun -store postgres -turns 1000 -dsn postgres://...
//	go run ./loadtest/longrun -chart docs/longrun.svg before.json after.json
//
// It measures; it asserts nothing.
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
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

type config struct {
	turns, every                 int
	store, dsn, data, out, label string
	window                       int
	threshold                    float64
	replyBytes, summaryBytes     int
	cpuProfile                   string
	profileFrom, profileTo       int
}

// Window is one -every turns of the run.
type Window struct {
	Turn                int     `json:"turn"` // the last turn of the window
	Slices              int64   `json:"slices"`
	ItemsPerSlice       float64 `json:"items_per_slice"`
	BytesPerSlice       float64 `json:"loaded_bytes_per_slice"`
	Completions         int     `json:"completions"`
	TokensPerCompletion float64 `json:"tokens_per_completion"`
	StoredBytes         int64   `json:"stored_bytes"`
	CPUMicrosPerSlice   float64 `json:"cpu_us_per_slice"`
	// JournalBytesPerSlice is what the durable store's journal wrote per
	// slice (sqlite only): its commit records, each with the thread's state.
	JournalBytesPerSlice float64 `json:"journal_bytes_per_slice,omitempty"`
}

// Result is the run's summary line.
type Result struct {
	Label                    string   `json:"label,omitempty"`
	Store                    string   `json:"store"`
	Turns                    int      `json:"turns"`
	Window                   int      `json:"context_window"`
	LoadedBytesPerSliceFirst float64  `json:"loaded_bytes_per_slice_first"`
	LoadedBytesPerSliceLast  float64  `json:"loaded_bytes_per_slice_last"`
	TokensPerCompletionFirst float64  `json:"tokens_per_completion_first"`
	TokensPerCompletionLast  float64  `json:"tokens_per_completion_last"`
	StoredBytes              int64    `json:"stored_bytes"`
	StoredBytesOnDisk        int64    `json:"stored_bytes_on_disk,omitempty"`
	Children                 int      `json:"children"`
	Compactions              int      `json:"compactions"`
	CompactionLoops          int      `json:"compaction_loops"`
	Slices                   int64    `json:"slices"`
	CPUMicrosPerSliceFirst   float64  `json:"cpu_us_per_slice_first"`
	CPUMicrosPerSliceLast    float64  `json:"cpu_us_per_slice_last"`
	Seconds                  float64  `json:"seconds"`
	Machine                  string   `json:"machine"`
	Windows                  []Window `json:"windows,omitempty"`
}

func main() {
	var c config
	var chart string
	flag.IntVar(&c.turns, "turns", 10000, "user turns of the orchestrator")
	flag.IntVar(&c.every, "every", 1000, "print a line every this many turns")
	flag.StringVar(&c.store, "store", "memory", "memory, sqlite (the durable store of serve) or postgres (the DSQL store)")
	flag.StringVar(&c.dsn, "dsn", os.Getenv("AGENTSLICE_TEST_PG_DSN"), "PostgreSQL DSN for -store postgres (a fresh schema is created and dropped)")
	flag.StringVar(&c.data, "data", "", "data directory for -store sqlite (default: a temporary one, removed)")
	flag.IntVar(&c.window, "window", 8000, "the model's context window in tokens")
	flag.Float64Var(&c.threshold, "threshold", 0.8, "compaction threshold (fraction of the window)")
	flag.IntVar(&c.replyBytes, "reply-bytes", 600, "bytes of an orchestrator reply")
	flag.IntVar(&c.summaryBytes, "summary-bytes", 1500, "bytes of a compaction summary")
	flag.StringVar(&c.out, "out", "loadtest/results", "directory for the result JSON (\"\": none)")
	flag.StringVar(&c.label, "label", "", "a name for the run, in the result and its file name")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of turns -profile-from to -profile-to to this file")
	flag.IntVar(&c.profileFrom, "profile-from", 1, "the first turn the CPU profile covers")
	flag.IntVar(&c.profileTo, "profile-to", 0, "the last turn the CPU profile covers (0: the last turn)")
	flag.StringVar(&chart, "chart", "", "write an SVG comparing the result files given as arguments to this path, and exit")
	flag.Parse()
	if chart != "" {
		if err := writeChart(chart, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "longrun:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "longrun:", err)
		os.Exit(1)
	}
}

// quiet is an observer that wants no event.
type quiet struct{}

func (quiet) Observe(context.Context, runtime.Event) {}
func (quiet) Wants(runtime.EventType, bool) bool     { return false }

func run(c config) error {
	if c.turns <= 0 || c.every <= 0 {
		return errors.New("-turns and -every must be positive")
	}
	ctx := context.Background()
	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.close()
	m, hist := wrap(st.history)
	const root = "orchestrator"
	orch := &orchestrator{root: root, replyBytes: c.replyBytes, summaryBytes: c.summaryBytes,
		window: c.threshold * float64(c.window)}
	watch := &watchTool{}
	tb := runtime.NewToolbox()
	for _, e := range runtime.ThreadTools() {
		tb.MustAdd(e)
	}
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "watch", Description: "Subscribe to a pipeline's events."}, Async: watch})
	sys, err := local.New(local.Config{Model: orch, Tools: tb, History: hist, Observer: quiet{},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Compaction: &runtime.CompactionPolicy{ContextWindow: c.window, Threshold: c.threshold}})
	if err != nil {
		return err
	}
	if err := sys.Start(ctx); err != nil {
		return err
	}
	defer sys.Stop()

	res := &Result{Label: c.label, Store: c.store, Turns: c.turns, Window: c.window, Machine: hostinfo.Machine()}
	start := time.Now()
	send := func(msg runtime.Message) error {
		msg.V = runtime.MessageVersion
		msg.ThreadID = root
		if err := sys.Send(ctx, msg); err != nil {
			return err
		}
		select {
		case <-sys.Idle():
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("the system did not go idle after %s", msg.ID)
		}
		if dl, _ := sys.DeadLetters(); len(dl) > 0 {
			return fmt.Errorf("dead letter: %s: %s", dl[0].Message.ID, dl[0].Reason)
		}
		return nil
	}
	prevM, prevCPU, prevJ := m.counts(), hostinfo.CPUTime(), st.journalBytes()
	prevC, prevT, _, _ := orch.counts()
	fmt.Printf("%7s %8s %10s %12s %12s %14s %12s %12s\n", "turn", "slices", "items/sl", "bytes/sl", "tokens/cpl", "stored_bytes", "cpu_us/sl", "journal_b/sl")
	prof := &profiler{path: c.cpuProfile, from: c.profileFrom, to: c.profileTo}
	if prof.to <= 0 || prof.to > c.turns {
		prof.to = c.turns
	}
	defer prof.stop()
	for t := 1; t <= c.turns; t++ {
		if err := prof.turn(t); err != nil {
			return err
		}
		if err := send(runtime.Message{ID: fmt.Sprintf("u-%d", t), Kind: runtime.KindUser,
			Text: fmt.Sprintf("turn %d: ", t) + filler(200)}); err != nil {
			return err
		}
		for _, inv := range watch.take() {
			orch.setSubscription(inv.CallID)
			if err := send(runtime.Message{ID: "sub-" + inv.CallID, Kind: runtime.KindToolResult, ToolCallID: inv.CallID,
				Subscription: true, Text: "watching pipeline main"}); err != nil {
				return err
			}
		}
		if p := t % subEvery; (p == eventAt1 || p == eventAt2) && orch.subscription() != "" {
			if err := send(runtime.Message{ID: fmt.Sprintf("ev-%d", t), Kind: runtime.KindEvent, ToolCallID: orch.subscription(),
				Associative: true, Text: fmt.Sprintf("pipeline step %d passed", t)}); err != nil {
				return err
			}
		}
		if t%c.every == 0 || t == c.turns {
			mc, cpu, jb := m.counts(), hostinfo.CPUTime(), st.journalBytes()
			cc, ct, _, _ := orch.counts()
			w := Window{Turn: t, Slices: mc.loads - prevM.loads, Completions: cc - prevC, StoredBytes: mc.storedBytes}
			if w.Slices > 0 {
				w.ItemsPerSlice = float64(mc.loadedItems-prevM.loadedItems) / float64(w.Slices)
				w.BytesPerSlice = float64(mc.loadedBytes-prevM.loadedBytes) / float64(w.Slices)
				w.CPUMicrosPerSlice = float64((cpu - prevCPU).Microseconds()) / float64(w.Slices)
				w.JournalBytesPerSlice = float64(jb-prevJ) / float64(w.Slices)
			}
			if w.Completions > 0 {
				w.TokensPerCompletion = float64(ct-prevT) / float64(w.Completions)
			}
			fmt.Printf("%7d %8d %10.0f %12.0f %12.0f %14d %12.0f %12.0f\n", w.Turn, w.Slices, w.ItemsPerSlice, w.BytesPerSlice,
				w.TokensPerCompletion, w.StoredBytes, w.CPUMicrosPerSlice, w.JournalBytesPerSlice)
			res.Windows = append(res.Windows, w)
			prevM, prevCPU, prevC, prevT, prevJ = mc, cpu, cc, ct, jb
		}
	}
	if err := prof.stop(); err != nil {
		return err
	}
	res.Seconds = time.Since(start).Seconds()
	first, last := res.Windows[0], res.Windows[len(res.Windows)-1]
	res.LoadedBytesPerSliceFirst, res.LoadedBytesPerSliceLast = first.BytesPerSlice, last.BytesPerSlice
	res.TokensPerCompletionFirst, res.TokensPerCompletionLast = first.TokensPerCompletion, last.TokensPerCompletion
	res.CPUMicrosPerSliceFirst, res.CPUMicrosPerSliceLast = first.CPUMicrosPerSlice, last.CPUMicrosPerSlice
	res.StoredBytes, res.Slices = m.counts().storedBytes, m.counts().loads
	_, _, res.Compactions, res.CompactionLoops = orch.counts()
	th, err := st.history.Load(ctx, root)
	if err != nil {
		return err
	}
	for _, ch := range th.State.Children {
		if !strings.HasPrefix(ch, "cmp_") {
			res.Children++
		}
	}
	sys.Stop()
	res.StoredBytesOnDisk = st.diskBytes(ctx)
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	summary := *res
	summary.Windows = nil
	line, _ := json.Marshal(summary)
	fmt.Println(string(line))
	if c.out != "" {
		name := "longrun-" + c.store
		if c.label != "" {
			name += "-" + c.label
		}
		if err := os.MkdirAll(c.out, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(c.out, name+".json"), append(b, '\n'), 0o644)
	}
	return nil
}
