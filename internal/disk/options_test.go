package disk

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// The zero Options get the documented defaults, a value set is kept, and a
// negative one counts as unset.
func TestOptionsDefaults(t *testing.T) {
	for _, o := range []Options{{}, {MaxGroup: -1, Readers: -1, SegmentBytes: -1, SegmentRecords: -1, DedupTTL: -1}} {
		got := o.WithDefaults()
		if got.MaxGroup != 512 || got.Readers != 4 || got.SegmentBytes != 64<<20 || got.SegmentRecords != 25000 || got.DedupTTL != 24*time.Hour ||
			got.Logger == nil || got.Now == nil {
			t.Errorf("%+v.WithDefaults() = %+v, want MaxGroup 512, Readers 4, SegmentBytes 64 MiB, SegmentRecords 25,000, DedupTTL 24h, a logger and a clock", o, got)
		}
	}
	set := Options{MaxGroup: 3, Readers: 2, SegmentBytes: 1 << 10, SegmentRecords: 7, DedupTTL: time.Minute}.WithDefaults()
	if set.MaxGroup != 3 || set.Readers != 2 || set.SegmentBytes != 1<<10 || set.SegmentRecords != 7 || set.DedupTTL != time.Minute {
		t.Errorf("values set were replaced: %+v", set)
	}
}

// lockedBuffer is a log sink that the store's goroutines may write while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A checkpoint that succeeds, with the retirement of the journal segments it
// copied, logs no warning.
func TestSuccessfulCheckpointLogsNoWarning(t *testing.T) {
	var logged lockedBuffer
	d, err := Open(context.Background(), t.TempDir(), Options{Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, id := range []string{"a", "b"} {
		commitN(t, d.History(), id, 0, id+"1")
		if err := d.Checkpoint(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if s := logged.String(); s != "" {
		t.Errorf("warnings from checkpoints that succeeded:\n%s", s)
	}
}
