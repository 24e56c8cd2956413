package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/agentslice/agentslice/client"
	"github.com/agentslice/agentslice/internal/tui"
)

// `agentslice code [DIR]` and `agentslice chat [THREAD]`: the terminal UI
// (package internal/tui) on a thread of a serve. code binds the session to
// a repository: its threads are named after it (codeThreadPrefix), the
// latest one is resumed, and a daemon it starts serves that repository's
// sandbox. `agentslice code review|apply|discard` act on a session's
// sandbox without the UI.

// defaultCodeAgent is the agent `agentslice code` runs as.
const defaultCodeAgent = "coder"

// runCode is `agentslice code`.
func runCode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "review", "apply", "discard":
			return runCodeSandbox(ctx, args[0], args[1:], stdout, stderr)
		}
	}
	fs := newFlagSet("code", "code [-server URL] [-agent NAME] [-new | -thread ID] [DIR]\n"+
		"   or: agentslice code review|apply|discard [-dir DIR] [THREAD]\n\n"+
		"The terminal UI of the coding agent on the git repository at DIR (default: the current directory).\n"+
		"It resumes the repository's latest session (or starts one); /help inside lists its commands.\n"+
		"A daemon it starts serves DIR's sandbox (unless the data directory has a serve.json).", stderr)
	var sf serverFlags
	sf.register(fs)
	agent := fs.String("agent", defaultCodeAgent, "the agent a new session runs as")
	fresh := fs.Bool("new", false, "start a new session instead of resuming the latest")
	thread := fs.String("thread", "", "open this thread instead of the repository's latest session")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if fs.NArg() > 1 {
		return usagef("unexpected argument %q (one DIR only)", fs.Arg(1))
	}
	if *fresh && *thread != "" {
		return usagef("-new and -thread: say one of them")
	}
	repo, err := gitRoot(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if err := needTerminal(stdout); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dataDir(sf.data), daemonConfigName)); err != nil {
		sf.daemonArgs = []string{"-sandbox-repo", repo}
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	prefix := codeThreadPrefix(repo)
	id := *thread
	if id == "" && !*fresh {
		if id, err = latestThread(ctx, c, prefix); err != nil {
			return err
		}
	}
	opt := tui.Options{Client: c, Thread: id, Agent: *agent, Repo: repo, Title: "agentslice code",
		NewThread:   func() string { return newThreadID(prefix) },
		ListThreads: func(t client.ThreadSummary) bool { return strings.HasPrefix(t.ID, prefix) }}
	if warn := repoWarning(ctx, c, repo); warn != "" {
		fmt.Fprintln(stderr, "agentslice code: warning: "+warn)
		opt.Warning = warn
	}
	return runUI(ctx, opt, stdout, "agentslice code "+shellQuote(repo))
}

// repoWarning says what is wrong when the server c reaches does not serve
// the sandbox of repo (GET /info): the agent would read and change
// another repository, or none; "" when it does.
func repoWarning(ctx context.Context, c *client.Client, repo string) string {
	info, err := c.Info(ctx)
	var ae *client.APIError
	switch {
	case errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound:
		return fmt.Sprintf("the server at %s does not say which repository it serves (a serve older than GET /info); make sure it is %s", c.BaseURL, repo)
	case err != nil:
		return fmt.Sprintf("cannot ask the server at %s which repository it serves: %v", c.BaseURL, err)
	case info.Sandbox == nil || len(info.Sandbox.Repos) == 0:
		return fmt.Sprintf("the server at %s has no sandbox: the agent cannot read or change %s (configure sandbox.repo, or stop that daemon with `agentslice daemon stop` so that code starts one for this repository)", c.BaseURL, repo)
	}
	for _, r := range info.Sandbox.Repos {
		if samePath(r, repo) {
			return ""
		}
	}
	return fmt.Sprintf("the server at %s serves the sandbox of %s, not %s: the agent reads and changes that repository, and /diff and /apply are about it (stop that daemon with `agentslice daemon stop`, or give -server a serve of this one)",
		c.BaseURL, strings.Join(info.Sandbox.Repos, ", "), repo)
}

// samePath reports whether two paths name the same directory.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// runChat is `agentslice chat`.
func runChat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("chat", "chat [-server URL] [-agent NAME] [THREAD]\n\n"+
		"The terminal UI on any thread of a serve (default: a new one); /help inside lists its commands.", stderr)
	var sf serverFlags
	sf.register(fs)
	agent := fs.String("agent", "", "the agent a new thread runs as (default: the server's default agent)")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if fs.NArg() > 1 {
		return usagef("unexpected argument %q (one THREAD only)", fs.Arg(1))
	}
	if err := needTerminal(stdout); err != nil {
		return err
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	opt := tui.Options{Client: c, Thread: fs.Arg(0), Agent: *agent, Title: "agentslice chat",
		NewThread: func() string { return newThreadID("chat-") }}
	return runUI(ctx, opt, stdout, "")
}

// runUI runs the UI and says, once the screen is back, how it was left.
func runUI(ctx context.Context, opt tui.Options, stdout io.Writer, resume string) error {
	out, err := tui.Run(ctx, opt, os.Stdin, stdout)
	if err != nil {
		return fmt.Errorf("the terminal UI: %w", err)
	}
	again := "agentslice chat " + out.Thread
	if resume != "" {
		again = resume + " (or " + again + ")"
	}
	switch {
	case out.Stopped:
		fmt.Fprintf(stdout, "stopped thread %s; %s reopens it\n", out.Thread, again)
	case out.Busy:
		fmt.Fprintf(stdout, "thread %s keeps running in the background (%s); %s reattaches\n", out.Thread, out.Status, again)
	default:
		st := out.Status
		if st == "" {
			st = "nothing sent"
		}
		fmt.Fprintf(stdout, "left thread %s (%s); %s reopens it\n", out.Thread, st, again)
	}
	return nil
}

