package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

// The infinity profile's shape (loadtest/density): per turn a ~120-byte
// user message, a 12-chunk ~1.2 KB completion ending in run_command, the
// tool's ~350-byte result through the input queue, a second ~1.2 KB
// completion. The text repeats (that profile's point).
const (
	chunks   = 12
	chunk    = "The workspace build finished; three crates were rebuilt, and the test plan covers each module. "
	toolName = "run_command"
	toolArgs = `{"command": "cargo test --workspace"}`
	wave     = 500
)

var toolResult = func() string {
	s := "running 148 tests across 12 crates\n" +
		"test result: ok. 145 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out; finished in 4.21s\n" +
		"failures:\n    parser::tests::handles_nested_blocks\n    storage::tests::compaction_keeps_order\n"
	for len(s) < 350 {
		s += "."
	}
	return s[:350]
}()

func agentName(i int) string { return fmt.Sprintf("agent-%07d", i) }

func userText(agent string, turn int) string {
	return "Turn " + strconv.Itoa(turn) + ": re-run the affected tests for " + agent +
		" and summarize any failures along with the modules they belong to."
}

// populated is what one populate step measured.
type populated struct {
	Agents            int     // agents in the directory after the step
	Added             int     // agents this step created
	Completions       int64   // completions this step ran
	Seconds           float64 // wall time of the step (freezing counted)
	CompletionsPerSec float64
	CPUSeconds        float64
	RSSBytes          int64 // the populating process after the step, idle
}

// populate creates agents [from, to) in dir through the durable store
// serve uses (disk.Open, local.System, the engine), turns turns each, in
// waves of 500 whose users start at once, freezing each wave's threads
// when it is idle, as the density benchmark's -store sqlite does.
func populate(ctx context.Context, dir string, from, to, turns int) (populated, error) {
	p := populated{Agents: to, Added: to - from}
	if to <= from {
		return p, nil
	}
	db, err := disk.Open(ctx, dir, disk.Options{})
	if err != nil {
		return p, err
	}
	defer db.Close()
	var completions atomic.Int64
	d := &users{turns: turns, done: make(chan struct{}, 1)}
	tb := runtime.NewToolbox()
	sys, err := local.New(local.Config{
		Model:   countingModel{&model.Sim{Chunks: chunks, Tool: toolName, ToolArgs: toolArgs, Chunk: func(*runtime.CompletionRequest, int) string { return chunk }}, &completions},
		Tools:   tb,
		History: db.History(),
		Inbox:   db.Inbox(),
		Output:  local.OutputFunc(d.publish),
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return p, err
	}
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: toolName, Description: "Run a shell command."}, Async: resultTool{sys}})
	d.sys = sys
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := sys.Start(sctx); err != nil {
		return p, err
	}
	defer sys.Stop()
	t0, c0 := time.Now(), hostinfo.CPUTime()
	last := time.Now()
	for start := from; start < to; start += wave {
		n := min(wave, to-start)
		d.launch(start, n)
		<-d.done
		select {
		case <-sys.Idle():
		case <-time.After(time.Minute):
			return p, errors.New("populate: threads still active a minute after their wave finished")
		}
		db.History().FreezeIdle(0)
		if f := d.failures.Load(); f > 0 {
			return p, fmt.Errorf("populate: %d agents failed; first: %s", f, d.firstErr())
		}
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			done := start + n - from
			fmt.Fprintf(os.Stderr, "million: populated %d of %d agents (%.0f completions/s)\n", start+n, to,
				float64(completions.Load())/time.Since(t0).Seconds())
			_ = done
		}
	}
	p.Seconds = time.Since(t0).Seconds()
	p.CPUSeconds = (hostinfo.CPUTime() - c0).Seconds()
	p.Completions = completions.Load()
	p.CompletionsPerSec = float64(p.Completions) / p.Seconds
	if want := int64(p.Added) * int64(turns) * 2; p.Completions != want {
		return p, fmt.Errorf("populate: ran %d completions, want %d", p.Completions, want)
	}
	p.RSSBytes = selfRSS()
	return p, nil
}

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

// resultTool is run_command: its result comes back through the input
// queue, as a RAP tool's would through the callback receiver.
type resultTool struct{ q runtime.Queue }

func (t resultTool) Dispatch(ctx context.Context, inv runtime.Invocation) error {
	return t.q.Send(ctx, runtime.Message{V: runtime.MessageVersion, ID: runtime.DeriveID("res_", inv.ThreadID, inv.CallID),
		ThreadID: inv.ThreadID, Kind: runtime.KindToolResult, ToolCallID: inv.CallID, Text: toolResult, Trace: inv.Trace})
}

// users plays the users of one wave: on each agent's reply, its next turn.
type users struct {
	sys      *local.System
	turns    int
	turn     map[string]*atomic.Int32 // filled before a wave, read during it
	pending  atomic.Int64
	done     chan struct{}
	failures atomic.Int64
	errMu    sync.Mutex
	err      string
}

func (d *users) launch(start, n int) {
	d.turn = make(map[string]*atomic.Int32, n)
	for i := start; i < start+n; i++ {
		d.turn[agentName(i)] = new(atomic.Int32)
	}
	d.pending.Store(int64(n))
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

func (d *users) next(agent string) {
	t := int(d.turn[agent].Add(1))
	if t > d.turns {
		if d.pending.Add(-1) == 0 {
			d.done <- struct{}{}
		}
		return
	}
	err := d.sys.Send(context.Background(), runtime.Message{ID: "u-" + strconv.Itoa(t), ThreadID: agent,
		Kind: runtime.KindUser, Text: userText(agent, t)})
	if err != nil {
		d.fail(agent, err.Error())
	}
}

func (d *users) publish(_ context.Context, ev runtime.OutputEvent) error {
	switch ev.Kind {
	case "reply":
		d.next(ev.ThreadID)
	case "error":
		d.fail(ev.ThreadID, ev.Text)
	}
	return nil
}

func (d *users) fail(agent, text string) {
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

func (d *users) firstErr() string {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return d.err
}
