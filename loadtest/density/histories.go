package main

import (
	"strconv"
	"strings"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// codecHistory is one agent's history of turns turns in the cold tier's
// item encoding.
func codecHistory(w *workload, agent string, turns int) []byte {
	return local.AppendItems(nil, agent, "", 0, codecItems(w, agent, turns))
}

// codecItems is one agent's history of turns turns, as the benchmark's
// agents commit it.
func codecItems(w *workload, agent string, turns int) []runtime.Item {
	var items []runtime.Item
	for t := 1; t <= turns; t++ {
		completion := func(k int) string {
			if w.profile == "infinity" {
				return strings.Repeat(infinityChunk, chunks)
			}
			var s strings.Builder
			for i := range chunks {
				s.WriteString(w.pool.cut(seedOf("chunk", agent, strconv.Itoa(t), strconv.Itoa(k), strconv.Itoa(i)), chunkBytes))
			}
			return s.String()
		}
		pos := len(items)
		call := runtime.CallIDAt(agent, "", pos+2)
		items = append(items,
			runtime.Item{Kind: runtime.ItemUser, Input: "u-" + strconv.Itoa(t), Text: w.userText(agent, t)},
			runtime.Item{Kind: runtime.ItemAssistant, Text: completion(0)},
			runtime.Item{Kind: runtime.ItemToolCall, CallID: call, Name: toolName, Args: toolArgs},
			runtime.Item{Kind: runtime.ItemToolResult, CallID: call, Input: runtime.ResultID(agent, call),
				Text: w.resultText(runtime.Invocation{ThreadID: agent, CallID: call})},
			runtime.Item{Kind: runtime.ItemAssistant, Text: completion(1)})
	}
	return items
}
