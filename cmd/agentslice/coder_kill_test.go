package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// coderE2EScript is the scripted coder of TestCoderEndToEndThroughKill: it
// runs the module's tests (they fail), hands Add to one child and, once
// that child is squashed, Mul to a second (stacked on the squashed work),
// squashes it, starts the tests again behind a gate the test never opens
// (serve is killed while they wait), and after the restart's truthful
// "did not finish" runs them once more, green, and reviews the diff.
func coderE2EScript(thread string) map[string]any {
	call := func(name string, args map[string]any) map[string]any {
		return map[string]any{"name": name, "args": args}
	}
	step := func(text string, c map[string]any) map[string]any {
		if c == nil {
			return map[string]any{"text": text}
		}
		return map[string]any{"text": text, "tool_call": c}
	}
	child := func(file, old, new string) []map[string]any {
		return []map[string]any{
			step("Fixing "+file+".", call("edit_file", map[string]any{"path": file, "old": old, "new": new})),
			step("Reporting.", call("report_to_parent", map[string]any{"report": file + " fixed"})),
			step("Done.", nil), step("Noted.", nil), step("Noted.", nil),
		}
	}
	parent := []map[string]any{
		step("Running the tests.", call("run_command", map[string]any{"command": "go test ./..."})),
		step("The tests run in the background.", nil),
		step("Add and Mul are wrong; Add goes to a child.", call("spawn_thread", map[string]any{"instructions": "child task add: in calc.go make Add add.", "child_of": []string{thread}})),
		step("Waiting for the first child.", nil),
		step("Squashing the first child.", call("squash_child", map[string]any{"thread": "$CHILD"})),
		step("Mul goes to a second child.", call("spawn_thread", map[string]any{"instructions": "child task mul: in mul.go make Mul multiply.", "child_of": []string{thread}})),
		step("Waiting for the second child.", nil),
		step("Squashing the second child.", call("squash_child", map[string]any{"thread": "$CHILD"})),
		step("Building and testing.", call("run_command", map[string]any{"command": "echo building pid=$$; while [ ! -f gate ]; do sleep 0.05; done; go test ./..."})),
		step("The build runs in the background.", nil),
		step("The build died with the server; running the tests again.", call("run_command", map[string]any{"command": "go test ./..."})),
		step("Testing again in the background.", nil),
		step("Green; reviewing.", call("diff", map[string]any{})),
		step("Done: Add adds, Mul multiplies, go test passes.", nil),
	}
	for range 4 {
		parent = append(parent, step("Noted.", nil))
	}
	return map[string]any{
		"threads": map[string]any{thread: parent},
		"match": []map[string]any{
			{"contains": "child task add", "steps": child("calc.go", "a - b", "a + b")},
			{"contains": "child task mul", "steps": child("mul.go", "a + b", "a * b")},
		},
		"default": []map[string]any{{"text": "unexpected thread"}},
	}
}

// goModule makes a git repository holding a Go module whose tests fail
// in two places (Add subtracts, Mul adds).
func goModule(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "calc")
	files := map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.21\n",
		"calc.go":      "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int { return a - b }\n",
		"mul.go":       "package calc\n\n// Mul returns a times b.\nfunc Mul(a, b int) int { return a + b }\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d\", got)\n\t}\n}\n\nfunc TestMul(t *testing.T) {\n\tif got := Mul(2, 3); got != 6 {\n\t\tt.Fatalf(\"Mul(2, 3) = %d\", got)\n\t}\n}\n",
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "calc"}} {
		gitOut(t, repo, args...)
	}
	return repo
}

