package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/client"
	"github.com/agentslice/agentslice/internal/server"
)

// TestCodeWarnsOfAnotherRepository: `code` asks the server which
// repository it serves (GET /info) and warns when it is not the one it
// runs in: another repository's sandbox, no sandbox, a server too old to
// say. The same repository, even through a symlink, is no warning.
func TestCodeWarnsOfAnotherRepository(t *testing.T) {
	ctx := context.Background()
	repo, other := gitRepo(t), gitRepo(t)
	c, err := client.New(codeServe(t, repo, map[string]any{"default": []map[string]any{{"text": "?"}}}), "")
	if err != nil {
		t.Fatal(err)
	}
	if w := repoWarning(ctx, c, repo); w != "" {
		t.Fatalf("the served repository: warning %q", w)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	if w := repoWarning(ctx, c, link); w != "" {
		t.Fatalf("the served repository through a symlink: warning %q", w)
	}
	if w := repoWarning(ctx, c, other); !strings.Contains(w, "serves the sandbox of "+repo+", not "+other) {
		t.Fatalf("another repository: warning %q", w)
	}

	cfg, err := server.DecodeConfig([]byte(`{"listen": "127.0.0.1:0", "store": "memory"}`))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := server.New(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Stop)
	pc, _ := client.New(plain.URL(), "")
	if w := repoWarning(ctx, pc, repo); !strings.Contains(w, "has no sandbox: the agent cannot read or change "+repo) {
		t.Fatalf("a server without a sandbox: warning %q", w)
	}

	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error": "no such endpoint: GET /info"}`+"\n")
	}))
	t.Cleanup(old.Close)
	oc, _ := client.New(old.URL, "")
	if w := repoWarning(ctx, oc, repo); !strings.Contains(w, "does not say which repository it serves") {
		t.Fatalf("an older server: warning %q", w)
	}
}

// TestCodeUnderTmuxWarnsOfAnotherRepository: the warning is on the
// screen, above the conversation.
func TestCodeUnderTmuxWarnsOfAnotherRepository(t *testing.T) {
	tm := newTmux(t)
	repo, other := gitRepo(t), gitRepo(t)
	url := codeServe(t, repo, map[string]any{"default": []map[string]any{{"text": "?"}}})
	tm.start("first", other, "code", "-server", url)
	tm.waitFor("first", "warned", "! warning: the server at "+url, "Nothing here yet", "● new")
	tm.typeLine("first", "/quit")
	tm.waitFor("first", "left", "[exit 0]")
}

// TestChatUnderTmux: `agentslice chat` is the same UI on a thread of any
// agent, outside a repository: a reply streams in, an idle session
// leaves without asking.
func TestChatUnderTmux(t *testing.T) {
	tm := newTmux(t)
	url := codeServe(t, gitRepo(t), map[string]any{"default": []map[string]any{{"text": "Hello from chat."}}})
	tm.start("first", t.TempDir(), "chat", "-server", url)
	tm.waitFor("first", "start", "agentslice chat", "Nothing here yet", "● new")
	tm.typeLine("first", "hi there")
	tm.waitFor("first", "reply", "you: hi there", "Hello from chat.", "● idle")
	tm.typeLine("first", "/quit")
	tm.waitFor("first", "left", "left thread chat-", "[exit 0]")
}

// TestCodeUnderTmuxStartsTheDaemon: `agentslice code` with no server
// running starts the data directory's daemon on its repository (and says
// so once the screen is back); code in a second repository finds that
// daemon and warns that it serves the first one's sandbox.
func TestCodeUnderTmuxStartsTheDaemon(t *testing.T) {
	tm := newTmux(t)
	repo, other, data := gitRepo(t), gitRepo(t), t.TempDir()
	t.Cleanup(func() {
		if code, out, errOut := runCmd("daemon", "stop", "-data", data); code != 0 {
			t.Errorf("daemon stop: exit %d, %q %q", code, out, errOut)
		}
	})
	tm.start("first", repo, "code", "-data", data)
	tm.waitFor("first", "started", "agentslice code · demo", "Nothing here yet", "● new")
	info, err := readDaemonFile(data)
	if err != nil {
		t.Fatalf("no daemon file after code started: %v", err)
	}
	if s := tm.capture("first"); strings.Contains(s, "warning") {
		t.Fatalf("a warning on the daemon's own repository:\n%s", s)
	}
	c, _ := client.New(info.URL, "")
	if in, err := c.Info(context.Background()); err != nil || in.Sandbox == nil || !samePath(in.Sandbox.Repos[0], repo) {
		t.Fatalf("the started daemon serves %+v, %v; want %s", in.Sandbox, err, repo)
	}
	tm.typeLine("first", "/quit")
	tm.waitFor("first", "left", "started the daemon at "+info.URL, "[exit 0]")

	tm.start("second", other, "code", "-data", data)
	tm.waitFor("second", "warned", "! warning: the server at "+info.URL, "serves the sandbox of")
	tm.typeLine("second", "/quit")
	tm.waitFor("second", "second-left", "[exit 0]")
}
