package main

import (
	"io/fs"
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func fakeMemory(env map[string]string, files map[string]string) memorySources {
	return memorySources{
		getenv: func(k string) string { return env[k] },
		readFile: func(p string) ([]byte, error) {
			if s, ok := files[p]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		},
	}
}

const meminfo24G = "MemTotal:       25165824 kB\nMemFree:        1000 kB\n"

func TestMemoryLimitResolves(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		env, files map[string]string
		want       int64
		source     string
		keep       bool
	}{
		{name: "machine", files: map[string]string{"/proc/meminfo": meminfo24G}, want: 18 << 30, source: "MemTotal"},
		{name: "cgroup v2 below the machine", files: map[string]string{"/proc/meminfo": meminfo24G, "/sys/fs/cgroup/memory.max": "1073741824\n"},
			want: 768 << 20, source: "memory.max"},
		{name: "cgroup v2 without a limit", files: map[string]string{"/proc/meminfo": meminfo24G, "/sys/fs/cgroup/memory.max": "max\n"},
			want: 18 << 30, source: "MemTotal"},
		{name: "cgroup v1 unlimited", files: map[string]string{"/proc/meminfo": meminfo24G, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"},
			want: 18 << 30, source: "MemTotal"},
		{name: "cgroup v1 limit", flag: "auto", files: map[string]string{"/proc/meminfo": meminfo24G, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "4294967296"},
			want: 3 << 30, source: "limit_in_bytes"},
		{name: "nothing readable", want: math.MaxInt64, source: "could not be read"},
		{name: "GOMEMLIMIT wins over auto", env: map[string]string{"GOMEMLIMIT": "2GiB"}, files: map[string]string{"/proc/meminfo": meminfo24G},
			source: "GOMEMLIMIT", keep: true},
		{name: "the flag wins over GOMEMLIMIT", flag: "512MiB", env: map[string]string{"GOMEMLIMIT": "2GiB"}, want: 512 << 20, source: "-memory-limit"},
		{name: "off", flag: "off", files: map[string]string{"/proc/meminfo": meminfo24G}, want: math.MaxInt64, source: "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, source, err := resolveMemoryLimit(tc.flag, fakeMemory(tc.env, tc.files))
			if err != nil {
				t.Fatal(err)
			}
			if keep := got == keepLimit; keep != tc.keep || (!keep && got != tc.want) || !strings.Contains(source, tc.source) {
				t.Fatalf("got %d (%q), want %d (%q, keep %v)", got, source, tc.want, tc.source, tc.keep)
			}
		})
	}
}

func TestMemoryLimitSizes(t *testing.T) {
	for in, want := range map[string]int64{"1073741824": 1 << 30, "1024MiB": 1 << 30, "1GiB": 1 << 30, "3KiB": 3 << 10, "5B": 5, "2TiB": 2 << 40} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1GiB", "1.5GiB", "12XB", "GiB", "9999999TiB", "1 GiB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
	if _, _, err := resolveMemoryLimit("lots", fakeMemory(nil, nil)); err == nil || !strings.Contains(err.Error(), "-memory-limit") {
		t.Errorf("a bad -memory-limit gave %v", err)
	}
}

// applyMemoryLimit sets the runtime's limit (process-wide; restored after).
func TestMemoryLimitIsApplied(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	limit, _, err := applyMemoryLimit("3GiB", fakeMemory(nil, nil))
	if err != nil || limit != 3<<30 || debug.SetMemoryLimit(-1) != 3<<30 {
		t.Fatalf("applied %d (%v); runtime has %d", limit, err, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(7 << 30) // as GOMEMLIMIT=7GiB would have at start
	limit, source, err := applyMemoryLimit("auto", fakeMemory(map[string]string{"GOMEMLIMIT": "7GiB"}, map[string]string{"/proc/meminfo": meminfo24G}))
	if err != nil || limit != 7<<30 || source != "GOMEMLIMIT" || debug.SetMemoryLimit(-1) != 7<<30 {
		t.Fatalf("with GOMEMLIMIT: %d %q %v; runtime has %d", limit, source, err, debug.SetMemoryLimit(-1))
	}
	if _, _, err := applyMemoryLimit("none", fakeMemory(nil, nil)); err == nil {
		t.Fatal("a bad value was applied")
	}
	if debug.SetMemoryLimit(-1) != 7<<30 {
		t.Fatal("a bad value changed the limit")
	}
}
