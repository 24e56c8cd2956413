package disk

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer a logger may write from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Open says how many journal records it replayed after a crash (the
// operator's only sign that a restart recovered work), and says nothing
// about a replay when there was none to do.
func TestOpenLogsHowManyRecordsItReplayed(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	for i, s := range []string{"one", "two", "three"} {
		commitN(t, d.History(), "t", int64(i), s)
	}
	kill(t, d) // three commit records in the journal, none checkpointed
	var logged syncBuffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))
	d, err := Open(context.Background(), dir, Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	line := ""
	for _, l := range strings.Split(logged.String(), "\n") {
		if strings.Contains(l, "replayed the journal") {
			line = l
		}
	}
	if !strings.Contains(line, " records=3") {
		t.Fatalf("Open after a crash with 3 journaled commits logged %q, want a \"replayed the journal\" line with records=3; the log:\n%s", line, logged.String())
	}
	if err := d.Close(); err != nil { // checkpoints: nothing left to replay
		t.Fatal(err)
	}
	logged.Reset()
	d, err = Open(context.Background(), dir, Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if strings.Contains(logged.String(), "replayed the journal") {
		t.Fatalf("Open after a clean close logged a replay:\n%s", logged.String())
	}
}
