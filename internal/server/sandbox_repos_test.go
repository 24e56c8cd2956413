package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/rap/sandbox"
	"github.com/agentslice/agentslice/internal/runtime"
)

// scriptFile writes a model script for the test and returns its path.
func scriptFile(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// toolResultOf returns the text of the result of the thread's tool call
// named tool, the n-th (0-based) such call.
func toolResultOf(t *testing.T, th threadResponse, tool string, n int) string {
	t.Helper()
	seen := 0
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult && it.Name == tool {
			if seen == n {
				return it.Text
			}
			seen++
		}
	}
	t.Fatalf("no result %d of %s: %s", n, tool, kinds(th.Items))
	return ""
}

// waitReply waits until the thread is idle after the reply text.
func waitReply(t *testing.T, srv *Server, thread, text string) threadResponse {
	t.Helper()
	var th threadResponse
	waitUntil(t, thread+"'s reply "+text, func() bool {
		th = threadResponse{}
		if do(t, http.MethodGet, srv.URL()+"/threads/"+thread, "", &th) != http.StatusOK {
			return false // not created yet
		}
		return th.Status == "idle" && len(th.Items) > 0 && th.Items[len(th.Items)-1].Text == text
	})
	return th
}

// waitChoice waits until the thread waits for a person's choice.
func waitChoice(t *testing.T, srv *Server, thread string) *choiceView {
	t.Helper()
	var th threadResponse
	waitUntil(t, thread+" waiting for a choice", func() bool {
		th = threadResponse{}
		if do(t, http.MethodGet, srv.URL()+"/threads/"+thread, "", &th) != http.StatusOK {
			return false
		}
		return th.Status == "waiting_for_choice" && th.Choice != nil
	})
	return th.Choice
}

