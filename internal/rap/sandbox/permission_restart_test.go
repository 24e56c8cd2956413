package sandbox

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
)

// TestQuestionSurvivesARestart: a command waits for the person's answer
// to its permission question when the server stops; the next server on the
// same root asks the same question again (same call, same token), answers
// tool_call_status alive for the call, takes the answer sent to the first
// question's response_url path, and runs the command.
// (Before, the question died with the server: tool_call_status said false,
// the runtime failed the call, and the late answer got a 404.)
func TestQuestionSurvivesARestart(t *testing.T) {
	t.Parallel()
	repo, root := testRepo(t), t.TempDir()
	r := newRig(t, repo, Config{Root: root, Jail: JailOff})
	r.m.publicURL = r.base
	const th = "thr_ask_restart"
	call, u := r.startAsking(t, th, map[string]any{"command": "echo RAN > ran.txt", "network": true})
	r.srv.Stop() // the question is unanswered

	m2, err := NewManager(Config{Repo: repo, Root: root, Jail: JailOff})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(nil)
	base2 := "http://" + hs.Listener.Addr().String()
	srv2, err := NewServer(m2, rap.ServerConfig{Retry: raptest.FastRetry(5), Logger: raptest.QuietLogger(), PublicURL: base2})
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = srv2
	if err := srv2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs.Start()
	t.Cleanup(func() { hs.Close(); srv2.Stop() })

	again := r.Next(t)
	var u2 rap.UserChoice
	if again.Kind != runtime.KindNotice || again.ToolCallID != call || json.Unmarshal([]byte(again.Choice), &u2) != nil {
		t.Fatalf("after the restart: %+v, want the question of %s again", again, call)
	}
	_, oldPath, _ := strings.Cut(strings.TrimPrefix(u.ResponseURL, "http://"), "/")
	if u2.Prompt != u.Prompt || u2.ID != call || u2.ResponseURL != base2+"/"+oldPath {
		t.Fatalf("the question asked again: %+v\nthe first: %+v", u2, u)
	}
	resp, err := http.Post(base2+rap.ToolCallStatusPath, "application/json",
		strings.NewReader(`{"thread_id":"`+th+`","tool_call_id":"`+call+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var st rap.ToolCallStatusResponse
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || !st.Alive {
		t.Fatalf("tool_call_status of the call asking again: %+v %v", st, err)
	}
	resp.Body.Close()
	// The answer to the first question's path, at the new server.
	answer(t, rap.UserChoice{ID: u.ID, ResponseURL: base2 + "/" + oldPath}, choiceOnce)
	started := r.Next(t)
	if !started.Subscription || started.ToolCallID != call {
		t.Fatalf("after the answer: %+v", started)
	}
	final := r.Until(t, func(m runtime.Message) bool { return m.ToolCallID == call && m.Final })
	mustContain(t, "the final event", final[len(final)-1].Text, "exit code 0")
	if b, err := os.ReadFile(filepath.Join(r.mustBox(t, th).Dir, "ran.txt")); err != nil || string(b) != "RAN\n" {
		t.Fatalf("ran.txt: %q %v", b, err)
	}
	if left, _ := os.ReadDir(m2.askDir()); len(left) != 0 {
		t.Fatalf("question records left after the answer: %v", left)
	}
}

// TestQuestionCoveredByAGrantIsNotKeptAfterARestart: a question left by a
// restart whose answer is covered by then ("always", kept) is not asked
// again: the command runs, and its record is gone, so a further start
// does not run the call again.
func TestQuestionCoveredByAGrantIsNotKeptAfterARestart(t *testing.T) {
	t.Parallel()
	repo, root := testRepo(t), t.TempDir()
	r := newRig(t, repo, Config{Root: root, Jail: JailOff})
	r.m.publicURL = r.base
	const th = "thr_ask_granted"
	call, _ := r.startAsking(t, th, map[string]any{"command": "echo RAN > ran.txt", "network": true})
	r.srv.Stop()
	name := r.mustBox(t, th).Name

	m2, err := NewManager(Config{Repo: repo, Root: root, Jail: JailOff})
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.saveGrant(name, jailGrant{Network: true}); err != nil {
		t.Fatal(err)
	}
	srv2, err := NewServer(m2, rap.ServerConfig{Retry: raptest.FastRetry(5), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	raptest.StartServer(t, srv2)
	started := r.Next(t)
	if !started.Subscription || started.ToolCallID != call {
		t.Fatalf("after the restart: %+v, want the command started without a question", started)
	}
	r.Until(t, func(m runtime.Message) bool { return m.ToolCallID == call && m.Final })
	if left, _ := os.ReadDir(m2.askDir()); len(left) != 0 {
		t.Fatalf("question records left: %v", left)
	}
}
