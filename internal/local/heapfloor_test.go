package local

import (
	"context"
	"math"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// The floor is what the collector paces against: after a collection the
// next one is not due before the heap has grown past it. (Not run in
// parallel: the floor and the memory limit are process-wide.)
func TestHeapFloorRaisesTheCollectionTarget(t *testing.T) {
	sys, err := New(Config{Model: &model.Sim{Chunks: 1}, Tools: runtime.NewToolbox()})
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sys.Stop()
	goruntime.GC()
	if goal := heapGoal(); goal < DefaultHeapFloor {
		t.Fatalf("heap goal %d bytes after a collection with a %d-byte floor", goal, DefaultHeapFloor)
	}
	// One floor per process: a second system does not add another.
	before := heapFloorSize()
	sys2, _ := New(Config{Model: &model.Sim{Chunks: 1}, Tools: runtime.NewToolbox()})
	if err := sys2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sys2.Stop()
	if after := heapFloorSize(); after != before {
		t.Fatalf("a second system changed the floor from %d to %d bytes", before, after)
	}
}

func TestHeapFloorStaysUnderTheMemoryLimit(t *testing.T) {
	if got := floorUnder(DefaultHeapFloor, 1<<30); got != DefaultHeapFloor {
		t.Fatalf("floor %d under a 1 GiB limit, want %d", got, DefaultHeapFloor)
	}
	if got := floorUnder(DefaultHeapFloor, 128<<20); got != 32<<20 {
		t.Fatalf("floor %d under a 128 MiB limit, want a quarter of it", got)
	}
	if got := floorUnder(DefaultHeapFloor, math.MaxInt64); got != DefaultHeapFloor {
		t.Fatalf("floor %d without a limit", got)
	}
	if got, want := raiseHeapFloor(-1), heapFloorSize(); got != want {
		t.Fatalf("a negative floor changed it: %d, was %d", got, want)
	}
}

// Raising the floor reads the Go memory limit and leaves it as it was (a
// limit of a byte or two would make the collector run without pause).
// (Not run in parallel: the limit is process-wide.)
func TestHeapFloorLeavesTheMemoryLimit(t *testing.T) {
	const limit = 3 << 30
	old := debug.SetMemoryLimit(limit)
	defer debug.SetMemoryLimit(old)
	raiseHeapFloor(0)
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Fatalf("raising the heap floor changed the memory limit from %d to %d bytes", int64(limit), got)
	}
}

func heapFloorSize() int {
	heapFloor.mu.Lock()
	defer heapFloor.mu.Unlock()
	return len(heapFloor.buf)
}
