package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The reference workload (Infinity's agent_scale benchmark, reproduced in
// shape): per turn a ~120-byte user message, a ~1.2 KB completion of 12
// chunks ending in run_command, a ~350-byte tool result through the input
// queue, and a second ~1.2 KB completion. Two completions per turn.
const (
	chunks        = 12
	chunkBytes    = 95
	resultBytes   = 350
	userBytes     = 120
	toolName      = "run_command"
	toolArgs      = `{"command": "cargo test --workspace"}`
	infinityChunk = "The workspace build finished; three crates were rebuilt, and the test plan covers each module. "
)

var infinityResult = func() string {
	s := "running 148 tests across 12 crates\n" +
		"test result: ok. 145 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out; finished in 4.21s\n" +
		"failures:\n    parser::tests::handles_nested_blocks\n    storage::tests::compaction_keeps_order\n" +
		"    net::tests::retries_on_reset\nerror: test failed, to rerun pass `-p agent-core --lib`\n"
	for len(s) < resultBytes {
		s += "."
	}
	return s[:resultBytes]
}()

type workload struct {
	profile string
	pool    *pool // unique profile only
}

const poolBytes = 32 << 20

func newWorkload(profile string) *workload {
	w := &workload{profile: profile}
	if profile == "unique" {
		w.pool = newPool(newProse(), poolBytes)
	}
	return w
}

// seedOf is FNV-1a over the parts, each followed by a zero byte (as
// hash/fnv would compute it, without its allocations: the simulated model
// calls it for every chunk).
func seedOf(parts ...string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			h = (h ^ uint64(p[i])) * prime
		}
		h *= prime // the zero byte
	}
	return h
}

func (w *workload) userText(agent string, turn int) string {
	if w.profile == "infinity" {
		return "Turn " + strconv.Itoa(turn) + ": re-run the affected tests for " + agent +
			" and summarize any failures along with the modules they belong to."
	}
	return w.pool.cut(seedOf("user", agent, strconv.Itoa(turn)), userBytes)
}

func (w *workload) resultText(inv runtime.Invocation) string {
	if w.profile == "infinity" {
		return infinityResult
	}
	return w.pool.cut(seedOf("result", inv.ThreadID, inv.CallID), resultBytes)
}

func (w *workload) model() runtime.Model {
	sim := &model.Sim{Chunks: chunks, Tool: toolName, ToolArgs: toolArgs}
	if w.profile == "infinity" {
		sim.Chunk = func(*runtime.CompletionRequest, int) string { return infinityChunk }
	} else {
		sim.Chunk = func(req *runtime.CompletionRequest, i int) string {
			return w.pool.cut(seedOf("chunk", req.ID(), strconv.Itoa(i)), chunkBytes)
		}
	}
	return sim
}

// tool is the benchmark's run_command: an asynchronous tool whose result
// comes back through the input queue, as a RAP tool's would through the
// callback receiver.
type tool struct {
	w *workload
	q runtime.Queue
}

func (t *tool) Dispatch(ctx context.Context, inv runtime.Invocation) error {
	return t.q.Send(ctx, runtime.Message{V: runtime.MessageVersion, ID: runtime.DeriveID("res_", inv.ThreadID, inv.CallID),
		ThreadID: inv.ThreadID, Kind: runtime.KindToolResult, ToolCallID: inv.CallID, Text: t.w.resultText(inv),
		Trace: inv.Trace}) // as a RAP callback URL carries it: the result continues the turn's trace
}

func agentName(i int) string { return fmt.Sprintf("agent-%06d", i) }

func trimTo(s string, n int) string {
	if len(s) > n {
		return strings.TrimSpace(s[:n])
	}
	return s
}
