package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Bounds of what is kept of an MCP server's stderr for error messages.
const (
	stderrTailLines = 20
	stderrTailBytes = 4 << 10
	// stderrLineBytes caps one line (logged and kept); the rest of a longer
	// line is dropped and the line marked with "…".
	stderrLineBytes = 1 << 10
	// stderrSettle is how long an error waits for a dead server's last
	// stderr lines to arrive before it is reported without them.
	stderrSettle = 2 * time.Second
)

// stderrLog is the stderr of one MCP subprocess: every line is logged with
// the proxy's name, and the last lines are kept (at most stderrTailLines
// and stderrTailBytes) so that an error can say how the server died.
type stderrLog struct {
	proxy string
	log   *slog.Logger

	mu      sync.Mutex
	partial []byte // the line being written, at most stderrLineBytes
	cut     bool   // partial lost bytes beyond stderrLineBytes
	tail    []string
	size    int           // bytes in tail
	done    chan struct{} // closed when the stream ended (the process and its children closed it)
}

func newStderrLog(proxy string, log *slog.Logger) *stderrLog {
	return &stderrLog{proxy: proxy, log: log, done: make(chan struct{})}
}

// Write takes a chunk of the stream. It never fails, so the stream is
// always drained (a server blocked on a full stderr pipe would hang).
func (l *stderrLog) Write(b []byte) (int, error) {
	n := len(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if room := stderrLineBytes - len(l.partial); len(chunk) > room {
			l.partial = append(l.partial, chunk[:room]...)
			l.cut = true
		} else {
			l.partial = append(l.partial, chunk...)
		}
		if i < 0 {
			break
		}
		l.lineLocked()
		b = b[i+1:]
	}
	return n, nil
}

// end flushes a last line without a newline and marks the stream ended.
func (l *stderrLog) end() {
	l.mu.Lock()
	if len(l.partial) > 0 || l.cut {
		l.lineLocked()
	}
	l.mu.Unlock()
	close(l.done)
}

func (l *stderrLog) lineLocked() {
	line := strings.TrimRight(strings.ToValidUTF8(string(l.partial), "\uFFFD"), "\r")
	if l.cut {
		line += "…"
	}
	l.partial, l.cut = l.partial[:0], false
	l.log.Info("mcp: server stderr", "proxy", l.proxy, "line", line)
	l.tail = append(l.tail, line)
	l.size += len(line) + 1
	for len(l.tail) > stderrTailLines || (l.size > stderrTailBytes && len(l.tail) > 1) {
		l.size -= len(l.tail[0]) + 1
		l.tail = l.tail[1:]
	}
}

// Tail returns the last lines kept, joined by newlines.
func (l *stderrLog) Tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.tail, "\n")
}

// explain adds the server's last stderr lines to err, the error of a
// session on this stream that failed. When the stream has not ended yet it
// waits up to stderrSettle for it (a server that died has closed it or is
// about to), then uses what it has.
func (l *stderrLog) explain(err error) error {
	if l == nil || err == nil {
		return err
	}
	select {
	case <-l.done:
	case <-time.After(stderrSettle):
	}
	tail := l.Tail()
	if tail == "" {
		return fmt.Errorf("%w (the MCP server wrote nothing to stderr)", err)
	}
	return &stderrError{err: err, tail: tail}
}

// stderrError is an MCP failure with the server's last stderr lines.
type stderrError struct {
	err  error
	tail string
}

func (e *stderrError) Error() string {
	return fmt.Sprintf("%v; the MCP server's stderr ended with:\n%s", e.err, e.tail)
}

func (e *stderrError) Unwrap() error { return e.err }

// stderrPipe connects cmd's stderr to a new stderrLog through a pipe the
// proxy reads itself (not exec's copying goroutine), so it knows when the
// stream ended. started must be called once cmd was started, or failed to
// start: it closes the parent's copy of the write end.
func (p *Proxy) stderrPipe(cmd *exec.Cmd) (l *stderrLog, started func(), err error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("creating the stderr pipe of MCP server %s: %w", p.cfg.Name, err)
	}
	cmd.Stderr = pw
	l = newStderrLog(p.cfg.Name, p.cfg.Logger)
	p.rmu.Lock()
	p.pipes[pr] = struct{}{}
	p.rmu.Unlock()
	p.readers.Add(1)
	go func() { // owned by the proxy: Stop waits for it (stopReaders)
		defer p.readers.Done()
		_, err := io.Copy(l, pr)
		if err != nil && !errors.Is(err, os.ErrClosed) {
			p.cfg.Logger.Debug("mcp: reading server stderr", "proxy", p.cfg.Name, "error", err)
		}
		p.rmu.Lock()
		delete(p.pipes, pr)
		p.rmu.Unlock()
		_ = pr.Close()
		l.end()
	}()
	return l, func() { _ = pw.Close() }, nil
}

// stopReaders waits for the stderr readers (their processes were told to
// end); a stream still open after stderrSettle (a child the server left
// behind holds it) is closed on the reading side.
func (p *Proxy) stopReaders() {
	done := make(chan struct{})
	go func() { // ends when every reader did, which the select below forces
		p.readers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(stderrSettle):
	}
	p.rmu.Lock()
	for f := range p.pipes {
		_ = f.Close()
	}
	p.rmu.Unlock()
	<-done
}
