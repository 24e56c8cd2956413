// Package hostinfo says where a benchmark's numbers come from (the machine)
// and how much CPU the process used, for the load tests under loadtest/.
// It must not measure anything a benchmark does not print.
package hostinfo

import (
	"bufio"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Machine describes the machine: CPU model, core count, Go version and
// GOMAXPROCS.
func Machine() string {
	cpu := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	return cpu + ", " + strconv.Itoa(goruntime.NumCPU()) + " cores, " + goruntime.Version() + ", GOMAXPROCS=" + strconv.Itoa(goruntime.GOMAXPROCS(0))
}

// CPUTime returns the CPU time (user + system) this process has used. Under
// contention from other processes, work per CPU-second is the fairer
// throughput figure; the load tests report both.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