// TestServeSandboxAsksBeforeTheNetwork: through serve, a command that
// asks for the network makes the thread wait for the person's choice (a
// user_choice, the thread idle); refused, the model reads the refusal and
// the command never ran; allowed once, it runs with the host's network.
// An agent whose definition says network: deny is refused without a
// question.
func TestServeSandboxAsksBeforeTheNetwork(t *testing.T) {
	t.Parallel()
	if _, err := sandbox.ProbeJail(context.Background()); err != nil {
		if os.Getenv("AGENTSLICE_REQUIRE_SERVICES") == "1" {
			t.Fatalf("no jail on this host (scripts/bwrap.sh installs bubblewrap): %v", err)
		}
		t.Skipf("no jail on this host (scripts/bwrap.sh installs bubblewrap): %v", err)
	}
	if b, err := os.ReadFile("/proc/net/dev"); err != nil || strings.Count(string(b), ":") < 2 {
		t.Skip("this host has no network interface besides loopback to tell the jail's namespace apart")
	}
	const list = `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ,`
	script := `{"default": [{"text": "?"}], "threads": {
	  "thr_ask": [
	    {"text": "I need the network.", "tool_call": {"name": "run_command", "args": {"command": "echo RAN > ran.txt", "network": true}}},
	    {"text": "Refused, then."},
	    {"text": "Again.", "tool_call": {"name": "run_command", "args": {"command": "` + list + `", "network": true}}},
	    {"text": "Started."},
	    {"text": "Done."}],
	  "thr_offline": [
	    {"text": "Try.", "tool_call": {"name": "run_command", "args": {"command": "true", "network": true}}},
	    {"text": "Denied."}]}}`
	offline := AgentConfig{Agent: runtime.Agent{Name: "offline", Instructions: "Work offline.", Tools: []string{"sandbox"}, Network: runtime.NetworkDeny}}
	srv := startServer(t, Config{Script: scriptFile(t, script), Agents: []AgentConfig{offline}, DefaultAgent: sandbox.CoderAgent,
		Sandbox: &Sandbox{Repo: gitRepo(t), Root: t.TempDir(), Jail: "on", OutputEvery: "10ms"}})
	const thread = "thr_ask"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")

	postMessage(t, srv, thread, `{"text":"Fetch it."}`)
	c := waitChoice(t, srv, thread)
	if !strings.Contains(c.Prompt, "the network") || !strings.Contains(c.Prompt, "echo RAN > ran.txt") || c.Choices[*c.Default] != "Refuse" {
		t.Fatalf("the question: %+v", c)
	}
	if a := srv.System().Active(); a != 0 {
		t.Fatalf("%d threads own a goroutine while the person is asked, want 0", a)
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/choices/"+c.CallID, `{"selected": 2}`, nil); code != http.StatusOK {
		t.Fatalf("refusing: %d", code)
	}
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "Refused, then."; ev = events.nextOf(t, "reply") {
	}
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	if got := toolResultOf(t, th, "run_command", 0); !strings.HasPrefix(got, "refused: the person did not allow the network, so the command did not run") {
		t.Fatalf("the model read %q", got)
	}
	if sb, err := srv.sandbox.Lookup(t.Context(), thread); err != nil || sb == nil {
		t.Fatalf("sandbox: %v %v", sb, err)
	} else if _, err := os.Stat(filepath.Join(sb.Dir, "ran.txt")); err == nil {
		t.Fatal("the refused command ran")
	}

	postMessage(t, srv, thread, `{"text":"Try again, I will allow it."}`)
	c = waitChoice(t, srv, thread)
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/choices/"+c.CallID, `{"selected": 0}`, nil); code != http.StatusOK {
		t.Fatalf("allowing: %d", code)
	}
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "Done."; ev = events.nextOf(t, "reply") {
	}
	waitIdle(t, srv)
	th = getThread(t, srv, thread)
	var final string
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName {
			final = it.Text
		}
	}
	if !strings.Contains(final, "exit code 0") || strings.Contains(final, "\nlo,\n") {
		t.Fatalf("allowed the network, the command's final event: %q", final)
	}

	postMessage(t, srv, "thr_offline", `{"text":"Fetch it.","agent":"offline"}`)
	th = waitReply(t, srv, "thr_offline", "Denied.")
	if got := toolResultOf(t, th, "run_command", 0); !strings.HasPrefix(got, "refused: your agent may not use the network") {
		t.Fatalf("network: deny: the model read %q", got)
	}
}

