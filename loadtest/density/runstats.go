package main

import (
	"runtime/metrics"
)

// runStats is what the Go runtime counts while agents run: heap objects and
// bytes allocated, and the CPU time the garbage collector took out of the
// CPU time the process used. None of them depends on what else runs on the
// machine, unlike wall-clock throughput.
type runStats struct {
	allocObjects, allocBytes uint64
	gcCPU, usedCPU           float64 // seconds
}

var runStatNames = []string{
	"/gc/heap/allocs:objects",
	"/gc/heap/allocs:bytes",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
}

// readRunStats samples the counters (without stopping the world).
func readRunStats() runStats {
	s := make([]metrics.Sample, len(runStatNames))
	for i, n := range runStatNames {
		s[i].Name = n
	}
	metrics.Read(s)
	u := func(i int) uint64 {
		if s[i].Value.Kind() == metrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	f := func(i int) float64 {
		if s[i].Value.Kind() == metrics.KindFloat64 {
			return s[i].Value.Float64()
		}
		return 0
	}
	return runStats{allocObjects: u(0), allocBytes: u(1), gcCPU: f(2), usedCPU: f(3) - f(4)}
}

// sub returns the counts between o and r.
func (r runStats) sub(o runStats) runStats {
	return runStats{allocObjects: r.allocObjects - o.allocObjects, allocBytes: r.allocBytes - o.allocBytes,
		gcCPU: r.gcCPU - o.gcCPU, usedCPU: r.usedCPU - o.usedCPU}
}

func (r *runStats) add(o runStats) {
	r.allocObjects += o.allocObjects
	r.allocBytes += o.allocBytes
	r.gcCPU += o.gcCPU
	r.usedCPU += o.usedCPU
}
