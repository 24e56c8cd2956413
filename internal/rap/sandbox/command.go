package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentslice/agentslice/internal/procenv"
	"github.com/agentslice/agentslice/internal/rap"
)

// ViewType is the view_type of the view_update a running command's output
// goes out as (content: CommandView).
const ViewType = "sandbox_command"

// CommandView is the content of a ViewType view_update: the state of one
// command and its newest output.
type CommandView struct {
	CommandID string `json:"command_id"` // the run_command call's ID
	Command   string `json:"command"`
	State     string `json:"state"`            // "running" or "exited"
	Status    string `json:"status,omitempty"` // when exited: "exit code 0", "killed after ..."
	Output    string `json:"output"`           // the output since the last view (its newest MaxBatch bytes)
	Offset    int64  `json:"offset"`           // where Output starts in the log
	Bytes     int64  `json:"bytes"`            // the log's size
	Log       string `json:"log"`              // the full log's path
}

// runCommand answers run_command. It starts the command (sh -c, in the
// sandbox, jailed where the jail works) and answers at once: the result
// "started" opens a subscription. While the command runs this goroutine
// (the kit's for the call) waits on it and sends its new output as
// view_updates, and as associative events when the call asked to watch;
// the final associative event carries the exit status, the duration, the
// output's tail and the log's path. The runtime holds nothing for the
// thread meanwhile. A timeout kills the process group and is reported; a
// cancelled call (cancel_tool_call, close_thread) kills it and sends
// nothing; a stopping server kills it and leaves its record, so the next
// start reports it (recover.go).
func (m *Manager) runCommand(ctx context.Context, c *rap.Call) error {
	var a struct {
		Command  string   `json:"command"`
		TimeoutS int      `json:"timeout_s"`
		Watch    bool     `json:"watch"`
		Network  bool     `json:"network"`
		Write    []string `json:"write_outside"`
	}
	if err := c.Args(&a); err != nil {
		return err
	}
	sb, err := m.Ensure(ctx, c.GroupID, c.ThreadAncestors)
	if err != nil {
		return c.Result(ctx, "error: "+err.Error())
	}
	timeout := m.cfg.Timeout
	if a.TimeoutS > 0 && time.Duration(a.TimeoutS)*time.Second < timeout {
		timeout = time.Duration(a.TimeoutS) * time.Second
	}
	grant, refusal, err := m.permit(ctx, c, sb, a.Command, a.Network, a.Write)
	if tok := m.resumedToken(c.GroupID, c.ID); tok != "" {
		// A rerun of a question from before a restart that did not ask
		// again (an "always" kept before the restart covers it now): its
		// record must not rerun the call at every start.
		m.dropAsk(tok)
	}
	switch {
	case err != nil:
		return c.Result(ctx, "error: "+err.Error())
	case refusal != "":
		return c.Result(ctx, refusal)
	case grant == nil:
		return nil // cancelled while the person was asked
	}
	logPath := m.logPath(sb.Name, c.ID)
	p, err := m.start(ctx, sb, a.Command, logPath, *grant)
	if err != nil {
		return c.Result(ctx, "error: "+err.Error())
	}
	rec := &record{V: 1, Thread: c.GroupID, Call: c.ID, CallID: c.CallID, CallbackURL: c.CallbackURL, Command: a.Command,
		Log: logPath, Pid: p.cmd.Process.Pid, ProcStart: procStart(p.cmd.Process.Pid), Started: p.started, State: stateRunning}
	if err := m.saveRecord(rec); err != nil {
		m.kill(p)
		return c.Result(ctx, "error: "+err.Error())
	}
	how := "You are woken once, by its final event (exit status, duration, output tail)."
	if a.Watch {
		how = fmt.Sprintf("You are woken by its output (at most every %s) and by its final event (exit status, duration, output tail).", m.cfg.WatchEvery)
	}
	if err := c.Subscribe(ctx, fmt.Sprintf("started command %s in the background: %s\n%s Meanwhile you may do other work or end your turn. "+
		"The full log is %s (read_file reads it); cancel_subscription with tool_call_id %q stops the command.", c.ID, a.Command, how, logPath, c.ID)); err != nil {
		m.kill(p)
		if ctx.Err() != nil && m.stopping.Load() {
			// Stopped while the "started" result was being posted: it may
			// have reached the runtime, which would then wait for a final
			// event. Keep the record: the next start reports the command
			// as stopped (or the runtime refuses the report, if it never
			// saw the subscription).
			rec.State, rec.Ended = stateStopped, time.Now()
			_ = m.saveRecord(rec)
			return nil
		}
		m.dropRecord(rec)
		return err
	}
	status := m.follow(ctx, c, p, a.Command, logPath, timeout, a.Watch)
	sb.mu.Lock()
	if err := sb.importStore(ctx); err != nil {
		m.logf("%v", err) // the tools' next read of the sandbox tries again
	}
	sb.mu.Unlock()
	if ctx.Err() != nil {
		if m.stopping.Load() {
			rec.State, rec.Ended = stateStopped, time.Now()
			_ = m.saveRecord(rec) // the next start reports it
		} else {
			m.dropRecord(rec) // cancelled: the runtime wants nothing more
		}
		return nil
	}
	took := time.Since(p.started).Round(time.Millisecond)
	tail := m.logTail(logPath)
	text := fmt.Sprintf("command %s finished: %s after %s: %s\n%s\nfull log: %s\n", c.ID, status, took, a.Command, tail, logPath)
	if strings.HasPrefix(status, "exit code ") && status != "exit code 0" {
		text += m.triedNote(ctx, c, sb, *grant, tail) // what the jail seems to have refused (tried.go)
	}
	err = c.Event(ctx, text, true, true)
	var se *rap.StatusError
	if err == nil || errors.As(err, &se) {
		m.dropRecord(rec) // delivered, or refused for good (the subscription was cancelled)
		return nil
	}
	// The runtime could not be reached: the next start sends it again.
	rec.State, rec.Ended, rec.Final = stateFinished, time.Now(), text
	if serr := m.saveRecord(rec); serr != nil {
		m.logf("sandbox: keeping the undelivered final event of command %s: %v", c.ID, serr)
	}
	return err
}

