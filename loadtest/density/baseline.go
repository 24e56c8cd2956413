package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The conventional design, measured in the same run: one goroutine per agent
// that holds its history in a slice and blocks waiting for its tool result.
// It runs in a child process so its memory does not mix with ours.

type baselineResult struct {
	Agents        int   `json:"agents"`
	RSSBefore     int64 `json:"rss_before"`
	RSSAfter      int64 `json:"rss_after"`
	BytesPerAgent int64 `json:"bytes_per_agent"`
}

type convItem struct {
	role, text, toolCallID string
}

// runBaselineChild is the child process: N blocked agents, then report.
func runBaselineChild(agents, turns int, profile string) error {
	w := newWorkload(profile)
	before := rss()
	var ready sync.WaitGroup
	release := make(chan struct{})
	var done sync.WaitGroup
	ready.Add(agents)
	done.Add(agents)
	for i := range agents {
		go func() {
			defer done.Done()
			name := agentName(i)
			var history []convItem
			for t := 1; t <= turns; t++ {
				history = append(history, convItem{role: "user", text: w.userText(name, t)})
				for c := range 2 {
					var b strings.Builder
					for k := range chunks {
						if profile == "infinity" {
							b.WriteString(infinityChunk)
						} else {
							b.WriteString(w.pool.cut(seedOf("chunk", name, strconv.Itoa(t), strconv.Itoa(c), strconv.Itoa(k)), chunkBytes))
						}
					}
					history = append(history, convItem{role: "assistant", text: b.String()})
					if c == 0 {
						id := fmt.Sprintf("call-%d", t)
						history = append(history, convItem{role: "tool_call", text: toolArgs, toolCallID: id})
						history = append(history, convItem{role: "tool", text: w.resultText(runtimeInv(name, id)), toolCallID: id})
					}
				}
			}
			ready.Done()
			<-release // waiting for the next tool result, as a blocked agent does
			goruntime.KeepAlive(history)
		}()
	}
	ready.Wait()
	after := rss()
	close(release)
	done.Wait()
	return json.NewEncoder(os.Stdout).Encode(baselineResult{Agents: agents, RSSBefore: before, RSSAfter: after,
		BytesPerAgent: (after - before) / int64(agents)})
}

// runBaseline starts the child and reads its result.
func runBaseline(agents, turns int, profile string) (*baselineResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-baseline-child", "-agents", strconv.Itoa(agents), "-turns", strconv.Itoa(turns), "-profile", profile)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("baseline child: %w", err)
	}
	var r baselineResult
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("baseline child output %q: %w", out, err)
	}
	return &r, nil
}

func runtimeInv(thread, call string) runtime.Invocation {
	return runtime.Invocation{ThreadID: thread, CallID: call}
}
