package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// aslicePeer is agentslice's embedded runtime in the harness's own process,
// driven by the same driver as the peers: the user message and the tool
// result are Sends into the input queue, the asynchronous run_command
// tool's Dispatch is the "waiting" signal, the reply the "done". No HTTP
// between the parts (the peers pay a loopback request for each event); its
// memory is the harness process's (the driver's own per-agent state
// included), after a GC that returns freed memory, at both samples.
type aslicePeer struct {
	store   string // memory or sqlite (serve's durable store)
	root    string // the module root (for the prose vocabulary)
	words   []string
	cb      *callbacks
	sys     *local.System
	hist    interface{ FreezeIdle(time.Duration) int }
	db      *disk.DB
	dataDir string
	cancel  context.CancelFunc
	turn    sync.Map // agent -> int, its current turn
}

func (a *aslicePeer) name() string { return "agentslice-" + a.store }

func (a *aslicePeer) start(ctx context.Context, cb *callbacks, workDir string) error {
	a.cb = cb
	words, err := loadWords(a.root)
	if err != nil {
		return err
	}
	a.words = words
	tb := runtime.NewToolbox()
	cfg := local.Config{
		Model: &model.Sim{Chunks: chunks, Tool: "run_command", ToolArgs: `{"command": "cargo test --workspace"}`,
			Chunk: func(req *runtime.CompletionRequest, i int) string {
				return proseText(a.words, seedOf("chunk", req.ID(), strconv.Itoa(i)), chunkBytes)
			}},
		Tools:  tb,
		Output: local.OutputFunc(a.publish),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	switch a.store {
	case "memory":
		h := local.NewHistoryStore()
		cfg.History, a.hist = h, h
	case "sqlite":
		a.dataDir = workDir + "/data"
		db, err := disk.Open(ctx, a.dataDir, disk.Options{})
		if err != nil {
			return err
		}
		a.db = db
		cfg.History, cfg.Inbox, a.hist = db.History(), db.Inbox(), db.History()
	default:
		return fmt.Errorf("agentslice store %q: want memory or sqlite", a.store)
	}
	sys, err := local.New(cfg)
	if err != nil {
		return err
	}
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "run_command", Description: "Run a shell command."}, Async: asyncTool{a}})
	a.sys = sys
	var sctx context.Context
	sctx, a.cancel = context.WithCancel(context.Background())
	return sys.Start(sctx)
}

// asyncTool is run_command: its Dispatch tells the harness the agent waits
// for the result, which comes back later through the input queue.
type asyncTool struct{ a *aslicePeer }

func (t asyncTool) Dispatch(_ context.Context, inv runtime.Invocation) error {
	turn, _ := t.a.turn.Load(inv.ThreadID)
	t.a.cb.deliver(true, signal{Agent: inv.ThreadID, Turn: turn.(int), ID: inv.CallID})
	return nil
}

func (a *aslicePeer) publish(_ context.Context, ev runtime.OutputEvent) error {
	if ev.Kind == "reply" {
		turn, _ := a.turn.Load(ev.ThreadID)
		a.cb.deliver(false, signal{Agent: ev.ThreadID, Turn: turn.(int)})
	}
	return nil
}

func (a *aslicePeer) pids() []int {
	// The in-process samples are taken after a GC that returns freed memory.
	debug.FreeOSMemory()
	return []int{os.Getpid()}
}

func (a *aslicePeer) begin(context.Context, string, int) error { return nil }

func (a *aslicePeer) user(ctx context.Context, agent string, turn int) error {
	a.turn.Store(agent, turn)
	return a.sys.Send(ctx, runtime.Message{V: runtime.MessageVersion, ID: "u-" + strconv.Itoa(turn), ThreadID: agent,
		Kind: runtime.KindUser, Text: proseText(a.words, seedOf("user", agent, strconv.Itoa(turn)), 120)})
}

func (a *aslicePeer) toolResult(ctx context.Context, agent string, _ int, id string) error {
	return a.sys.Send(ctx, runtime.Message{V: runtime.MessageVersion, ID: runtime.DeriveID("res_", agent, id),
		ThreadID: agent, Kind: runtime.KindToolResult, ToolCallID: id, Text: resultText})
}

// settled freezes the idle threads, as serve's periodic freeze does once a
// thread has been idle for its configured time (the settle period stands
// for that time).
func (a *aslicePeer) settled() { a.hist.FreezeIdle(0) }

func (a *aslicePeer) diskBytes(ctx context.Context) (int64, error) {
	if a.db == nil {
		return 0, nil
	}
	if err := a.db.Checkpoint(ctx); err != nil {
		return 0, err
	}
	return a.db.DiskBytes(), nil
}

func (a *aslicePeer) settings() map[string]string {
	s := map[string]string{"store": a.store, "workers": "GOMAXPROCS=" + strconv.Itoa(gomaxprocs()) + " (the harness process)",
		"state": "one thread per agent: history in the store, a waiting agent a row of data; tool result through the input queue"}
	if a.store == "sqlite" {
		s["durability"] = "serve's durable store: every commit and accepted message fsynced (journal, group commit) before it is acknowledged"
	} else {
		s["durability"] = "none (in-memory store)"
	}
	return s
}

func (a *aslicePeer) stop() {
	if a.sys != nil {
		a.sys.Stop()
	}
	if a.cancel != nil {
		a.cancel()
	}
	if a.db != nil {
		a.db.Close()
	}
}
