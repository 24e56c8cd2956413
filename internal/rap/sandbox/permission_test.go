package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// jailedRig is a rig whose commands run in the jail (the test skips, or
// fails under AGENTSLICE_REQUIRE_SERVICES, without one) and whose server
// knows its public URL (the response_url of its questions).
func jailedRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	if _, err := ProbeJail(context.Background()); err != nil {
		if os.Getenv("AGENTSLICE_REQUIRE_SERVICES") == "1" {
			t.Fatalf("no jail on this host (scripts/bwrap.sh installs bubblewrap): %v", err)
		}
		t.Skipf("no jail on this host (scripts/bwrap.sh installs bubblewrap): %v", err)
	}
	cfg.Jail = JailOn
	r := newRig(t, testRepo(t), cfg)
	r.m.publicURL = r.base // before any call
	return r
}

// startAsking dispatches run_command and returns the user_choice notice it
// sends instead of a result.
func (r *rig) startAsking(t *testing.T, thread string, args any) (call string, u rap.UserChoice) {
	t.Helper()
	b, _ := json.Marshal(args)
	r.n++
	call = "ask_" + strconv.Itoa(r.n)
	if err := r.Invoke(t, r.base, thread, call, "run_command", string(b)); err != nil {
		t.Fatal(err)
	}
	m := r.Next(t)
	if m.Kind != runtime.KindNotice || m.Choice == "" || m.ToolCallID != call {
		t.Fatalf("got %+v, want the user_choice of %s", m, call)
	}
	if err := json.Unmarshal([]byte(m.Choice), &u); err != nil {
		t.Fatal(err)
	}
	return call, u
}

// answer POSTs the person's answer as the runtime does.
func answer(t *testing.T, u rap.UserChoice, selected int) {
	t.Helper()
	if err := rap.PostChoice(context.Background(), nil, u.ResponseURL, u.ID, selected, rap.RetryPolicy{}); err != nil {
		t.Fatal(err)
	}
}

// interfaces lists a final event's /proc/net/dev interface names.
const listInterfaces = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ,"

