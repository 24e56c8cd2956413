//go:build agentslice_faults

package serverless

import (
	"os"
	"strings"
	"syscall"

	"github.com/agentslice/agentslice/internal/runtime"
)

func killFaults(getenv func(string) string) runtime.FaultInjector {
	var k killer
	for _, spec := range strings.Split(getenv(EnvFaultKill), ";") {
		parts := strings.SplitN(spec, ",", 3)
		if len(parts) == 3 {
			k = append(k, kill{point: runtime.CrashPoint(parts[0]), thread: parts[1], marker: parts[2]})
		}
	}
	if len(k) == 0 {
		return nil
	}
	return k
}

type kill struct {
	point  runtime.CrashPoint
	thread string
	marker string
}

type killer []kill

func (ks killer) Crash(p runtime.CrashPoint, threadID string) bool {
	for _, k := range ks {
		if p == k.point && threadID == k.thread {
			k.fire()
		}
	}
	return false
}

// fire kills the process unless the marker exists.
func (k kill) fire() {
	f, err := os.OpenFile(k.marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return // killed before (or the marker cannot be written: no kill)
	}
	_, _ = f.WriteString(string(k.point) + " " + k.thread + "\n")
	_ = f.Close()
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL cannot be caught; never return
}
