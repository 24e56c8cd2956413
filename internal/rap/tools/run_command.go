package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentslice/agentslice/internal/procenv"
	"github.com/agentslice/agentslice/rapkit"
)

// RunCommandConfig configures the run_command tool.
type RunCommandConfig struct {
	// Allowed lists the commands (argv[0], exactly as given) the tool may
	// run. Empty allows none: running arbitrary commands is opt-in.
	Allowed []string
	// Dir is the working directory; default: the server's.
	Dir string
	// Env is the commands' environment (KEY=VALUE); nil gives them
	// procenv.DefaultPass of this process's environment. Either way no
	// AGENTSLICE_* variable reaches them (see package procenv).
	Env []string
	// Timeout kills a command that runs longer. Default 10 minutes.
	Timeout time.Duration
	// MaxEventBytes caps the output carried by one event. Default 16 KiB.
	MaxEventBytes int
}

// RunCommand returns the run_command tool. It runs a command (no shell),
// answers at once with a result that starts a subscription, streams the
// command's combined stdout and stderr as associative subscription events
// (lines that arrive together are batched into one event), and ends with a
// final event carrying the exit code.
func RunCommand(cfg RunCommandConfig) rapkit.Tool {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.MaxEventBytes <= 0 {
		cfg.MaxEventBytes = 16 << 10
	}
	return rapkit.Tool{
		Name:        "run_command",
		Description: "Runs a command without a shell and streams its output as events, then its exit code. Allowed commands: " + strings.Join(cfg.Allowed, ", "),
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"command": {"type": "string", "minLength": 1, "description": "the program to run"},
				"args": {"type": "array", "items": {"type": "string"}, "maxItems": 256, "description": "its arguments"}
			},
			"required": ["command"],
			"additionalProperties": false
		}`),
		Annotations: &rapkit.Annotations{Destructive: true, LongRunning: true},
		Run:         func(ctx context.Context, c *rapkit.Call) error { return runCommand(ctx, c, cfg) },
	}
}

func runCommand(ctx context.Context, c *rapkit.Call, cfg RunCommandConfig) error {
	var a struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	if err := c.Args(&a); err != nil {
		return err
	}
	if !slices.Contains(cfg.Allowed, a.Command) {
		return c.Result(ctx, fmt.Sprintf("error: command %q is not allowed; allowed: %s", a.Command, strings.Join(cfg.Allowed, ", ")))
	}
	// runCtx bounds the command; ctx (the call) bounds the callbacks, so the
	// output and exit code are still reported after a timeout kill.
	runCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, a.Command, a.Args...)
	cmd.Dir = cfg.Dir
	if cfg.Env == nil {
		cmd.Env = procenv.Build(os.Environ(), nil, nil)
	} else {
		cmd.Env = procenv.Build(nil, nil, cfg.Env)
	}
	cmd.WaitDelay = 2 * time.Second // a child that keeps the pipe open cannot hold Wait forever
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pw.Close()
		return c.Result(ctx, fmt.Sprintf("error: starting %s: %v", a.Command, err))
	}
	chunks := make(chan string, 64)
	readDone := make(chan struct{})
	go func() { // owned by this call: waited for below
		defer close(readDone)
		defer close(chunks)
		readChunks(pr, cfg.MaxEventBytes, chunks)
	}()
	waitErr := make(chan error, 1)
	go func() { // owned by this call: waited for below
		err := cmd.Wait()
		pw.Close()
		waitErr <- err
	}()
	// finish stops early: kill the command, drain what the reader still
	// sends (it ends at EOF, once Wait has closed the pipe), wait for both.
	finish := func() error {
		cancel()
		for range chunks {
		}
		<-readDone
		return <-waitErr
	}

	if err := c.Subscribe(ctx, fmt.Sprintf("started %s (pid %d); its output follows as events, then its exit code",
		quoteArgv(a.Command, a.Args), cmd.Process.Pid)); err != nil {
		_ = finish()
		return err
	}
	for batch := range batches(chunks, cfg.MaxEventBytes) {
		if err := c.Event(ctx, batch, true, false); err != nil {
			_ = finish()
			return fmt.Errorf("streaming output of %s: %w", a.Command, err)
		}
	}
	<-readDone
	err := <-waitErr
	if ctx.Err() != nil {
		return ctx.Err() // the call was cancelled: nothing more to say
	}
	return c.Event(ctx, exitText(err, runCtx.Err()), true, true)
}

// readChunks reads r into chunks of about max bytes, cut after newlines
// where possible and never inside a UTF-8 sequence.
func readChunks(r io.Reader, max int, out chan<- string) {
	br := bufio.NewReaderSize(r, max)
	carry := ""
	for {
		line, err := br.ReadSlice('\n')
		s := carry + string(line)
		carry = ""
		if err == bufio.ErrBufferFull {
			// A long line: cut it at the last complete rune.
			cut := len(s)
			for cut > len(s)-utf8.UTFMax && cut > 0 && !utf8.ValidString(s[:cut]) {
				cut--
			}
			if cut > 0 && utf8.ValidString(s[:cut]) {
				s, carry = s[:cut], s[cut:]
			}
		}
		if s != "" {
			out <- strings.ToValidUTF8(s, "\uFFFD")
		}
		if err != nil && err != bufio.ErrBufferFull {
			if carry != "" {
				out <- strings.ToValidUTF8(carry, "\uFFFD")
			}
			return
		}
	}
}

// batches yields the chunks joined into events of at most max bytes (a
// single chunk may be a little longer): it blocks for the first chunk, then
// takes whatever else is already waiting.
func batches(chunks <-chan string, max int) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for {
			b, ok := <-chunks
			if !ok {
				return
			}
		drain:
			for {
				select {
				case next, ok := <-chunks:
					if !ok {
						yield(b)
						return
					}
					if len(b)+len(next) > max {
						if !yield(b) {
							return
						}
						b = next
						continue
					}
					b += next
				default:
					break drain
				}
			}
			if !yield(b) {
				return
			}
		}
	}
}

func exitText(err, ctxErr error) string {
	var ee *exec.ExitError
	switch {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return "exit: killed after the time limit"
	case err == nil:
		return "exit code 0"
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return fmt.Sprintf("exit code %d", ee.ExitCode())
	case errors.As(err, &ee):
		return "exit: killed by " + ee.String()
	}
	return "exit: " + err.Error()
}

func quoteArgv(cmd string, args []string) string {
	parts := []string{cmd}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`") {
			a = fmt.Sprintf("%q", a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
