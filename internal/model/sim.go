package model

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentslice/agentslice/internal/runtime"
)

// ErrInjected is the stream error a Sim injects when told to.
var ErrInjected = errors.New("model: injected stream error")

// Sim is a simulated model for benchmarks and tests. It is deterministic:
// what it streams depends only on its configuration and the request.
//
// Its policy mirrors a tool-using agent: when the last history item is a
// tool result (the tool answered) it streams a final answer; otherwise it
// streams its text and then calls Tool with ToolArgs (or only answers when
// Tool is empty).
type Sim struct {
	// Chunks is how many chunks one completion streams. Default 12.
	Chunks int
	// Chunk returns chunk i of the completion answering req. Default: a
	// fixed ~95-byte sentence.
	Chunk func(req *runtime.CompletionRequest, i int) string
	// Tool and ToolArgs are the call made when the model decides to act.
	Tool     string
	ToolArgs string
	// Fail, when set, is asked before each chunk; returning true breaks the
	// stream there with ErrInjected (the engine must discard the turn).
	Fail func(req *runtime.CompletionRequest, chunk int) bool
	// Usage is reported for every completion when non-zero.
	Usage runtime.Usage
}

// DefaultSentence is the Sim's default chunk: 95 bytes of plausible text.
const DefaultSentence = "The workspace build finished; three crates were rebuilt, and the test plan covers each module. "

// Complete streams one completion.
func (m *Sim) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	n := m.Chunks
	if n <= 0 {
		n = 12
	}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		if m.Fail != nil && m.Fail(req, i) {
			return fmt.Errorf("%w at chunk %d of %s", ErrInjected, i, req.CompletionID)
		}
		if m.Chunk != nil {
			w.Text(m.Chunk(req, i))
		} else {
			w.Text(DefaultSentence)
		}
	}
	if m.Usage != (runtime.Usage{}) {
		w.Usage(m.Usage)
	}
	if m.Tool != "" && !answered(req.History) {
		w.ToolCall("", m.Tool, m.ToolArgs)
	}
	return nil
}

// answered reports whether the history ends with a tool result, i.e. the
// model's last action has come back and it should now answer.
func answered(h []runtime.Item) bool {
	for i := len(h) - 1; i >= 0; i-- {
		switch h[i].Kind {
		case runtime.ItemMarker:
			continue
		case runtime.ItemToolResult:
			return true
		default:
			return false
		}
	}
	return false
}
