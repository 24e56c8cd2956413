package main

import (
	"bufio"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// rss returns the resident set size after a full GC that returns freed
// memory to the OS, the way the reference benchmark samples.
func rss() int64 {
	goruntime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return -1
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// machine describes where the numbers come from.
func machine() string {
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

// cpuTime returns the CPU time (user + system) this process has used. Under
// contention from other processes, completions per CPU-second is the fairer
// throughput figure; the load test reports both.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
