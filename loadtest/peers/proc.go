package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

// clkTck is USER_HZ, the unit of utime and stime in /proc/PID/stat (100 on
// every Linux this runs on).
const clkTck = 100

// procMem is what a set of processes holds: the sum of VmRSS (shared pages
// counted once per process) and the sum of Pss (shared pages divided among
// the processes sharing them, so a set's sum counts each page once).
type procMem struct {
	RSS, PSS int64
}

// memOf sums VmRSS and Pss (smaps_rollup) over pids; a pid that has gone is
// skipped.
func memOf(pids []int) procMem {
	var m procMem
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 {
				continue
			}
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "Rss:":
				m.RSS += kb << 10
			case "Pss:":
				m.PSS += kb << 10
			}
		}
	}
	return m
}

// cpuOf sums utime+stime of pids (their own threads; children they reaped
// are not counted, and none of these processes reaps any). The harness's
// own process is read from getrusage, at microseconds rather than ticks.
func cpuOf(pids []int) time.Duration {
	var ticks int64
	var self time.Duration
	for _, pid := range pids {
		if pid == os.Getpid() {
			self += hostinfo.CPUTime()
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses and may hold spaces.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return self + time.Duration(ticks)*time.Second/clkTck
}

// withDescendants returns roots and every live descendant of them.
func withDescendants(roots []int) []int {
	parent := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[pp] = append(parent[pp], pid)
	}
	var out []int
	seen := map[int]bool{}
	var walk func(int)
	walk = func(p int) {
		if seen[p] {
			return
		}
		seen[p] = true
		out = append(out, p)
		for _, c := range parent[p] {
			walk(c)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return out
}

// dirBytes is the apparent size of the files under dir (du
// --apparent-size): RocksDB preallocates its logs' blocks, so the blocks
// allocated would not move with what was written.
func dirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// child is a process the harness started, in its own process group, with
// its output in a log file the error names if it dies.
type child struct {
	name string
	cmd  *exec.Cmd
	log  string
	exit chan error
}

func startChild(name, dir, logDir string, env []string, argv ...string) (*child, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, exit: make(chan error, 1)}
	go func() { c.exit <- cmd.Wait(); f.Close() }()
	return c, nil
}

// stop sends SIGTERM to the child's group, then SIGKILL after 10 s.
func (c *child) stop() {
	if c == nil || c.cmd.Process == nil {
		return
	}
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.exit:
	case <-time.After(10 * time.Second):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exit
	}
}

// tail is the end of the child's log, for an error message.
func (c *child) tail() string {
	b, _ := os.ReadFile(c.log)
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return strings.TrimSpace(string(b))
}
