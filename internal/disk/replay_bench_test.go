package disk

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// killedJournal writes threads*commits commit records shaped like serve's
// slices (a root thread of an agent, each commit a user message and an
// assistant reply), with no checkpoint, then kills the directory as
// SIGKILL would leave it. The journal's segment is large enough that no
// background checkpoint copies it. With existing, the threads were created
// and checkpointed first, so that the journal holds work on agents the
// database has (as after a kill with a million populated agents).
func killedJournal(tb testing.TB, dir string, threads, commits int, existing bool) {
	tb.Helper()
	ctx := context.Background()
	d, err := Open(ctx, dir, Options{NoSync: true, SegmentBytes: 1 << 40, SegmentRecords: 1 << 30,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	from := 0
	if existing {
		writeCommits(tb, d.History(), threads, 0, 1)
		if err := d.Checkpoint(ctx); err != nil {
			tb.Fatal(err)
		}
		from = 1
	}
	writeCommits(tb, d.History(), threads, from, commits)
	if err := d.close(false); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkReplay replays 50,000 commit records after a kill (50,000
// threads with one commit each, as a million agents' journal mostly holds,
// or 10,000 with 5; new threads, or threads the database has): the time
// Open spends before serve can answer /readyz.
//
//	nice -n 19 go test ./internal/disk/ -run '^$' -bench Replay -benchtime 3x -cpuprofile /tmp/replay.prof
func BenchmarkReplay(b *testing.B) {
	for _, existing := range []bool{false, true} {
		for _, commits := range []int{1, 5} {
			b.Run(fmt.Sprintf("existing=%v/commits=%d", existing, commits), func(b *testing.B) { benchReplay(b, 50000/commits, commits, existing) })
		}
	}
}

func benchReplay(b *testing.B, threads, commits int, existing bool) {
	src := b.TempDir()
	killedJournal(b, src, threads, commits, existing)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "d")
		copyDir(b, src, dir)
		b.StartTimer()
		d, err := Open(ctx, dir, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := d.close(false); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(threads*commits), "us/record")
}

func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		tb.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkCheckpointRecords is what checkpointing every
// DefaultSegmentRecords records costs the durable commit rate: 20,000
// threads, 8 writers, 3 commits each (60,000 records, two checkpoints at
// the default, none by bytes), against the old trigger (64 MiB only) and
// a smaller setting; with final-checkpoint, the checkpoint that copies
// what is left at the end is timed too.
//
//	nice -n 19 go test ./internal/disk/ -run '^$' -bench CheckpointRecords -benchtime 1x
func BenchmarkCheckpointRecords(b *testing.B) {
	for _, c := range []struct {
		name string
		recs int
	}{{"bytes-only", 1 << 30}, {"default", 0}, {"10000", 10000}} {
		for _, final := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/final-checkpoint=%v", c.name, final), func(b *testing.B) {
				for b.Loop() {
					dir := filepath.Join(b.TempDir(), "d")
					d, err := Open(context.Background(), dir, Options{SegmentRecords: c.recs,
						Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
					if err != nil {
						b.Fatal(err)
					}
					writeCommits(b, d.History(), 20000, 0, 3)
					if final {
						// What bytes only leaves for later, timed too: the
						// work is the same, only when it runs differs.
						if err := d.Checkpoint(context.Background()); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					if err := d.close(false); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.N)*60000/b.Elapsed().Seconds(), "commits/s")
			})
		}
	}
}

// writeCommits commits commits times (after from) to each of threads root threads from 8
// writers, so that group commits carry many records, as serve's do: each
// commit a user message and an assistant reply, as a slice's.
func writeCommits(tb testing.TB, h *History, threads, from, commits int) {
	tb.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 { // concurrent writers, so that group commits carry many records, as serve's do
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < threads; i += 8 {
				id := "t" + strconv.Itoa(i)
				for v := from; v < from+commits; v++ {
					add := []runtime.Item{
						{Kind: runtime.ItemUser, Input: fmt.Sprintf("%s-u%d", id, v), Text: fmt.Sprintf("task %d for agent %d: look this up and summarise it", v, i)},
						{Kind: runtime.ItemAssistant, Text: "Here is what I found: a reply of a few sentences, about as long as a model's short answer in the million loadtest."},
					}
					c := &runtime.Commit{ThreadID: id, Expected: int64(v), Append: add,
						State: runtime.ThreadState{Version: int64(v + 1), Length: 2 * (v + 1), Stack: []string{id}, Agent: "bench"}}
					if err := h.Commit(ctx, c); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}