// TestServeSandboxSeveralRepositories: serve with two repositories; a
// thread's first message names one, its sandbox comes from that one and
// apply lands there; a thread naming none is told which there are; a
// thread cannot move to another repository, nor name one that is not
// configured; until apply neither working copy changes, and apply changes
// only the named one.
func TestServeSandboxSeveralRepositories(t *testing.T) {
	t.Parallel()
	alpha, beta := gitRepo(t), gitRepo(t)
	state := func(repo string) string {
		git := gitIn(t, repo)
		h := sha256.New()
		h.Write([]byte(git("--no-optional-locks", "status", "--porcelain", "-uall", "--branch") + git("rev-parse", "HEAD")))
		for _, f := range []string{".git/index", ".git/HEAD", "main.go"} {
			b, err := os.ReadFile(filepath.Join(repo, f))
			if err != nil {
				t.Fatal(err)
			}
			h.Write(b)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	alphaBefore, betaBefore := state(alpha), state(beta)
	script := `{"default": [{"text": "?"}], "threads": {
	  "thr_beta": [{"text": "Writing.", "tool_call": {"name": "write_file", "args": {"path": "beta.txt", "content": "in beta\n"}}}, {"text": "Wrote."}],
	  "thr_none": [{"text": "Writing.", "tool_call": {"name": "write_file", "args": {"path": "x.txt", "content": "x\n"}}}, {"text": "No repository."}]}}`
	root := t.TempDir()
	srv := startServer(t, Config{Script: scriptFile(t, script), Sandbox: &Sandbox{Repos: map[string]string{"alpha": alpha, "beta": beta}, Root: root, Jail: "off"}})

	postMessage(t, srv, "thr_beta", `{"text":"Write it.","repo":"beta"}`)
	waitReply(t, srv, "thr_beta", "Wrote.")
	var sb SandboxResponse
	if code := do(t, http.MethodGet, srv.URL()+"/threads/thr_beta/sandbox", "", &sb); code != http.StatusOK {
		t.Fatalf("GET sandbox: %d", code)
	}
	if sb.Repo != "beta" || len(sb.Files) != 1 || sb.Files[0] != "beta.txt" || !strings.HasPrefix(sb.Dir, filepath.Join(root, "beta")+string(filepath.Separator)) {
		t.Fatalf("the sandbox of thr_beta: %+v", sb)
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/thr_beta/messages", `{"text":"Now alpha.","repo":"alpha"}`, nil); code != http.StatusConflict {
		t.Fatalf("moving thr_beta to alpha: %d, want 409", code)
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/thr_x/messages", `{"text":"Go.","repo":"gamma"}`, nil); code != http.StatusBadRequest {
		t.Fatalf("naming an unknown repository: %d, want 400", code)
	}

	postMessage(t, srv, "thr_none", `{"text":"Write it."}`)
	if got := toolResultOf(t, waitReply(t, srv, "thr_none", "No repository."), "write_file", 0); !strings.Contains(got, "this thread names no repository") || !strings.Contains(got, "alpha, beta") {
		t.Fatalf("a thread naming no repository read %q", got)
	}
	if state(alpha) != alphaBefore || state(beta) != betaBefore {
		t.Fatal("a working copy changed before apply")
	}

	var applied ApplyResponse
	if code := do(t, http.MethodPost, srv.URL()+"/threads/thr_beta/sandbox/apply", "", &applied); code != http.StatusOK {
		t.Fatalf("apply: %d", code)
	}
	if b, err := os.ReadFile(filepath.Join(beta, "beta.txt")); err != nil || string(b) != "in beta\n" {
		t.Fatalf("beta after apply: %q %v", b, err)
	}
	if state(alpha) != alphaBefore {
		t.Fatal("applying a thread of beta changed alpha")
	}
	if _, err := os.Stat(filepath.Join(alpha, "beta.txt")); err == nil {
		t.Fatal("beta's change landed in alpha")
	}
}

// TestServeSandboxCheck: GET /threads/{id}/sandbox?check=true says
// whether the changes apply now, and why not, changing nothing.
func TestServeSandboxCheck(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	script := `{"default": [{"text": "Writing.", "tool_call": {"name": "write_file", "args": {"path": "main.go", "content": "package main\n\nfunc main() {}\n"}}}, {"text": "Wrote."}]}`
	srv := startServer(t, Config{Script: scriptFile(t, script), Sandbox: &Sandbox{Repo: repo, Root: t.TempDir(), Jail: "off"}})
	postMessage(t, srv, "thr_check", `{"text":"Write it."}`)
	waitReply(t, srv, "thr_check", "Wrote.")
	var sb SandboxResponse
	if code := do(t, http.MethodGet, srv.URL()+"/threads/thr_check/sandbox?check=true", "", &sb); code != http.StatusOK || sb.Applies == nil || !*sb.Applies {
		t.Fatalf("check of a clean apply: %d %+v", code, sb)
	}
	// The user edits the same file: the apply would be refused.
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main // mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb = SandboxResponse{}
	if code := do(t, http.MethodGet, srv.URL()+"/threads/thr_check/sandbox?check=true", "", &sb); code != http.StatusOK || sb.Applies == nil || *sb.Applies || !strings.Contains(sb.Problem, "main.go") {
		t.Fatalf("check with the file changed in the working copy: %d %+v", code, sb)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "main.go")); string(b) != "package main // mine\n" {
		t.Fatalf("the check changed the working copy: %q", b)
	}
	sb = SandboxResponse{}
	if do(t, http.MethodGet, srv.URL()+"/threads/thr_check/sandbox", "", &sb); sb.Applies != nil {
		t.Fatalf("without check=true: %+v", sb)
	}
}