func gitOut(t *testing.T, repo string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// repoHash hashes what the user sees of repo: git status, HEAD, the
// branch, the index file and every file of the working copy.
func repoHash(t *testing.T, repo string) string {
	t.Helper()
	h := sha256.New()
	fmt.Fprint(h, gitOut(t, repo, "status", "--porcelain", "-uall"), gitOut(t, repo, "rev-parse", "HEAD"), gitOut(t, repo, "symbolic-ref", "HEAD"))
	index, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	h.Write(index)
	err = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

type coderThread struct {
	Status string         `json:"status"`
	Items  []runtime.Item `json:"items"`
}

func getJSON(t *testing.T, url string, into any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil {
		_ = json.Unmarshal(b, into)
	}
	return resp.StatusCode
}

// waitThread polls the thread until ok holds for it.
func waitThread(t *testing.T, c *child, thread, what string, ok func(coderThread) bool) coderThread {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var th coderThread
	for time.Now().Before(deadline) {
		th = coderThread{}
		if getJSON(t, c.url+"/threads/"+thread, &th) == http.StatusOK && ok(th) {
			return th
		}
		waitOrDeadline(20 * time.Millisecond) // polling a child process's API
	}
	t.Fatalf("thread %s never got to %s (status %q, %d items); log:\n%s", thread, what, th.Status, len(th.Items), c.logs.String())
	return th
}

func lastReply(th coderThread) string {
	for i := len(th.Items) - 1; i >= 0; i-- {
		if th.Items[i].Kind == runtime.ItemAssistant {
			return th.Items[i].Text
		}
	}
	return ""
}

// TestCoderEndToEndThroughKill is the coding agent's whole scripted
// session through real serve processes: a Go module with two failing
// tests in a temporary git repository; the coder (scripted model) runs
// `go test` in the background and reads the failure, two children fix one
// function each in stacked sandboxes, both are squashed into the parent;
// serve is SIGKILLed while the parent's next build runs and started again
// on the same data and sandboxes; the thread is told the truth about the
// killed build (whose processes the new serve kills), runs `go test`
// again, green, and ends with a reviewable diff of both fixes. The user's
// repository hashes the same from before the session until the apply,
// after which its own `go test` passes.
func TestCoderEndToEndThroughKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills server processes, runs go test")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH for the sandbox's commands")
	}
	repo := goModule(t)
	before := repoHash(t, repo)
	const thread = "thr_e2e_coder"
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // the same address for both processes, so the callback URLs stay good
	script, _ := json.Marshal(coderE2EScript(thread))
	scriptPath := filepath.Join(dir, "script.json")
	root := filepath.Join(dir, "sandboxes")
	cfg, _ := json.Marshal(map[string]any{"script": scriptPath,
		"callback_keys": "k1:c2FtZS1rZXlzLWFjcm9zcy1ib3RoLXNlcnZlLXByb2Nlc3NlcyE",
		// jail off: the build's pid (in its output) is a host pid the test checks.
		"sandbox": map[string]any{"repo": repo, "root": root, "jail": "off", "output_every": "20ms"}})
	cfgPath := filepath.Join(dir, "serve.json")
	for p, b := range map[string][]byte{scriptPath: script, cfgPath: cfg} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"serve", "-config", cfgPath, "-listen", addr, "-data", filepath.Join(dir, "data"), "-log-level", "warn"}

	first := startChild(t, args...)
	resp, err := http.Post(first.url+"/threads/"+thread+"/messages", "application/json", bytes.NewReader([]byte(`{"id":"m1","text":"go test fails. Fix the code."}`)))
	if err != nil || resp.StatusCode != http.StatusAccepted {
		first.kill()
		t.Fatalf("POST: %v %v", resp, err)
	}
	resp.Body.Close()
	waitThread(t, first, thread, "the background build after both squashes", func(th coderThread) bool {
		return th.Status == "watching" && lastReply(th) == "The build runs in the background." // the build is a subscription
	})
	// The build runs (its first line is out) when serve is killed.
	pidRe := regexp.MustCompile(`building pid=(\d+)`)
	var pid int
	deadline := time.Now().Add(time.Minute)
	for pid == 0 {
		var views map[string]any
		getJSON(t, first.url+"/threads/"+thread+"/views", &views)
		b, _ := json.Marshal(views)
		if m := pidRe.FindSubmatch(b); m != nil && bytes.Contains(b, []byte(`"state":"running"`)) {
			pid, _ = strconv.Atoi(string(m[1]))
		} else if time.Now().After(deadline) {
			first.kill()
			t.Fatalf("the build's view never showed it running: %s", b)
		} else {
			waitOrDeadline(20 * time.Millisecond)
		}
	}
	first.kill()
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("the build (pid %d) died with serve; the restart is meant to find it running", pid)
	}
	if after := repoHash(t, repo); after != before {
		t.Fatal("the session changed the user's repository before the kill")
	}

	second := startChild(t, args...)
	defer second.kill()
	th := waitThread(t, second, thread, "its end after the restart", func(th coderThread) bool {
		return th.Status == "idle" && lastReply(th) == "Done: Add adds, Mul multiplies, go test passes."
	})
	if syscall.Kill(pid, 0) == nil {
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if _, rest, _ := strings.Cut(string(stat), ") "); !strings.HasPrefix(rest, "Z") {
				t.Fatalf("the killed serve's build (pid %d) still runs after the restart", pid)
			}
		}
	}
	var finals, reports []string // the commands' final events; the children's reports
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName {
			if strings.HasPrefix(it.Text, "Report from child thread ") {
				reports = append(reports, it.Text)
			} else {
				finals = append(finals, it.Text)
			}
		}
	}
	if len(reports) != 2 || !strings.HasSuffix(reports[0], ": calc.go fixed") || !strings.HasSuffix(reports[1], ": mul.go fixed") {
		t.Fatalf("the children's reports: %q", reports)
	}
	t.Logf("the commands' final events: %q", finals)
	if len(finals) != 3 ||
		!strings.Contains(finals[0], "finished: exit code 1") || !strings.Contains(finals[0], "Add(2, 3) = -1") || !strings.Contains(finals[0], "Mul(2, 3) = 5") ||
		!(strings.Contains(finals[1], "did not finish: the sandbox server stopped (a crash or kill) while it ran") || strings.Contains(finals[1], "no longer keeps this subscription")) ||
		!strings.Contains(finals[2], "finished: exit code 0") || !strings.Contains(finals[2], "ok  \texample.com/calc") {
		t.Fatalf("the commands' final events: %q", finals)
	}
	// Each child's work came in by its own squash, the second child's
	// sandbox stacked on the parent's after the first squash (its stack
	// base already holds the Add fix, and not the Mul fix).
	children := make([]string, 2)
	for i, r := range reports {
		children[i], _, _ = strings.Cut(strings.TrimPrefix(r, "Report from child thread "), ":")
	}
	var squashes []string
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult && it.Name == "squash_child" {
			squashes = append(squashes, it.Text)
		}
	}
	if len(squashes) != 2 || !strings.HasPrefix(squashes[0], "squashed thread "+children[0]+" into your sandbox as commit ") || !strings.HasSuffix(squashes[0], ": calc.go") ||
		!strings.HasPrefix(squashes[1], "squashed thread "+children[1]+" into your sandbox as commit ") || !strings.HasSuffix(squashes[1], ": mul.go") {
		t.Fatalf("the squashes: %q", squashes)
	}
	stackBase := func(file string) string {
		return gitOut(t, repo, "show", "refs/agentslice/stack/"+children[1]+":"+file)
	}
	if !strings.Contains(stackBase("calc.go"), "a + b") || !strings.Contains(stackBase("mul.go"), "a + b") {
		t.Fatalf("the second child's sandbox did not start from the parent's squashed work:\n%s%s", stackBase("calc.go"), stackBase("mul.go"))
	}
	dr, err := http.Get(second.url + "/threads/" + thread + "/sandbox/diff")
	if err != nil {
		t.Fatal(err)
	}
	diff, _ := io.ReadAll(dr.Body)
	dr.Body.Close()
	for _, want := range []string{"+++ b/calc.go", "+func Add(a, b int) int { return a + b }", "+++ b/mul.go", "+func Mul(a, b int) int { return a * b }"} {
		if !bytes.Contains(diff, []byte(want)) {
			t.Fatalf("the diff lacks %q:\n%s", want, diff)
		}
	}
	if after := repoHash(t, repo); after != before {
		t.Fatal("the session changed the user's repository before the apply")
	}
	ar, err := http.Post(second.url+"/threads/"+thread+"/sandbox/apply", "application/json", strings.NewReader(`{"message":"Fix Add and Mul"}`))
	if err != nil {
		t.Fatal(err)
	}
	var applied struct {
		Files []string `json:"files"`
	}
	_ = json.NewDecoder(ar.Body).Decode(&applied)
	ar.Body.Close()
	if ar.StatusCode != http.StatusOK || strings.Join(applied.Files, " ") != "calc.go mul.go" {
		t.Fatalf("apply: %d %+v", ar.StatusCode, applied)
	}
	gotest := exec.Command("go", "test", "./...")
	gotest.Dir = repo
	if out, err := gotest.CombinedOutput(); err != nil {
		t.Fatalf("go test in the user's repository after the apply: %v\n%s", err, out)
	}
}
