package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// sysEcho answers every completion with the system prompt it got.
type sysEcho struct {
	mu   sync.Mutex
	last map[string]string
}

func (m *sysEcho) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	m.mu.Lock()
	if m.last == nil {
		m.last = map[string]string{}
	}
	m.last[req.ThreadID] = req.System
	m.mu.Unlock()
	w.Text("sys=" + req.System)
	return nil
}

func (m *sysEcho) system(thread string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last[thread]
}

func versionServer(t *testing.T, dir, instructions string) (*Server, *sysEcho) {
	t.Helper()
	m := &sysEcho{}
	srv := startServerOpts(t, Config{Data: dir, Agents: []AgentConfig{{Agent: runtime.Agent{Name: "helper", Instructions: instructions}}}},
		Options{Model: m})
	return srv, m
}

// TestPinnedThreadKeepsItsInstructionsThroughARestart: a pinned thread and
// an unpinned one of the same agent; serve restarts on the same data
// directory with a changed definition. The unpinned thread switches (and
// says so in its history), the pinned one keeps its instructions until it
// is upgraded through the API, which its history records; the versions
// are listed with their threads. Bad upgrades are refused.
func TestPinnedThreadKeepsItsInstructionsThroughARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	v1 := runtime.Agent{Name: "helper", Instructions: "You are version one."}
	v2 := runtime.Agent{Name: "helper", Instructions: "You are version two."}
	srv, m := versionServer(t, dir, v1.Instructions)
	postMessage(t, srv, "thr_pinned", `{"text":"hi","upgrade":"pinned"}`)
	postMessage(t, srv, "thr_free", `{"text":"hi"}`)
	waitIdle(t, srv)
	if th := getThread(t, srv, "thr_pinned"); th.State.Upgrade != runtime.UpgradePinned || th.State.AgentHash != v1.Hash() {
		t.Fatalf("pinned thread's state %+v", th.State)
	}
	var e apiError
	if code := do(t, http.MethodPost, srv.URL()+"/threads/thr_free/messages", `{"text":"x","upgrade":"sometimes"}`, &e); code != http.StatusBadRequest || e.Field != "upgrade" {
		t.Fatalf("unknown policy: %d %+v", code, e)
	}
	srv.Stop()

	srv, m = versionServer(t, dir, v2.Instructions)
	postMessage(t, srv, "thr_pinned", `{"text":"again"}`)
	postMessage(t, srv, "thr_free", `{"text":"again"}`)
	waitIdle(t, srv)
	if got := m.system("thr_pinned"); got != v1.Instructions {
		t.Fatalf("pinned thread after the change ran %q", got)
	}
	if got := m.system("thr_free"); got != v2.Instructions {
		t.Fatalf("unpinned thread after the change ran %q", got)
	}
	if free := getThread(t, srv, "thr_free"); !strings.Contains(kinds(free.Items), "marker(agent)") {
		t.Fatalf("the unpinned thread's switch is not in its history: %s", kinds(free.Items))
	}
	if pinned := getThread(t, srv, "thr_pinned"); strings.Contains(kinds(pinned.Items), "marker(agent)") {
		t.Fatalf("the pinned thread changed version: %s", kinds(pinned.Items))
	}

	var vs versionsResponse
	if code := do(t, http.MethodGet, srv.URL()+"/agents/helper/versions", "", &vs); code != http.StatusOK || vs.Current != v2.Hash() || len(vs.Versions) != 2 {
		t.Fatalf("versions: %d %+v", code, vs)
	}
	if a, b := vs.Versions[0], vs.Versions[1]; a.Hash != v1.Hash() || a.Threads != 1 || a.Pinned != 1 || a.Current ||
		b.Hash != v2.Hash() || b.Threads != 1 || b.Pinned != 0 || !b.Current {
		t.Fatalf("versions %+v", vs.Versions)
	}
	if code := do(t, http.MethodGet, srv.URL()+"/agents/nobody/versions", "", &e); code != http.StatusNotFound {
		t.Fatalf("versions of an unknown agent: %d", code)
	}

	// Refused: an unknown version; an old version for a thread that
	// follows the latest; changing the policy of an existing thread.
	agentURL := func(th string) string { return srv.URL() + "/threads/" + th + "/agent" }
	if code := do(t, http.MethodPost, agentURL("thr_pinned"), `{"version":"0000"}`, &e); code != http.StatusBadRequest || e.Field != "version" {
		t.Fatalf("unknown version: %d %+v", code, e)
	}
	if code := do(t, http.MethodPost, agentURL("thr_free"), `{"version":"`+v1.Hash()+`"}`, &e); code != http.StatusConflict {
		t.Fatalf("old version for an unpinned thread: %d %+v", code, e)
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/thr_free/messages", `{"text":"x","upgrade":"pinned"}`, &e); code != http.StatusConflict || e.Field != "upgrade" {
		t.Fatalf("pinning an existing thread by message: %d %+v", code, e)
	}

	// The upgrade: recorded in history, applies from the next completion.
	if code := do(t, http.MethodPost, agentURL("thr_pinned"), `{"version":"`+v2.Hash()+`"}`, nil); code != http.StatusAccepted {
		t.Fatalf("upgrade: %d", code)
	}
	postMessage(t, srv, "thr_pinned", `{"text":"after the upgrade"}`)
	waitIdle(t, srv)
	if got := m.system("thr_pinned"); got != v2.Instructions {
		t.Fatalf("pinned thread after its upgrade ran %q", got)
	}
	pinned := getThread(t, srv, "thr_pinned")
	found := false
	for _, it := range pinned.Items {
		found = found || (it.Name == runtime.AgentMarkerName && strings.Contains(it.Text, "upgraded to definition version "+v2.Hash()))
	}
	if !found || pinned.State.AgentHash != v2.Hash() || pinned.State.Upgrade != runtime.UpgradePinned {
		t.Fatalf("after the upgrade: %s, state %+v", kinds(pinned.Items), pinned.State)
	}
}
