package local

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// failingModel panics for thread "dead" (its slices fail) and fails
// permanently for the others.
type failingModel struct{}

func (failingModel) Complete(_ context.Context, req *runtime.CompletionRequest, _ runtime.TurnWriter) error {
	if req.ThreadID == "dead" {
		panic("failingModel")
	}
	return runtime.Permanent(errors.New("HTTP 400: bad request"))
}

// Every dead letter and every failed completion is logged at info level
// or above.
func TestFailuresAreLoggedAtInfo(t *testing.T) {
	logs := &syncBuffer{}
	lg := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := newHarness(t, failingModel{}, func(c *Config) { c.Logger, c.SliceAttempts = lg, 2 })
	h.send(user("dead", "d1", "go"), user("t1", "u1", "go"))
	h.wait()
	out := logs.String()
	for _, want := range []string{`msg="message dead-lettered" thread=dead message=d1`, `msg=completion_failed thread=t1`} {
		if !strings.Contains(out, want) {
			t.Errorf("log at info lacks %q:\n%s", want, out)
		}
	}
}
