package model

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

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
	// Chunk returns chunk i of the completion answering req. Default:
	// DefaultSentence, or with a Seed, one of a few sentences picked by the
	// seed, the completion ID and i.
	Chunk func(req *runtime.CompletionRequest, i int) string
	// Seed varies the default text: the same seed gives the same text for
	// the same completion, different seeds give different text.
	Seed uint64
	// Reply, when set, is the whole text of the completion answering req,
	// streamed in Chunks pieces cut at spaces; Chunk and Seed are then
	// unused. The catalog's sim model sets it to DemoReply.
	Reply func(req *runtime.CompletionRequest) string
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
	var pieces []string
	if m.Reply != nil {
		pieces = splitWords(m.Reply(req), n)
		n = len(pieces)
	}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		if m.Fail != nil && m.Fail(req, i) {
			return fmt.Errorf("%w at chunk %d of %s", ErrInjected, i, req.ID())
		}
		switch {
		case pieces != nil:
			w.Text(pieces[i])
		case m.Chunk != nil:
			w.Text(m.Chunk(req, i))
		case m.Seed != 0:
			w.Text(seededSentences[seededIndex(m.Seed, req.ID(), i)])
		default:
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

// splitWords cuts s into at most n pieces of about equal length, each cut
// just after a space, so that the pieces concatenate to s.
func splitWords(s string, n int) []string {
	pieces := make([]string, 0, n)
	for k := n; k > 1 && s != ""; k-- {
		cut := len(s) / k
		sp := strings.IndexByte(s[cut:], ' ')
		if sp < 0 {
			break
		}
		cut += sp + 1
		pieces = append(pieces, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		pieces = append(pieces, s)
	}
	return pieces
}

var seededSentences = [...]string{
	DefaultSentence,
	"Two tests in the storage module failed after the last change; the parser tests all passed. ",
	"I will rerun the affected tests with verbose output and compare the failures to the baseline. ",
	"The failing assertion compares the compacted order with the original one and finds a swap. ",
	"Network retries are now bounded, so the flaky reset test should settle within the timeout. ",
	"Nothing in the workspace depends on the removed helper, so deleting it is safe for now. ",
	"The benchmark numbers are within noise of the previous run on the same idle machine. ",
	"A summary of the failures and the modules they belong to follows in the next message. ",
}

func seededIndex(seed uint64, completion string, i int) int {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(i))
	h.Write(b[:])
	h.Write([]byte(completion))
	return int(h.Sum64() % uint64(len(seededSentences)))
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
