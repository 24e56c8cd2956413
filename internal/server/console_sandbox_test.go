package server

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleSandboxInBrowser: the console shows a coding thread's
// sandbox: its diff per file (collapsible), its child's stacked sandbox,
// and Apply (the change lands in the user's working copy as one commit)
// and Discard (asks once, then removes the sandbox). The screenshots
// (sandbox-review.png, sandbox-applied.png, sandbox-discard.png in the
// artifact directory) are docs/img/console-sandbox-*.png.
func TestConsoleSandboxInBrowser(t *testing.T) {
	b := newBrowser(t)
	repo := gitRepo(t)
	git := gitIn(t, repo)
	if err := os.WriteFile(filepath.Join(repo, "calc.go"), []byte("package main\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "--quiet", "-m", "calc")
	script := `{"default": [{"text": "?"}], "threads": {
	  "thr_review": [
	    {"text": "Fixing Add.", "tool_call": {"name": "edit_file", "args": {"path": "calc.go", "old": "a - b", "new": "a + b"}}},
	    {"text": "Adding a test.", "tool_call": {"name": "write_file", "args": {"path": "calc_test.go", "content": "package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n"}}},
	    {"text": "A child writes the notes.", "tool_call": {"name": "spawn_thread", "args": {"instructions": "child task: write NOTES.md", "child_of": ["thr_review"]}}},
	    {"text": "Ready for review."},
	    {"text": "The child reported; its notes stay in its sandbox."},
	    {"text": "Noted."}],
	  "thr_junk": [
	    {"text": "Writing junk.", "tool_call": {"name": "write_file", "args": {"path": "junk.txt", "content": "junk\n"}}},
	    {"text": "Wrote junk."}]},
	  "match": [{"contains": "child task", "steps": [
	    {"text": "Writing.", "tool_call": {"name": "write_file", "args": {"path": "NOTES.md", "content": "Add was subtracting.\n"}}},
	    {"text": "Reporting.", "tool_call": {"name": "report_to_parent", "args": {"report": "NOTES.md is written"}}},
	    {"text": "Done."},
	    {"text": "Noted."}]}]}`
	srv := startServer(t, Config{Script: scriptFile(t, script), Sandbox: &Sandbox{Repo: repo, Root: t.TempDir(), Jail: "off"}})
	postMessage(t, srv, "thr_review", `{"text":"Add is wrong. Fix it."}`)
	postMessage(t, srv, "thr_junk", `{"text":"Write junk."}`)
	waitReply(t, srv, "thr_review", "The child reported; its notes stay in its sandbox.")
	waitReply(t, srv, "thr_junk", "Wrote junk.")
	head := git("rev-parse", "HEAD")
	run := b.run

	run("open the coding thread", chromedp.Navigate(srv.URL()+"/#thr_review"),
		chromedp.WaitVisible(`#sandbox .sandbox-file[data-path="calc_test.go"]`),
		chromedp.WaitVisible(`#sandbox .sandbox-children li button`))
	if s := b.text("#sandbox .sandbox-head"); !strings.Contains(s, "agentslice/thr_review") || !strings.Contains(s, "2 files changed") {
		t.Fatalf("the sandbox's head: %q", s)
	}
	if s := b.text(`#sandbox .sandbox-file[data-path="calc.go"]`); !strings.Contains(s, "+func Add(a, b int) int { return a + b }") {
		t.Fatalf("the diff of calc.go: %q", s)
	}
	if s := b.text("#sandbox .sandbox-children"); !strings.Contains(s, "NOTES.md") {
		t.Fatalf("the child's sandbox: %q", s)
	}
	run("screenshot", b.shot("sandbox-review"))
	run("collapse a file", chromedp.Click(`#sandbox .sandbox-file[data-path="calc_test.go"] summary`),
		poll(`!document.querySelector('#sandbox .sandbox-file[data-path="calc_test.go"]').open`))

	run("apply", chromedp.Click("#sandbox .sandbox-apply"))
	run("see it applied", chromedp.WaitVisible("#sandbox .sandbox-result.ok"))
	if s := b.text("#sandbox .sandbox-result"); !strings.Contains(s, "Applied as") || !strings.Contains(s, "calc.go, calc_test.go") {
		t.Fatalf("after Apply: %q", s)
	}
	run("screenshot", b.shot("sandbox-applied"))
	if got, _ := os.ReadFile(filepath.Join(repo, "calc.go")); !strings.Contains(string(got), "return a + b") {
		t.Fatalf("calc.go in the working copy after Apply:\n%s", got)
	}
	if git("rev-parse", "HEAD^") != head {
		t.Fatal("Apply did not add one commit on the user's branch")
	}

	run("open the other thread", chromedp.Navigate(srv.URL()+"/#thr_junk"), chromedp.Reload(),
		chromedp.WaitVisible(`#sandbox .sandbox-file[data-path="junk.txt"]`),
		chromedp.Click("#sandbox .sandbox-discard"), poll(`document.querySelector("#sandbox .sandbox-discard").textContent === "Discard: sure?"`))
	if code := do(t, http.MethodGet, srv.URL()+"/threads/thr_junk/sandbox", "", nil); code != http.StatusOK {
		t.Fatalf("the first click of Discard removed the sandbox (GET: %d)", code)
	}
	run("discard", chromedp.Click("#sandbox .sandbox-discard"))
	run("see it discarded", chromedp.WaitVisible("#sandbox .sandbox-result.ok"))
	if s := b.text("#sandbox .sandbox-result"); !strings.Contains(s, "Discarded agentslice/thr_junk") {
		t.Fatalf("after Discard: %q", s)
	}
	run("screenshot", b.shot("sandbox-discard"))
	if code := do(t, http.MethodGet, srv.URL()+"/threads/thr_junk/sandbox", "", nil); code != http.StatusNotFound {
		t.Fatalf("after Discard the sandbox answers %d, want 404", code)
	}
	if _, err := os.Stat(filepath.Join(repo, "junk.txt")); err == nil {
		t.Fatal("the discarded change reached the working copy")
	}
}