// TestNetworkAsksThePerson: a command that asks for the network asks the
// person (user_choice, default Refuse); refused, it does not run and the
// result says so; allowed once, it runs in the host's network namespace,
// and the next one asks again; a command that does not ask has loopback
// only.
func TestNetworkAsksThePerson(t *testing.T) {
	t.Parallel()
	host, err := os.ReadFile("/proc/net/dev")
	if err != nil || strings.Count(string(host), ":") < 2 {
		t.Skip("this host has no network interface besides loopback to tell the jail's namespace apart")
	}
	r := jailedRig(t, Config{})
	const th = "thr_net"
	call, u := r.startAsking(t, th, map[string]any{"command": "echo RAN > ran.txt", "network": true})
	mustContain(t, "the question", u.Prompt, "the network", "echo RAN > ran.txt")
	if len(u.Choices) != 3 || u.Default == nil || u.Choices[*u.Default] != "Refuse" || u.ID != call {
		t.Fatalf("choice %+v: want allow once, always, refuse (the default), for call %s", u, call)
	}
	answer(t, u, choiceRefuse)
	res := r.Next(t)
	if res.Kind != runtime.KindToolResult || res.ToolCallID != call || !strings.HasPrefix(res.Text, "refused: the person did not allow the network") {
		t.Fatalf("after the refusal: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(r.mustBox(t, th).Dir, "ran.txt")); err == nil {
		t.Fatal("the refused command ran")
	}
	// A second answer to the same question finds nobody waiting.
	if err := rap.PostChoice(context.Background(), nil, u.ResponseURL, u.ID, choiceOnce, rap.RetryPolicy{}); err == nil {
		t.Fatal("an answer to a question no longer asked was taken")
	}

	call, u = r.startAsking(t, th, map[string]any{"command": listInterfaces, "network": true})
	answer(t, u, choiceOnce)
	started := r.Next(t)
	if !started.Subscription || started.ToolCallID != call {
		t.Fatalf("after allow once: %+v", started)
	}
	final := r.Until(t, func(m runtime.Message) bool { return m.ToolCallID == call && m.Final })
	withNet := final[len(final)-1].Text
	if !strings.Contains(withNet, "exit code 0") || strings.Contains(withNet, "\nlo,\n") {
		t.Fatalf("allowed the network, the command saw only loopback: %s", withNet)
	}
	// Once was once: the next asks again (refused here), and a command
	// that asks nothing sees loopback only.
	_, u = r.startAsking(t, th, map[string]any{"command": "true", "network": true})
	answer(t, u, choiceRefuse)
	r.Next(t)
	_, final2 := r.run(t, th, map[string]any{"command": listInterfaces})
	mustContain(t, "a command without the network", final2.Text, "\nlo,\n")
}

// TestAlwaysIsKeptAndDenyRefuses: "allow always" lets the thread's later
// commands write the directory without asking (it is kept on disk); an
// agent whose network access is deny is refused without a question; allow
// runs without one.
func TestAlwaysIsKeptAndDenyRefuses(t *testing.T) {
	t.Parallel()
	access := map[string]Access{"thr_deny": AccessDeny, "thr_allow": AccessAllow}
	r := jailedRig(t, Config{NetworkFor: func(_ context.Context, thread string) (Access, error) { return access[thread], nil }})
	outside, err := os.MkdirTemp(".", "write-outside-")
	if err != nil {
		t.Fatal(err)
	}
	outside, _ = filepath.Abs(outside)
	t.Cleanup(func() { os.RemoveAll(outside) })
	const th = "thr_always"
	write := map[string]any{"command": "echo x >> " + filepath.Join(outside, "out.txt"), "write_outside": []string{outside}}
	call, u := r.startAsking(t, th, write)
	mustContain(t, "the question", u.Prompt, "writing to "+outside)
	answer(t, u, choiceAlways)
	if m := r.Next(t); !m.Subscription || m.ToolCallID != call {
		t.Fatalf("after allow always: %+v", m)
	}
	r.Until(t, func(m runtime.Message) bool { return m.ToolCallID == call && m.Final })
	_, final := r.run(t, th, write) // no question this time
	mustContain(t, "the second write", final.Text, "exit code 0")
	if b, _ := os.ReadFile(filepath.Join(outside, "out.txt")); string(b) != "x\nx\n" {
		t.Fatalf("the directory allowed always holds %q, want two lines", b)
	}
	// Another thread was not allowed anything.
	r.startAsking(t, "thr_other", write)

	res := r.call(t, "thr_deny", nil, "run_command", map[string]any{"command": "true", "network": true})
	mustContain(t, "deny", res.Text, "refused: your agent may not use the network")
	_, final = r.run(t, "thr_allow", map[string]any{"command": listInterfaces, "network": true})
	if strings.Contains(final.Text, "\nlo,\n") {
		t.Fatalf("allow: the command saw only loopback: %s", final.Text)
	}
}

// TestWriteOutsideIsChecked: what a command may ask to write is an
// existing absolute directory that is neither the user's working copy
// (nor holds it) nor the whole file system.
func TestWriteOutsideIsChecked(t *testing.T) {
	t.Parallel()
	r := newRig(t, testRepo(t), Config{Jail: JailOff})
	for _, tc := range []struct{ dir, want string }{
		{"relative", "is not an absolute path"},
		{"/", "the whole file system"},
		{r.m.Repo(), "holds the user's working copy"},
		{filepath.Dir(r.m.Repo()), "holds the user's working copy"},
		{filepath.Join(r.m.Repo(), "missing"), "name an existing directory"},
	} {
		res := r.call(t, "thr_check", nil, "run_command", map[string]any{"command": "true", "write_outside": []string{tc.dir}})
		mustContain(t, tc.dir, res.Text, "error: write_outside", tc.want)
	}
}

// TestGitWorksInTheJail: git runs in a jailed command of a sandbox (a
// repository under /tmp, hidden by the jail's private /tmp, has its git
// directory bound back), and a commit there works: it moves the sandbox's
// own branch only, its objects reach the repository's store when the
// command ends, and the user's HEAD, index, working copy and every other
// ref are what they were. The user's object store and branches stay
// read-only to the command.
func TestGitWorksInTheJail(t *testing.T) {
	t.Parallel()
	r := jailedRig(t, Config{})
	repo := r.m.Repo()
	r.call(t, "thr_git", nil, "write_file", map[string]any{"path": "new.txt", "content": "n\n"})
	if strings.HasPrefix(repo, "/tmp/") {
		_, final := r.run(t, "thr_git", map[string]any{"command": "git status --porcelain"})
		mustContain(t, "git status in the jail", final.Text, "exit code 0", "?? new.txt")
	}
	refs := func() string { return gitOut(t, repo, "for-each-ref", "--format=%(refname) %(objectname)") }
	before, refsBefore := fingerprint(t, repo), refs()
	branch := "refs/heads/" + r.mustBox(t, "thr_git").Branch
	tipBefore := gitOut(t, repo, "rev-parse", branch)

	_, final := r.run(t, "thr_git", map[string]any{"command": "git add new.txt && git -c user.name=a -c user.email=a@a commit -q -m 'made in the jail' && git log -1 --format=%s"})
	mustContain(t, "git commit in the jail", final.Text, "exit code 0", "made in the jail")
	if after := fingerprint(t, repo); after != before {
		t.Fatal("a commit in the jail changed the user's working copy, index or HEAD")
	}
	tip := gitOut(t, repo, "rev-parse", branch)
	if tip == tipBefore || gitOut(t, repo, "log", "-1", "--format=%s", tip) != "made in the jail" || gitOut(t, repo, "rev-parse", tip+"^") != tipBefore {
		t.Fatalf("the sandbox's branch is at %s (was %s), want the jail's commit on top", tip, tipBefore)
	}
	if got, want := refs(), strings.ReplaceAll(refsBefore, branch+" "+tipBefore, branch+" "+tip); got != want {
		t.Fatalf("refs after the commit:\n%s\nwant only %s moved:\n%s", got, branch, want)
	}
	// The commit's objects are in the repository's own store now (git
	// run outside the jail, with no alternates, reads them all).
	if out := gitOut(t, repo, "rev-list", "--objects", "--missing=print", tip); strings.Contains(out, "?") {
		t.Fatalf("objects of the jail's commit missing from the repository: %s", out)
	}
	gitOut(t, repo, "fsck", "--connectivity-only", "--no-dangling")
	if d := r.call(t, "thr_git", nil, "diff", map[string]any{}); !strings.Contains(d.Text, "+++ b/new.txt") {
		t.Fatalf("the diff after a commit in the jail: %s", d.Text)
	}
	// The user's objects and branches are still out of reach.
	objects := filepath.Join(gitOut(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir"), "objects")
	_, final = r.run(t, "thr_git", map[string]any{"command": "git update-ref refs/heads/main HEAD; echo main=$?; touch " + objects + "/probe; echo objects=$?"})
	mustContain(t, "writes the jail refuses", final.Text, "main=1", "objects=1")
	if after := fingerprint(t, repo); after != before || refs() != strings.ReplaceAll(refsBefore, branch+" "+tipBefore, branch+" "+tip) {
		t.Fatal("a jailed command moved the user's branch")
	}
}

// TestInvocationsAgentPolicy: a server shared by several agents (the
// standalone one, MaxNetwork its -network) applies each call's agent
// policy, sent by the runtime with the call (x-agentslice-agent), within
// its own: deny refuses without a question, allow runs without one, ask
// asks, and a call that names no agent gets the server's; under a server
// that says ask, an agent's allow asks all the same.
func TestInvocationsAgentPolicy(t *testing.T) {
	t.Parallel()
	invoke := func(r *rig, thread, agent, network string) runtime.Message {
		t.Helper()
		r.n++
		call := "pol_" + strconv.Itoa(r.n)
		inv := runtime.Invocation{ThreadID: thread, CallID: call, Name: "run_command", Args: `{"command":"true","network":true}`,
			Agent: agent, AgentNetwork: network}
		if err := r.InvokeWith(t, r.base, inv); err != nil {
			t.Fatal(err)
		}
		m := r.Next(t)
		if m.ToolCallID != call {
			t.Fatalf("got %+v for call %s", m, call)
		}
		if m.Subscription {
			r.Until(t, func(f runtime.Message) bool { return f.ToolCallID == call && f.Final })
		}
		return m
	}
	asked := func(m runtime.Message) bool { return m.Kind == runtime.KindNotice && m.Choice != "" }
	ran := func(m runtime.Message) bool { return m.Subscription }

	open := newRig(t, testRepo(t), Config{Jail: JailOff, MaxNetwork: AccessAllow})
	open.m.publicURL = open.base
	if m := invoke(open, "thr_off", "offline", "deny"); m.Kind != runtime.KindToolResult || !strings.Contains(m.Text, "refused: your agent may not use the network") {
		t.Fatalf("agent deny under a server that allows: %+v", m)
	}
	if m := invoke(open, "thr_on", "online", "allow"); !ran(m) {
		t.Fatalf("agent allow under a server that allows: %+v", m)
	}
	if m := invoke(open, "thr_ask", "careful", "ask"); !asked(m) {
		t.Fatalf("agent ask under a server that allows: %+v", m)
	}
	if m := invoke(open, "thr_none", "", ""); !ran(m) {
		t.Fatalf("no agent under a server that allows: %+v", m)
	}
	if m := invoke(open, "thr_plain", "plain", ""); !ran(m) {
		t.Fatalf("an agent with no network field under a server that allows: %+v", m)
	}

	strict := newRig(t, testRepo(t), Config{Jail: JailOff, MaxNetwork: AccessAsk})
	strict.m.publicURL = strict.base
	if m := invoke(strict, "thr_on", "online", "allow"); !asked(m) {
		t.Fatalf("agent allow under a server that asks: %+v", m)
	}
	if m := invoke(strict, "thr_off", "offline", "deny"); m.Kind != runtime.KindToolResult || !strings.Contains(m.Text, "refused: your agent may not use the network") {
		t.Fatalf("agent deny under a server that asks: %+v", m)
	}
}
