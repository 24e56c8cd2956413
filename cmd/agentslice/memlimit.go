package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// serve runs under a soft memory limit (runtime/debug.SetMemoryLimit), so
// that the collector works harder near the machine's memory instead of
// letting the heap grow to twice what is live. An embedded system whose
// idle threads are compressed history keeps a large live heap, and by
// default Go collects only when the heap has doubled since the last
// collection.
//
// Measured on the density benchmark (unique profile, 20,000 agents, one
// core, -held-rss, two runs each): peak RSS 820,596-827,012 KB without a
// limit, 601,336-601,440 KB with GOMEMLIMIT=640MiB, at the same CPU per
// completion (21.71-21.85 µs without, 21.36-21.55 with; GC 0.3-0.4%). A
// limit above the live heap costs nothing measurable; one below it makes
// the collector run continuously (the runtime caps that at about half the
// CPU), which is why the default leaves a quarter of the memory for
// everything the limit does not see (the kernel's page cache for the
// sqlite store, other processes) and live-heap growth.
//
// -memory-limit: "auto" (the default) keeps GOMEMLIMIT when it is set and
// otherwise sets three quarters of the memory the process may use (the
// cgroup's limit if there is one, else the machine's); "off" sets none; a
// size in GOMEMLIMIT's syntax (1073741824, 1024MiB, 1GiB) sets that.

// memoryLimitNum/memoryLimitDen is the share of the available memory the
// auto limit takes.
const memoryLimitNum, memoryLimitDen = 3, 4

// memorySources are where the memory a process may use is read from:
// cgroup v2, cgroup v1, the machine.
type memorySources struct {
	getenv   func(string) string
	readFile func(string) ([]byte, error)
}

var osMemorySources = memorySources{getenv: os.Getenv, readFile: os.ReadFile}

// keepLimit is what resolveMemoryLimit returns when the runtime's own limit
// (set from GOMEMLIMIT at start) stays as it is.
const keepLimit = -1

// resolveMemoryLimit turns -memory-limit's value into a limit in bytes
// (math.MaxInt64: none; keepLimit) and says where it came from.
func resolveMemoryLimit(v string, src memorySources) (limit int64, source string, err error) {
	switch v {
	case "", "auto":
		if src.getenv("GOMEMLIMIT") != "" {
			return keepLimit, "GOMEMLIMIT", nil
		}
		avail, from := availableMemory(src)
		if avail <= 0 {
			return math.MaxInt64, "none: the memory available could not be read", nil
		}
		return avail / memoryLimitDen * memoryLimitNum, fmt.Sprintf("auto: %d/%d of %d bytes (%s)", memoryLimitNum, memoryLimitDen, avail, from), nil
	case "off":
		return math.MaxInt64, "off", nil
	}
	n, err := parseSize(v)
	if err != nil {
		return 0, "", fmt.Errorf("-memory-limit %q: %w", v, err)
	}
	return n, "-memory-limit", nil
}

// applyMemoryLimit sets the resolved limit and returns the one in force.
func applyMemoryLimit(v string, src memorySources) (limit int64, source string, err error) {
	limit, source, err = resolveMemoryLimit(v, src)
	if err != nil {
		return 0, "", err
	}
	if limit == keepLimit {
		return debug.SetMemoryLimit(-1), source, nil
	}
	debug.SetMemoryLimit(limit)
	return limit, source, nil
}

// availableMemory returns the memory this process may use: the smaller of
// its cgroup's limit and the machine's memory; 0 if neither can be read.
func availableMemory(src memorySources) (int64, string) {
	var best int64
	from := ""
	take := func(n int64, name string) {
		if n > 0 && (best == 0 || n < best) {
			best, from = n, name
		}
	}
	if b, err := src.readFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil { // "max": no limit
			take(n, "cgroup memory.max")
		}
	}
	if b, err := src.readFile("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		// cgroup v1 says "no limit" with a huge number; the machine's
		// memory below is then the smaller one.
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			take(n, "cgroup memory.limit_in_bytes")
		}
	}
	if b, err := src.readFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
				if n, err := strconv.ParseInt(f[1], 10, 64); err == nil && n < math.MaxInt64/1024 {
					take(n*1024, "MemTotal")
				}
			}
		}
	}
	return best, from
}

// parseSize reads a size as GOMEMLIMIT writes one: a whole number of bytes
// with an optional unit B, KiB, MiB, GiB or TiB.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	num, shift := s, uint(0)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = rest, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	switch {
	case err != nil:
		return 0, errors.New("want a whole number of bytes, optionally with B, KiB, MiB, GiB or TiB (as GOMEMLIMIT), or auto, or off")
	case n <= 0:
		return 0, errors.New("want a positive size")
	case n > math.MaxInt64>>shift:
		return 0, errors.New("too large")
	}
	return n << shift, nil
}
