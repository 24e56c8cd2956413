package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// profiler writes a CPU profile of the turns from..to (-cpuprofile,
// -profile-from, -profile-to), so that a late window of a run can be
// compared with an early one.
type profiler struct {
	path     string
	from, to int
	f        *os.File
	done     bool
}

// turn is called before turn t: it starts the profile at from and stops it
// after to.
func (p *profiler) turn(t int) error {
	if p.path == "" || p.done {
		return nil
	}
	if t == p.to+1 {
		return p.stop()
	}
	if t != p.from || p.f != nil {
		return nil
	}
	f, err := os.Create(p.path)
	if err != nil {
		return fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("-cpuprofile: %w", err)
	}
	p.f = f
	return nil
}

// stop ends the profile if it runs; calling it again does nothing.
func (p *profiler) stop() error {
	if p.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.f.Close()
	p.f, p.done = nil, true
	return err
}
