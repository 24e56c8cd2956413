package local

import (
	"math"
	"runtime/debug"
	"sync"
)

// DefaultHeapFloor is the heap the garbage collector paces against at the
// least while a System runs (Config.HeapFloor).
//
// Why: Go collects when the heap has grown by GOGC percent (100) over what
// the last collection left live. An embedded system with small histories
// has a small live heap (the infinity profile: about 30 MB, most of it the
// running wave's hot threads), so it collects every few tens of megabytes
// of allocation. Measured on the density benchmark with -held-rss (so that
// every collection runs inside the measured time; infinity, 20,000 agents,
// one core, AMD EPYC): 8.23-8.24 CPU-µs per completion without a floor,
// 7.87-8.04 with 64 MiB; bytes per idle agent unchanged (the floor's pages
// are never touched, so they are not resident). Without -held-rss the
// benchmark forces a collection after every wave, outside its measured
// time, and the floor then seemed to save 15%: it had moved the one
// collection a wave made into that unmeasured step. A raised GOGC buys the
// same only by multiplying the garbage a large live heap may leave (the
// unique profile keeps 20 KB per agent live), while the floor adds at most
// its own size of garbage, whatever the live heap.
const DefaultHeapFloor = 64 << 20

// heapFloor is one process-wide allocation that the garbage collector
// counts as live but nobody touches: it is never written, so the kernel
// never backs its pages with memory (it is virtual address space, not
// resident memory), and it holds no pointers, so marking skips it. It
// raises the heap the collector paces against by its size, which is a
// floor under the next collection's target. There is one per process
// however many Systems run (each would add its size to the target); it is
// allocated when a System first starts and kept for the life of the
// process (freeing and allocating again could hand back pages the
// allocator must zero, which would make them resident).
var heapFloor struct {
	mu  sync.Mutex
	buf []byte
}

// raiseHeapFloor makes the process-wide floor at least n bytes (n ≤ 0:
// nothing), but never more than a quarter of the Go memory limit
// (GOMEMLIMIT, debug.SetMemoryLimit), which counts the floor as heap: a
// floor near the limit would make the collector run without pause.
// It returns the floor's size.
func raiseHeapFloor(n int) int {
	n = floorUnder(n, debug.SetMemoryLimit(-1))
	heapFloor.mu.Lock()
	defer heapFloor.mu.Unlock()
	if n > len(heapFloor.buf) {
		heapFloor.buf = make([]byte, n)
	}
	return len(heapFloor.buf)
}

// floorUnder is the floor asked for, n, kept to a quarter of the memory
// limit (math.MaxInt64: none).
func floorUnder(n int, limit int64) int {
	if limit != math.MaxInt64 {
		n = min(n, int(limit/4))
	}
	return n
}