// process is a started command.
type process struct {
	cmd     *exec.Cmd
	waited  chan error // receives cmd.Wait's error once
	started time.Time
}

// start runs command in sb's directory (in the jail, with grant) with its
// output (stdout and stderr) written straight to the log file, in a
// process group of its own.
func (m *Manager) start(ctx context.Context, sb *Sandbox, command, logPath string, grant jailGrant) (*process, error) {
	dir := sb.Dir
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("creating the log directory: %v", err)
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the command's log: %v", err)
	}
	defer f.Close() // the child has its own copy
	env := m.cfg.Env
	if env == nil {
		env = procenv.Build(os.Environ(), nil, nil)
	}
	var cmd *exec.Cmd
	if m.bwrap != "" {
		cache := filepath.Join(m.metaDir(), "cache")
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return nil, fmt.Errorf("creating the jail's cache directory: %v", err)
		}
		gw, err := m.jailGitFor(ctx, sb)
		if err != nil {
			return nil, err
		}
		cmd = exec.Command(m.bwrap, append(jailArgs(dir, cache, m.gitDir, gw, grant), "sh", "-c", command)...)
		env = append(withoutVars(env, "TMPDIR", "XDG_CACHE_HOME", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"),
			append([]string{"TMPDIR=/tmp", "XDG_CACHE_HOME=" + cache}, gw.env()...)...)
	} else {
		cmd = exec.Command("sh", "-c", command)
	}
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting sh -c: %v", err)
	}
	p := &process{cmd: cmd, waited: make(chan error, 1), started: started}
	go func() { p.waited <- cmd.Wait() }() // owned by the call: follow or kill receives it
	return p, nil
}