// needTerminal refuses to draw a full-screen UI on what is not a terminal.
func needTerminal(stdout io.Writer) error {
	f, ok := stdout.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) || !term.IsTerminal(os.Stdin.Fd()) {
		return usagef("the terminal UI needs a terminal on stdin and stdout (for scripts: agentslice send -wait, tail, history)")
	}
	return nil
}

// gitRoot returns the top directory of the git repository at dir.
func gitRoot(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("DIR %q: %w", dir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", usagef("DIR %s is not a directory", abs)
	}
	out, err := exec.CommandContext(ctx, "git", "-C", abs, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", usagef("%s is not in a git repository (agentslice code works on one; agentslice chat needs none)", abs)
	}
	return strings.TrimSpace(string(out)), nil
}

var notIDChars = regexp.MustCompile(`[^a-z0-9]+`)

// codeThreadPrefix is how the threads of a repository's sessions begin:
// code-<directory name>-<hash of its path>-.
func codeThreadPrefix(repo string) string {
	name := strings.Trim(notIDChars.ReplaceAllString(strings.ToLower(filepath.Base(repo)), "-"), "-")
	if len(name) > 24 {
		name = name[:24]
	}
	if name == "" {
		name = "repo"
	}
	sum := sha256.Sum256([]byte(repo))
	return "code-" + name + "-" + hex.EncodeToString(sum[:3]) + "-"
}

// newThreadID makes a new thread ID with this prefix: the time, and a
// random part so that two sessions started in the same second differ.
func newThreadID(prefix string) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return prefix + strconv.FormatInt(time.Now().Unix(), 36) + hex.EncodeToString(b[:])
}

// latestThread returns the thread with the prefix that was active last,
// or "" when there is none.
func latestThread(ctx context.Context, c *client.Client, prefix string) (string, error) {
	best, bestAt := "", time.Time{}
	cursor := ""
	for {
		l, err := c.Threads(ctx, client.ListOptions{Limit: 500, Cursor: cursor})
		if err != nil {
			return "", fmt.Errorf("listing the sessions: %w", err)
		}
		for _, t := range l.Threads {
			if !strings.HasPrefix(t.ID, prefix) || t.Status == "closed" {
				continue
			}
			at := time.Time{}
			if t.LastActivity != nil {
				at = *t.LastActivity
			}
			if best == "" || at.After(bestAt) {
				best, bestAt = t.ID, at
			}
		}
		if l.NextCursor == "" || l.NextCursor == cursor {
			return best, nil
		}
		cursor = l.NextCursor
	}
}

func shellQuote(s string) string {
	if regexp.MustCompile(`^[A-Za-z0-9_./-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runCodeSandbox is `agentslice code review|apply|discard [THREAD]`.
func runCodeSandbox(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	synopsis := map[string]string{
		"review":  "code review [-server URL] [-dir DIR] [-stat] [THREAD]  (the files a session changed, and its diff)",
		"apply":   "code apply [-server URL] [-dir DIR] [-m MESSAGE] [THREAD]  (commit its changes onto your current branch)",
		"discard": "code discard [-server URL] [-dir DIR] [THREAD]  (remove its sandbox; its changes are lost)",
	}[verb]
	fs := newFlagSet("code "+verb, synopsis+"\n\nTHREAD defaults to the latest session of the repository at -dir.", stderr)
	var sf serverFlags
	sf.register(fs)
	dir := fs.String("dir", ".", "the `repository` whose latest session is meant when THREAD is not given")
	message := ""
	stat := false
	switch verb {
	case "apply":
		fs.StringVar(&message, "m", "", "the commit's `message` (default: the server's, naming the thread)")
	case "review":
		fs.BoolVar(&stat, "stat", false, "only the files, not the diff")
	}
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if fs.NArg() > 1 {
		return usagef("unexpected argument %q (one THREAD only)", fs.Arg(1))
	}
	thread := fs.Arg(0)
	var repo string
	if thread == "" {
		var err error
		if repo, err = gitRoot(ctx, *dir); err != nil {
			return err
		}
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	if thread == "" {
		if thread, err = latestThread(ctx, c, codeThreadPrefix(repo)); err != nil {
			return err
		}
		if thread == "" {
			return &exitError{code: ExitNotFound, err: fmt.Errorf("the repository %s has no session yet (agentslice code starts one)", repo)}
		}
	}
	switch verb {
	case "review":
		sb, err := c.Sandbox(ctx, thread)
		if err != nil {
			return explain(err, thread)
		}
		fmt.Fprintf(stdout, "thread %s: branch %s on %s, %d files changed\n", sb.Thread, sb.Branch, short12(sb.Base), len(sb.Files))
		for _, f := range sb.Files {
			fmt.Fprintln(stdout, "  "+f)
		}
		if stat || len(sb.Files) == 0 {
			return nil
		}
		d, err := c.SandboxDiff(ctx, thread)
		if err != nil {
			return explain(err, thread)
		}
		fmt.Fprint(stdout, "\n"+d)
		return nil
	case "apply":
		a, err := c.SandboxApply(ctx, thread, message)
		if err != nil {
			return explain(err, thread)
		}
		fmt.Fprintf(stdout, "applied thread %s as %s: %s\n", thread, a.Commit, strings.Join(a.Files, ", "))
		return nil
	}
	branch, err := c.SandboxDiscard(ctx, thread)
	if err != nil {
		return explain(err, thread)
	}
	fmt.Fprintf(stdout, "discarded the sandbox of thread %s (branch %s)\n", thread, branch)
	return nil
}

func short12(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
