package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

// The codec bound of issue 35 is what one core could do if a completion
// cost only the cold tier's codec and the slice: 1 / (codec µs + slice µs)
// completions per second. Both inputs are measured apart from the run, so
// that the run's completions/s over the bound says how much of the run is
// spent on neither (the users' driver, scheduling between waves, the
// collector's work on a large frozen heap, the machine's other load):
//
//   - codec µs: -codec-us (make bench-codec's µs/completion of the level
//     the store keeps), else the store's own freezing, timed before the
//     run on a store of its own: calCodecAgents histories shaped like the
//     run's, frozen in one FreezeIdle after the dictionary and the level
//     are learned (item encoding, compression and the arena's copy: what a
//     run's freezing does per agent);
//   - slice µs: the same workload on a store that never freezes (no codec
//     at all), calSliceAgents agents at most, run before the population
//     on a System of its own.
const (
	calCodecAgents = 256
	calSliceAgents = 2000
)

// calibration is the codec bound's two inputs and where each comes from.
type calibration struct {
	codecUs, sliceUs     float64
	codecFrom, sliceFrom string
}

func calibrate(c config, w *workload) (calibration, error) {
	var cal calibration
	if c.codecUs > 0 {
		cal.codecUs, cal.codecFrom = c.codecUs, "-codec-us"
	} else {
		cal.codecUs = measureCodec(w, c.turns)
		cal.codecFrom = fmt.Sprintf("the store freezing %d agents before the run", calCodecAgents)
	}
	n := min(c.agents, calSliceAgents)
	us, err := measureSlice(c, w, n)
	if err != nil {
		return cal, fmt.Errorf("measuring the slice alone: %w", err)
	}
	cal.sliceUs, cal.sliceFrom = us, fmt.Sprintf("%d agents on a store that never freezes, before the run", n)
	return cal, nil
}

// measureCodec is the in-memory store's freezing, CPU-µs per completion
// (two per turn): calCodecAgents hot agents frozen in one pass, after 40
// others taught the store its dictionary and its level.
func measureCodec(w *workload, turns int) float64 {
	ctx := context.Background()
	s := local.NewHistoryStore()
	commit := func(agent string) {
		items := codecItems(w, agent, turns)
		// A fresh store and new IDs: the commit cannot be refused.
		_ = s.Commit(ctx, &runtime.Commit{ThreadID: agent, Expected: 0, Append: items,
			State: runtime.ThreadState{Version: 1, Length: len(items), Stack: []string{agent}}})
	}
	for i := range 40 {
		commit(agentName(2_000_000 + i))
		s.FreezeIdle(-1)
	}
	for i := range calCodecAgents {
		commit(agentName(3_000_000 + i))
	}
	c0 := hostinfo.CPUTime()
	s.FreezeIdle(-1)
	return float64((hostinfo.CPUTime() - c0).Microseconds()) / float64(calCodecAgents*2*turns)
}

// measureSlice runs n agents of the workload on an in-memory store that
// never freezes and returns the CPU-µs per completion.
func measureSlice(c config, w *workload, n int) (float64, error) {
	var completions atomic.Int64
	sys, d, err := startSystem(c, w, local.NewHistoryStore(), nil, nil, &completions)
	if err != nil {
		return 0, err
	}
	defer sys.Stop()
	c0 := hostinfo.CPUTime()
	for start := 0; start < n; start += c.wave {
		d.launch(start, min(c.wave, n-start))
		<-d.done
		select {
		case <-sys.Idle():
		case <-time.After(time.Minute):
			return 0, errors.New("threads still active a minute after their wave finished")
		}
	}
	cpu := hostinfo.CPUTime() - c0
	if f := d.failures.Load(); f > 0 {
		return 0, fmt.Errorf("%d agents ended with an error output; first: %s", f, d.firstErr())
	}
	if completions.Load() == 0 {
		return 0, errors.New("no completion")
	}
	return float64(cpu.Microseconds()) / float64(completions.Load()), nil
}

// codecBound fills the codec bound from the calibration, and the run's own
// split of its CPU (freezing, the rest) beside it.
func (r *Result) codecBound(cal calibration, freezeCPU time.Duration) {
	if r.Completions == 0 {
		return
	}
	n := float64(r.Completions)
	r.RunFreezeUs = freezeCPU.Seconds() * 1e6 / n
	r.RunSliceUs = (r.CPUSeconds - freezeCPU.Seconds()) * 1e6 / n
	if cal.codecUs <= 0 || cal.sliceUs <= 0 {
		return
	}
	r.CodecUs, r.CodecUsFrom = cal.codecUs, cal.codecFrom
	r.SliceUs, r.SliceUsFrom = cal.sliceUs, cal.sliceFrom
	r.CodecBound = 1e6 / (r.CodecUs + r.SliceUs)
	r.CodecBoundFraction = r.CompletionsPerSec / r.CodecBound
}