// kill ends the command's whole process group and waits for its leader.
func (m *Manager) kill(p *process) error {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	return <-p.waited
}

// follow waits for the command to end, its timeout, or ctx, sending the
// output as it grows, and returns the command's status ("exit code 1",
// ...). On ctx's end the group is killed and the status is "".
func (m *Manager) follow(ctx context.Context, c *rap.Call, p *process, command, logPath string, timeout time.Duration, watch bool) string {
	batch := time.NewTicker(m.cfg.Batch)
	defer batch.Stop()
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	var viewed, watched int64
	lastWatch := p.started
	send := func(state, status string) {
		chunk, from, size := m.readNew(logPath, viewed)
		if chunk == "" && state == "running" {
			return
		}
		viewed = size
		// A view the runtime refuses or cannot take now is lost, as a
		// frame of a live display; the log keeps everything.
		_ = c.View(ctx, ViewType, CommandView{CommandID: c.ID, Command: command, State: state, Status: status,
			Output: chunk, Offset: from, Bytes: size, Log: logPath})
		if watch && state == "running" && time.Since(lastWatch) >= m.cfg.WatchEvery {
			out, from, size := m.readNew(logPath, watched)
			if out != "" {
				watched, lastWatch = size, time.Now()
				_ = c.Event(ctx, fmt.Sprintf("command %s is running (%s); its output, bytes %d-%d of %s:\n%s", c.ID, command, from, size, logPath, out), true, false)
			}
		}
	}
	var err error
	timedOut := false
	for done := false; !done; {
		select {
		case err = <-p.waited:
			done = true
		case <-batch.C:
			send("running", "")
		case <-limit.C:
			timedOut = true
			err = m.kill(p)
			done = true
		case <-ctx.Done():
			_ = m.kill(p)
			return ""
		}
	}
	// The group may hold children that outlive sh; they go with it.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	status := exitStatus(err, timedOut, timeout)
	send("exited", status)
	return status
}

func exitStatus(err error, timedOut bool, timeout time.Duration) string {
	var ee *exec.ExitError
	switch {
	case timedOut:
		return fmt.Sprintf("killed after the time limit of %s", timeout)
	case err == nil:
		return "exit code 0"
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return fmt.Sprintf("exit code %d", ee.ExitCode())
	case errors.As(err, &ee):
		return "killed by " + ee.String()
	default:
		return "error: " + err.Error()
	}
}

// readNew returns the log's bytes from offset on (their newest MaxBatch
// bytes, valid UTF-8), where they start, and the log's size.
func (m *Manager) readNew(logPath string, offset int64) (string, int64, int64) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", offset, offset
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() <= offset {
		return "", offset, offset
	}
	size := fi.Size()
	from := max(offset, size-int64(m.cfg.MaxBatch))
	b := make([]byte, size-from)
	n, _ := f.ReadAt(b, from)
	return strings.ToValidUTF8(string(b[:n]), "\uFFFD"), from, from + int64(n)
}

// logTail renders the log's last MaxOutput bytes for a result.
func (m *Manager) logTail(logPath string) string {
	f, err := os.Open(logPath)
	if err != nil {
		return "(the log cannot be read: " + err.Error() + ")"
	}
	defer f.Close()
	size, _ := f.Seek(0, io.SeekEnd)
	from := max(0, size-int64(m.cfg.MaxOutput))
	b := make([]byte, size-from)
	n, _ := f.ReadAt(b, from)
	text := strings.ToValidUTF8(string(b[:n]), "\uFFFD")
	switch {
	case text == "":
		return "(no output)"
	case from > 0:
		return fmt.Sprintf("output (the last %d bytes; %d before them left out):\n%s", len(text), from, text)
	default:
		return "output:\n" + text
	}
}

func withoutVars(env []string, names ...string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, n := range names {
			keep = keep && k != n
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
