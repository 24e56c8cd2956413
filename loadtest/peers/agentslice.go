package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// densityResult is the part of loadtest/density's final JSON line the
// peers table uses.
type densityResult struct {
	Agents              int     `json:"agents"`
	Turns               int     `json:"turns"`
	Completions         int64   `json:"completions"`
	Seconds             float64 `json:"seconds"`
	CompletionsPerSec   float64 `json:"completions_per_sec"`
	CPUSeconds          float64 `json:"cpu_seconds"`
	RSSBytes            int64   `json:"rss_bytes"`
	BaselineRSSBytes    int64   `json:"baseline_rss_bytes"`
	BytesPerIdleAgent   int64   `json:"bytes_per_idle_agent"`
	DiskBytesPerAgent   int64   `json:"disk_bytes_per_agent"`
	JournalFileBytes    int64   `json:"journal_file_bytes"`
	StoredBytesPerAgent int64   `json:"stored_bytes_per_agent"`
	Verified            bool    `json:"history_verified"`
	GOMAXPROCS          int     `json:"gomaxprocs"`
}

// runAgentslice runs the density benchmark (profile unique: different
// prose per agent and turn, like the peers' generator) as a child process
// on store ("memory" or "sqlite", serve's durable store) and turns its
// final JSON line into a row. It is agentslice in process: the users and
// the asynchronous tool are goroutines of the same process, no HTTP; its
// memory figure is per agent idle after its last turn, which for
// agentslice is the same row of data as an agent waiting for a tool result.
func runAgentslice(ctx context.Context, root, workDir, store string, agents, turns int) (row, error) {
	r := row{System: "density-" + store, Mode: "in process (density benchmark as a child; users and tool are goroutines, no HTTP)"}
	bin := filepath.Join(workDir, "density")
	if _, err := os.Stat(bin); err != nil {
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./loadtest/density")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return r, fmt.Errorf("go build ./loadtest/density: %v: %s", err, out)
		}
	}
	out := filepath.Join(workDir, "density-"+store)
	cmd := exec.CommandContext(ctx, bin, "-store", store, "-profile", "unique", "-agents", strconv.Itoa(agents),
		"-turns", strconv.Itoa(turns), "-wave", strconv.Itoa(min(500, agents)), "-baseline-agents", "-1",
		"-progress=false", "-out", out)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return r, fmt.Errorf("density -store %s: %v: %s", store, err, strings.TrimSpace(stderr.String()))
	}
	var last string
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); strings.HasPrefix(t, "{") {
			last = t
		}
	}
	var d densityResult
	if err := json.Unmarshal([]byte(last), &d); err != nil {
		return r, fmt.Errorf("density printed no final JSON line (%v): %s", err, stdout)
	}
	if !d.Verified {
		return r, fmt.Errorf("density did not verify the histories")
	}
	r.Agents, r.Turns, r.Completions, r.Seconds = d.Agents, d.Turns, d.Completions, d.Seconds
	r.CompletionsPerSec = d.CompletionsPerSec
	r.CPUSeconds = d.CPUSeconds
	r.CPUMsPerCompletion = d.CPUSeconds * 1e3 / float64(d.Completions)
	r.BaselineBytes = d.BaselineRSSBytes
	r.WaitingBytes = d.RSSBytes
	r.BytesPerWaitingAgent = d.BytesPerIdleAgent
	r.RSSBytesPerWaitingAgent = d.BytesPerIdleAgent
	r.DiskBytesPerAgent = d.DiskBytesPerAgent
	r.Processes = "the density process (RSS after GC + FreeOSMemory, as density reports it)"
	r.Settings = map[string]string{"profile": "unique", "gomaxprocs": strconv.Itoa(d.GOMAXPROCS), "store": store}
	if store == "sqlite" {
		r.Settings["durability"] = "serve's durable store: every commit and accepted message fsynced (journal, group commit) before it is acknowledged"
		r.Settings["journal_file_bytes"] = strconv.FormatInt(d.JournalFileBytes, 10)
	} else {
		r.Settings["durability"] = "none (in-memory store)"
	}
	r.WakeNote = "not measured: the density benchmark has no external wake-up path to time (its tool results come back through the in-process queue at once)"
	return r, nil
}
