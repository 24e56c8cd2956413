package model

import (
	"hash/fnv"
	"strings"

	"github.com/agentslice/agentslice/internal/runtime"
)

// DemoReply is the text the catalog's simulated model (provider "sim", what
// `serve` runs when no model is configured) answers with: a short answer of
// three or four different sentences that picks its subject from the user's
// last message and, after a tool result, says what the tool answered. It is
// deterministic: the same history gives the same reply, so a retried slice
// streams the same turn. The benchmarks do not use it (they set their own
// workloads on a Sim).
func DemoReply(req *runtime.CompletionRequest) string {
	question, result, afterTool := lastExchange(req.History)
	h := fnv.New64a()
	h.Write([]byte(question))
	seed := h.Sum64()
	topic := demoTopicFor(question)

	var b strings.Builder
	if afterTool {
		b.WriteString("The tool answered: ")
		b.WriteString(firstLine(result, 160))
		b.WriteString(". ")
	} else if q := firstLine(question, 80); q != "" {
		b.WriteString(demoOpeners[seed%uint64(len(demoOpeners))])
		b.WriteString(" “")
		b.WriteString(q)
		b.WriteString("”. ")
	}
	// Two or three sentences of the topic, in an order picked by the seed;
	// never the same sentence twice.
	facts := topic.facts
	n := 2 + int(seed>>8)%2
	start := int(seed>>16) % len(facts)
	for i := range min(n, len(facts)) {
		b.WriteString(facts[(start+i)%len(facts)])
		b.WriteString(" ")
	}
	b.WriteString(demoClosers[(seed>>24)%uint64(len(demoClosers))])
	return b.String()
}

// lastExchange returns the text of the last user item, the text of the last
// tool result and whether that result came after the user's message (the
// model's own call was answered).
func lastExchange(h []runtime.Item) (question, result string, afterTool bool) {
	for i := len(h) - 1; i >= 0; i-- {
		switch h[i].Kind {
		case runtime.ItemToolResult:
			if question == "" && !afterTool {
				result, afterTool = h[i].Text, true
			}
		case runtime.ItemUser:
			return h[i].Text, result, afterTool
		}
	}
	return "", result, afterTool
}

// firstLine is s's first non-empty line, trimmed and cut at max runes.
func firstLine(s string, max int) string {
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > max {
			line = string(r[:max]) + "…"
		}
		return strings.TrimRight(line, ".")
	}
	return ""
}

type demoTopic struct {
	words []string // any of these in the question picks the topic
	facts []string
}

func demoTopicFor(question string) demoTopic {
	q := strings.ToLower(question)
	for _, t := range demoTopics {
		for _, w := range t.words {
			if strings.Contains(q, w) {
				return t
			}
		}
	}
	return demoGeneral
}

var demoOpeners = [...]string{
	"Here is a short answer to",
	"Good question:",
	"Briefly, on",
	"A quick take on",
}

var demoClosers = [...]string{
	"(This reply comes from the simulated model; a model catalog in serve's -config file names a real one.)",
	"(I am the simulated model: give serve a model catalog with -config to get real answers.)",
	"(Simulated model reply; see “A real model” in the docs for Bedrock or an OpenAI-compatible endpoint.)",
}

var demoTopics = []demoTopic{
	{words: []string{"slice"}, facts: []string{
		"A slice loads a thread, runs one model completion, commits the turn and dispatches at most one tool call, then stops.",
		"Between slices nothing stays alive: a waiting agent is a row of data, not a goroutine or a process.",
		"Every message has a stable ID, so a slice that is retried after a crash produces the same history instead of a duplicate turn.",
		"A tool call is recorded before it is sent, so no crash can leave an agent waiting for a call that never went out.",
	}},
	{words: []string{"wait", "sleep", "timer", "later", "tomorrow"}, facts: []string{
		"An agent that waits for a build, a person or a timer costs no CPU while it waits.",
		"Sleeps are timers through the runtime's timers port, and a user's message interrupts them.",
		"When the awaited event arrives it becomes an ordinary message, and the next slice picks the thread up where it left off.",
	}},
	{words: []string{"tool", "rap", "mcp", "call"}, facts: []string{
		"Tools are HTTP services speaking the Reactive Agent Protocol: the runtime posts an invocation and does not wait.",
		"A tool answers later by posting to a signed callback URL, which the runtime checks before anything reaches the model.",
		"MCP servers are reached through a proxy that presents them as an ordinary toolset.",
	}},
	{words: []string{"thread", "child", "spawn", "agent"}, facts: []string{
		"Each conversation is a thread with its own ordered history, and threads form a tree of parents and children.",
		"A child thread inherits its parent's history up to the spawn and reports back as an event in the parent's history.",
		"Slices of one thread never run at once, while different threads run in parallel.",
	}},
}

var demoGeneral = demoTopic{facts: []string{
	"agentslice runs each agent as a series of short slices and keeps nothing alive in between.",
	"Your message is now part of this thread's durable history, and so is this reply.",
	"Ask me about slices, waiting, tools or threads to hear how the runtime handles each.",
	"Everything the model sees is rebuilt from stored history, so a restart loses nothing.",
}}
