package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
)

// Scaling is the line -scaling prints: one profile run at GOMAXPROCS=1 and
// at every core, each in a fresh child process, same workload.
type Scaling struct {
	Profile string `json:"profile"`
	Store   string `json:"store"`
	Agents  int    `json:"agents"`
	Turns   int    `json:"turns"`
	Cores   int    `json:"cores"`
	// Cps1 and CpsN are completions per wall-clock second, freezing counted.
	Cps1    float64 `json:"cps_1"`
	CpsN    float64 `json:"cps_n"`
	Scaling float64 `json:"scaling"` // CpsN / Cps1
	// CPUPerCompletionRatio is the CPU time per completion at Cores over
	// that at one core: 1 means a second core adds no overhead.
	CPUPerCompletionRatio float64 `json:"cpu_per_completion_ratio"`
	CPUMicros1            float64 `json:"cpu_us_per_completion_1"`
	CPUMicrosN            float64 `json:"cpu_us_per_completion_n"`
	Allocs1               float64 `json:"allocs_per_completion_1"`
	AllocsN               float64 `json:"allocs_per_completion_n"`
	GCShare1              float64 `json:"gc_cpu_share_1"`
	GCShareN              float64 `json:"gc_cpu_share_n"`
	BytesPerIdleAgent1    int64   `json:"bytes_per_idle_agent_1"`
	Machine               string  `json:"machine"`
}

// runScaling runs the benchmark twice in child processes, at GOMAXPROCS=1
// and at GOMAXPROCS=NumCPU, and prints their summaries and one JSON line.
func runScaling(c config) error {
	cores := goruntime.NumCPU()
	var res [2]*Result
	for i, procs := range []int{1, cores} {
		r, err := runChild(c, procs)
		if err != nil {
			return fmt.Errorf("run at GOMAXPROCS=%d: %w", procs, err)
		}
		res[i] = r
		fmt.Printf("# GOMAXPROCS=%d: %.0f completions/s (wall), %.2f CPU-µs and %.1f allocations per completion, GC %.1f%% of CPU\n",
			procs, r.CompletionsPerSec, r.CPUMicrosPerCompletion, r.AllocsPerCompletion, 100*r.GCCPUShare)
	}
	one, n := res[0], res[1]
	out := Scaling{Profile: c.profile, Store: c.store, Agents: c.agents, Turns: c.turns, Cores: cores,
		Cps1: round(one.CompletionsPerSec, 0), CpsN: round(n.CompletionsPerSec, 0),
		Scaling:               round(n.CompletionsPerSec/one.CompletionsPerSec, 3),
		CPUPerCompletionRatio: round(n.CPUMicrosPerCompletion/one.CPUMicrosPerCompletion, 3),
		CPUMicros1:            round(one.CPUMicrosPerCompletion, 2), CPUMicrosN: round(n.CPUMicrosPerCompletion, 2),
		Allocs1: round(one.AllocsPerCompletion, 1), AllocsN: round(n.AllocsPerCompletion, 1),
		GCShare1: round(one.GCCPUShare, 3), GCShareN: round(n.GCCPUShare, 3),
		BytesPerIdleAgent1: one.BytesPerIdleAgent, Machine: one.Machine}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	return nil
}

// runChild runs the benchmark in a child process at procs and reads its
// final JSON line.
func runChild(c config, procs int) (*Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-agents", strconv.Itoa(c.agents), "-turns", strconv.Itoa(c.turns), "-wave", strconv.Itoa(c.wave),
		"-profile", c.profile, "-out", c.out, "-baseline-agents", "-1", "-progress="+strconv.FormatBool(c.progress),
		"-store", c.store, "-held-rss="+strconv.FormatBool(c.heldEachWave)) // each child a temporary data directory of its own
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("density child: %w", err)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	var r Result
	if err := json.Unmarshal(lines[len(lines)-1], &r); err != nil {
		return nil, fmt.Errorf("density child output: %w", err)
	}
	if r.GOMAXPROCS != procs {
		return nil, fmt.Errorf("density child ran at GOMAXPROCS=%d, want %d", r.GOMAXPROCS, procs)
	}
	return &r, nil
}

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}
