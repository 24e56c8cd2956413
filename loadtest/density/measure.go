package main

import (
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
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
