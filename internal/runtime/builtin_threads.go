package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ThreadTools returns the built-in thread tools, all synchronous:
// spawn_thread, report_to_parent, close_thread, send_message_to_child and
// cancel_subscription. Register them in the toolbox offered to agents.
func ThreadTools() []ToolEntry {
	return []ToolEntry{
		{Spec: ToolSpec{Name: "spawn_thread", Description: "Start a child thread that works on the given instructions in parallel, " +
			"with a copy of this conversation so far. It reports back as an event tied to this call. child_of must be your own thread stack, root first.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"instructions":{"type":"string","minLength":1},"child_of":{"type":"array","items":{"type":"string"}},"agent":{"type":"string","description":"the agent the child runs as; default: yours"}},"required":["instructions","child_of"]}`)},
			Sync: syncFunc(spawnThread), Toolset: ToolsetThreads},
		{Spec: ToolSpec{Name: "report_to_parent", Description: "Send a report to the thread that spawned this one.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"report":{"type":"string","minLength":1}},"required":["report"]}`)},
			Sync: syncFunc(reportToParent), Toolset: ToolsetThreads},
		{Spec: ToolSpec{Name: "close_thread", Description: "Close this thread for good, optionally sending a last report to the parent.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"thread_id":{"type":"string"},"report_to_parent":{"type":"string"}},"required":["thread_id"]}`)},
			Sync: syncFunc(closeThread), Toolset: ToolsetThreads},
		{Spec: ToolSpec{Name: "send_message_to_child", Description: "Send a message to one of your direct child threads.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"thread_id":{"type":"string"},"message":{"type":"string","minLength":1}},"required":["thread_id","message"]}`)},
			Sync: syncFunc(sendToChild), Toolset: ToolsetThreads},
		{Spec: ToolSpec{Name: "cancel_subscription", Description: "Stop an active subscription, named by the tool call that started it.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"tool_call_id":{"type":"string"}},"required":["tool_call_id"]}`)},
			Sync: syncFunc(cancelSubscription), Toolset: ToolsetThreads},
	}
}

type syncFunc func(ctx context.Context, env *SyncEnv, inv Invocation) (ToolOutput, error)

func (f syncFunc) Run(ctx context.Context, env *SyncEnv, inv Invocation) (ToolOutput, error) {
	return f(ctx, env, inv)
}

// parseArgs decodes a tool's JSON arguments, turning a decoding failure
// into a rejection the model can read.
func parseArgs(inv Invocation, v any) error {
	if err := json.Unmarshal([]byte(inv.Args), v); err != nil {
		return &ToolRejectedError{Tool: inv.Name, Reason: "arguments do not match the schema: " + err.Error()}
	}
	return nil
}

func reject(inv Invocation, format string, args ...any) error {
	return &ToolRejectedError{Tool: inv.Name, Reason: fmt.Sprintf(format, args...)}
}

// ChildThreadID is the ID of the thread spawned by call in thread parent.
func ChildThreadID(parent, call string) string { return DeriveID("thr_", parent, call) }

func spawnThread(ctx context.Context, env *SyncEnv, inv Invocation) (ToolOutput, error) {
	var a struct {
		Instructions string   `json:"instructions"`
		ChildOf      []string `json:"child_of"`
		Agent        string   `json:"agent"`
	}
	if err := parseArgs(inv, &a); err != nil {
		return ToolOutput{}, err
	}
	if strings.TrimSpace(a.Instructions) == "" {
		return ToolOutput{}, reject(inv, "instructions must not be empty")
	}
	if !slices.Equal(a.ChildOf, env.State.Stack) {
		return ToolOutput{}, reject(inv, "child_of %q is not your thread stack %q: you are thread %s; stick to your own task and spawn only your own children",
			a.ChildOf, env.State.Stack, env.Thread.ID)
	}
	agent, hash, err := spawnAgent(env, inv, a.Agent)
	if err != nil {
		return ToolOutput{}, err
	}
	if n := env.MaxChildren; n > 0 && len(env.State.Open) >= n {
		return ToolOutput{}, reject(inv, "this thread has %d children alive, its limit: wait for one to close (its close_thread), or send one a message to finish (send_message_to_child); alive: %s",
			len(env.State.Open), strings.Join(env.State.Open, ", "))
	}
	child := ChildThreadID(env.Thread.ID, inv.CallID)
	stack := append(slices.Clone(env.State.Stack), child)
	st := ThreadState{Parent: env.Thread.ID, Stack: stack, SpawnCall: inv.CallID, Agent: agent, AgentHash: hash,
		ParentClass: env.State.Class.OrDefault(), Incarnation: childIncarnation(env.State.Incarnation, child)}
	st.Class = childClass(st.ParentClass, st)
	if hash != "" {
		st.Upgrade = env.State.Upgrade // the caller's own version: a pinned caller's child stays on it
	}
	env.CreateChild(ChildThread{ID: child, SpawnAt: env.Position, State: st})
	env.State.Children = append(env.State.Children, child)
	env.State.Open = append(env.State.Open, child)
	env.Send(Message{ID: DeriveID("start_", child), ThreadID: child, Kind: KindStart, Class: st.Class,
		Text: "You are child thread " + child + " (thread stack " + strings.Join(stack, " > ") + "), spawned by your parent with these instructions:\n\n" +
			a.Instructions + "\n\nWork on them alone. Use report_to_parent to send results, and close_thread when you are done."})
	return ToolOutput{Text: "spawned thread " + child + "; it works in parallel and its reports arrive as events tied to this call"}, nil
}

// spawnAgent picks the agent a spawned child runs as: the caller's own
// (same version), or the one named, which the caller's agent must list in
// Spawnable (by default only itself).
func spawnAgent(env *SyncEnv, inv Invocation, name string) (agent, hash string, err error) {
	if name == "" || (env.Agent != nil && name == env.Agent.Agent.Name) {
		return env.State.Agent, env.State.AgentHash, nil
	}
	if env.Agent == nil || env.Agents == nil {
		return "", "", reject(inv, "agent %q: this deployment defines no agents; leave agent out", name)
	}
	if !env.Agent.Agent.CanSpawn(name) {
		allowed := env.Agent.Agent.Spawnable
		if len(allowed) == 0 {
			allowed = []string{env.Agent.Agent.Name}
		}
		return "", "", reject(inv, "agent %q may not be spawned by agent %q (spawnable: %s)", name, env.Agent.Agent.Name, strings.Join(allowed, ", "))
	}
	v, ok := env.Agents.Agent(name)
	if !ok {
		return "", "", reject(inv, "agent %q is not defined", name)
	}
	return v.Agent.Name, v.Hash, nil
}

func reportToParent(ctx context.Context, env *SyncEnv, inv Invocation) (ToolOutput, error) {
	var a struct {
		Report string `json:"report"`
	}
	if err := parseArgs(inv, &a); err != nil {
		return ToolOutput{}, err
	}
	if a.Report == "" {
		return ToolOutput{}, reject(inv, "report must not be empty")
	}
	if env.State.Parent == "" {
		return ToolOutput{}, reject(inv, "this is a root thread; it has no parent to report to")
	}
	sendReport(env, inv, a.Report)
	return ToolOutput{Text: "report sent to thread " + env.State.Parent}, nil
}

func sendReport(env *SyncEnv, inv Invocation, report string) {
	to := mutateReportTo(env.State)
	env.Send(Message{ID: DeriveID("rep_", env.Thread.ID, inv.CallID), ThreadID: to, Kind: KindReport,
		ToolCallID: env.State.SpawnCall, From: env.Thread.ID, Text: report})
}

func closeThread(ctx context.Context, env *SyncEnv, inv Invocation) (ToolOutput, error) {
	var a struct {
		ThreadID string `json:"thread_id"`
		Report   string `json:"report_to_parent"`
	}
	if err := parseArgs(inv, &a); err != nil {
		return ToolOutput{}, err
	}
	if a.ThreadID != env.Thread.ID {
		return ToolOutput{}, reject(inv, "a thread can close only itself; you are %s, not %q", env.Thread.ID, a.ThreadID)
	}
	if a.Report != "" {
		if env.State.Parent == "" {
			return ToolOutput{}, reject(inv, "this is a root thread; it has no parent to report to")
		}
		sendReport(env, inv, a.Report)
	}
	env.State.Closed = true
	env.State.Open = nil // a closed thread spawns no more: its count is done
	// A closed thread waits for no summary: one still at work is dropped
	// when it arrives.
	env.State.Compacting = ""
	if m := closeNotice(env.Thread.ID, env.State); m != nil {
		env.Send(*m)
	}
	return ToolOutput{Text: "thread closed"}, nil
}

// closeNotice is the message that tells a spawned child's parent that the
// child closed, so that it no longer counts it alive (ThreadState.Open,
// Limits.MaxChildren): a report with Final set and no text, which enters
// no history. nil for a thread no spawn_thread created.
func closeNotice(threadID string, st *ThreadState) *Message {
	if st.Parent == "" || st.SpawnCall == "" || st.Temporary || st.Compaction {
		return nil
	}
	return &Message{V: MessageVersion, ID: DeriveID("cls_", threadID), ThreadID: st.Parent, Kind: KindReport,
		ToolCallID: st.SpawnCall, From: threadID, Final: true}
}

// isCloseNotice reports whether m is a closeNotice.
func isCloseNotice(m *Message) bool { return m.Kind == KindReport && m.Final && m.Text == "" }

func sendToChild(ctx context.Context, env *SyncEnv, inv Invocation) (ToolOutput, error) {
	var a struct {
		ThreadID string `json:"thread_id"`
		Message  string `json:"message"`
	}
	if err := parseArgs(inv, &a); err != nil {
		return ToolOutput{}, err
	}
	if a.Message == "" {
		return ToolOutput{}, reject(inv, "message must not be empty")
	}
	if !slices.Contains(env.State.Children, a.ThreadID) {
		return ToolOutput{}, reject(inv, "%q is not a direct child of this thread (children: %q)", a.ThreadID, env.State.Children)
	}
	env.Send(Message{ID: DeriveID("pm_", env.Thread.ID, inv.CallID), ThreadID: a.ThreadID, Kind: KindParent,
		From: env.Thread.ID, Text: a.Message})
	return ToolOutput{Text: "message sent to " + a.ThreadID}, nil
}

func cancelSubscription(ctx context.Context, env *SyncEnv, inv Invocation) (ToolOutput, error) {
	var a struct {
		ToolCallID string `json:"tool_call_id"`
	}
	if err := parseArgs(inv, &a); err != nil {
		return ToolOutput{}, err
	}
	i := slices.IndexFunc(env.State.Subscriptions, func(s Subscription) bool { return s.CallID == a.ToolCallID })
	if i < 0 {
		return ToolOutput{}, reject(inv, "no active subscription started by call %q", a.ToolCallID)
	}
	sub := env.State.Subscriptions[i]
	env.State.Subscriptions = slices.Delete(slices.Clone(env.State.Subscriptions), i, i+1)
	env.CancelCall(sub.CallID, sub.Tool)
	return ToolOutput{Text: "subscription " + sub.CallID + " cancelled"}, nil
}
