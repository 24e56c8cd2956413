package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentslice/agentslice/internal/procenv"
	"github.com/agentslice/agentslice/internal/rap"
)

// runCommand answers run_command: it runs the command line with sh -c in
// the sandbox, waits for it (synchronous this round), and reports the exit
// status, the duration and the output's tail. A timeout or a cancelled
// call kills the command's whole process group.
func (m *Manager) runCommand(ctx context.Context, c *rap.Call) error {
	var a struct {
		Command  string `json:"command"`
		TimeoutS int    `json:"timeout_s"`
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
	res := m.exec(ctx, sb.Dir, a.Command, timeout)
	if ctx.Err() != nil {
		return ctx.Err() // the call was cancelled: nothing more to say
	}
	return c.Result(ctx, res)
}

// exec runs command in dir and returns the text of its result.
func (m *Manager) exec(ctx context.Context, dir, command string, timeout time.Duration) string {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = m.cfg.Env
	if cmd.Env == nil {
		cmd.Env = procenv.Build(os.Environ(), nil, nil)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &tail{max: m.cfg.MaxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second // a grandchild holding the pipes cannot hold Wait forever
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Sprintf("error: starting sh -c: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }() // owned by this call: received below
	var err error
	select {
	case err = <-waited:
	case <-runCtx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole group: sh and what it started
		err = <-waited
	}
	// The group may hold children that outlive sh; they go with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	took := time.Since(start).Round(time.Millisecond)
	var status string
	var ee *exec.ExitError
	switch {
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		status = fmt.Sprintf("killed after the time limit of %s", timeout)
	case err == nil:
		status = "exit code 0"
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		status = fmt.Sprintf("exit code %d", ee.ExitCode())
	case errors.As(err, &ee):
		status = "killed by " + ee.String()
	default:
		status = "error: " + err.Error()
	}
	text, cut := out.text()
	var b strings.Builder
	fmt.Fprintf(&b, "%s after %s\n", status, took)
	switch {
	case text == "":
		b.WriteString("(no output)\n")
	case cut > 0:
		fmt.Fprintf(&b, "output (the last %d bytes; %d before them left out):\n%s", len(text), cut, text)
	default:
		fmt.Fprintf(&b, "output:\n%s", text)
	}
	return b.String()
}

// tail keeps the last max bytes written to it and counts the rest.
type tail struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += len(p)
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// text returns the kept output (valid UTF-8) and how many bytes were left
// out before it.
func (t *tail) text() (string, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "\uFFFD"), t.total - len(t.buf)
}
