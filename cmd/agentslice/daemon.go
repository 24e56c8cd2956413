package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentslice/agentslice/client"
	"github.com/agentslice/agentslice/internal/server"
)

// The local daemon: `agentslice serve` on a data directory (the sqlite
// store) writes daemonFileName there once it listens, atomically, and
// removes it when it stops cleanly. The data directory's lock (the store
// takes it) makes it one server per directory; the file is how the command
// line finds that server. A file whose pid is not alive is stale (the
// server was killed): it is removed when found.

const (
	daemonFileName = "daemon.json"
	daemonLogName  = "daemon.log"
	// daemonConfigName, when it exists in the data directory, is the
	// configuration file a started daemon runs with.
	daemonConfigName = "serve.json"
)

// daemonInfo is the content of the daemon file.
type daemonInfo struct {
	PID int    `json:"pid"`
	URL string `json:"url"`
}

// daemonDir returns the data directory of a serve configuration, if its
// store has one.
func daemonDir(cfg server.Config) (string, bool) {
	store := strings.ToLower(cfg.Store)
	if (store != "" && store != server.StoreSQLite) || (store == "" && cfg.DSN != "") {
		return "", false
	}
	dir := cfg.Data
	if dir == "" {
		dir = server.DefaultDataDir(os.Getenv)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return dir, true
}

// writeDaemonFile records a running server in dir (write and rename: a
// reader never sees half a file).
func writeDaemonFile(dir string, info daemonInfo) error {
	b, _ := json.Marshal(info) // plain struct: cannot fail
	path := filepath.Join(dir, daemonFileName)
	tmp := fmt.Sprintf("%s.%d.tmp", path, info.PID)
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the daemon file %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the daemon file %s: %w", path, err)
	}
	return nil
}

// removeDaemonFile removes dir's daemon file if it still names pid.
func removeDaemonFile(dir string, pid int) {
	if info, err := readDaemonFile(dir); err == nil && info.PID == pid {
		_ = os.Remove(filepath.Join(dir, daemonFileName))
	}
}

func readDaemonFile(dir string) (daemonInfo, error) {
	var info daemonInfo
	path := filepath.Join(dir, daemonFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil || info.PID <= 0 || info.URL == "" {
		return info, fmt.Errorf("daemon file %s is not {\"pid\": N, \"url\": ...}: %s (delete it if no server runs there)", path, strings.TrimSpace(string(b)))
	}
	return info, nil
}

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// errNoDaemon says no daemon runs on a data directory.
var errNoDaemon = errors.New("no daemon runs")

// findDaemon returns the daemon running on dir: errNoDaemon when there is
// none (a stale file is removed, and stale is true), or an error when the
// file names a live process that does not answer.
func findDaemon(ctx context.Context, dir, token string) (info daemonInfo, stale bool, err error) {
	info, err = readDaemonFile(dir)
	if errors.Is(err, os.ErrNotExist) {
		return info, false, errNoDaemon
	}
	if err != nil {
		return info, false, err
	}
	if !alive(info.PID) {
		removeDaemonFile(dir, info.PID)
		return info, true, errNoDaemon
	}
	c, err := client.New(info.URL, token)
	if err != nil {
		return info, false, fmt.Errorf("daemon file %s: %w", filepath.Join(dir, daemonFileName), err)
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Health(hctx); err != nil {
		return info, false, fmt.Errorf("the daemon file %s names pid %d at %s, which is alive but does not answer (%v); if it is not agentslice, delete the file",
			filepath.Join(dir, daemonFileName), info.PID, info.URL, err)
	}
	return info, false, nil
}

// daemonCommand builds the command that runs `agentslice <args>` as a
// daemon; tests replace it to run their own binary.
var daemonCommand = func(args []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start the daemon: %w", err)
	}
	return exec.Command(exe, args...), nil
}

// daemonStartTimeout bounds how long a started daemon may take to listen.
const daemonStartTimeout = 2 * time.Minute

// startDaemon starts serve on dir, detached (its own session, stdin from
// /dev/null, output appended to daemon.log), with extra serve flags, and
// waits until it answers. If another start won the race for the directory,
// that daemon is returned.
func startDaemon(ctx context.Context, dir, listen, token string, extra []string) (daemonInfo, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return daemonInfo{}, fmt.Errorf("creating the data directory %s: %w", dir, err)
	}
	args := []string{"serve", "-data", dir, "-listen", listen}
	if _, err := os.Stat(filepath.Join(dir, daemonConfigName)); err == nil {
		args = append(args, "-config", filepath.Join(dir, daemonConfigName))
	}
	args = append(args, extra...)
	logPath := filepath.Join(dir, daemonLogName)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return daemonInfo{}, fmt.Errorf("opening the daemon log: %w", err)
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, io.SeekEnd)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return daemonInfo{}, err
	}
	defer devnull.Close()
	cmd, err := daemonCommand(args)
	if err != nil {
		return daemonInfo{}, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logf, logf // files: no copying goroutines
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}    // outlives this terminal
	if err := cmd.Start(); err != nil {
		return daemonInfo{}, fmt.Errorf("starting the daemon: %w", err)
	}
	pid := cmd.Process.Pid
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(daemonStartTimeout)
	defer deadline.Stop()
	for {
		var ws syscall.WaitStatus
		exited, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil) // reaps it if it ended; never blocks
		info, _, err := findDaemon(ctx, dir, token)
		switch {
		case err == nil && (info.PID == pid || exited == pid):
			return info, nil // ours, or the one a racing start made
		case exited == pid:
			return daemonInfo{}, fmt.Errorf("the daemon exited (%s) before it listened; %s says:\n%s", exitDescription(ws), logPath, logTail(logPath, logStart))
		}
		select {
		case <-ctx.Done():
			return daemonInfo{}, ctx.Err()
		case <-deadline.C:
			return daemonInfo{}, fmt.Errorf("the daemon (pid %d) did not listen within %s; see %s", pid, daemonStartTimeout, logPath)
		case <-tick.C:
		}
	}
}

func exitDescription(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("status %d", ws.ExitStatus())
}

// logTail returns what was written to path after offset, at most its last
// 2 KiB.
func logTail(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < offset {
		return ""
	}
	b = b[offset:]
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return strings.TrimSpace(string(b))
}

// stopDaemon asks the daemon to stop (SIGTERM) and waits until it removed
// its file or is gone.
func stopDaemon(ctx context.Context, dir string, info daemonInfo) error {
	if err := syscall.Kill(info.PID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			removeDaemonFile(dir, info.PID)
			return nil
		}
		return fmt.Errorf("signalling the daemon (pid %d): %w", info.PID, err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		if cur, err := readDaemonFile(dir); errors.Is(err, os.ErrNotExist) || (err == nil && cur.PID != info.PID) || !alive(info.PID) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("the daemon (pid %d) did not stop within a minute of SIGTERM; see %s", info.PID, filepath.Join(dir, daemonLogName))
		case <-tick.C:
		}
	}
}

// runDaemon is `agentslice daemon start|stop|status`.
func runDaemon(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const synopsis = "daemon start|stop|status [-data DIR] [-listen ADDR] [-- serve flags...]"
	verb := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: agentslice %s\n\n"+
			"The daemon is `agentslice serve` on a data directory, found through the file %s there.\n"+
			"start runs it detached (output appended to %s; %s in the directory is its -config when it exists),\n"+
			"status says where it listens, stop ends it. The serve commands (threads, send, tail) start it when none runs.\n\nflags:\n",
			synopsis, daemonFileName, daemonLogName, daemonConfigName)
		fs.PrintDefaults()
	}
	data := fs.String("data", "", "data `directory` (default $"+server.DataDirEnv+", else $XDG_DATA_HOME/agentslice, else ~/.local/share/agentslice)")
	listen := fs.String("listen", "127.0.0.1:0", "`address` a started daemon listens on (the default is a free port of 127.0.0.1)")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if verb == "" {
		fs.Usage()
		return usagef("say start, stop or status")
	}
	dir := dataDir(*data)
	token := os.Getenv(server.TokenEnv)
	switch verb {
	case "start":
		info, stale, err := findDaemon(ctx, dir, token)
		if err == nil {
			fmt.Fprintf(stdout, "daemon already running at %s (pid %d, data %s)\n", info.URL, info.PID, dir)
			return nil
		}
		if !errors.Is(err, errNoDaemon) {
			return err
		}
		if stale {
			fmt.Fprintf(stderr, "agentslice daemon: removed the stale daemon file of pid %d\n", info.PID)
		}
		if info, err = startDaemon(ctx, dir, *listen, token, fs.Args()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "daemon started at %s (pid %d, data %s, log %s)\n", info.URL, info.PID, dir, filepath.Join(dir, daemonLogName))
		return nil
	case "stop", "status":
		if fs.NArg() > 0 {
			return usagef("unexpected argument %q", fs.Arg(0))
		}
		info, stale, err := findDaemon(ctx, dir, token)
		if stale {
			fmt.Fprintf(stderr, "agentslice daemon: removed the stale daemon file of pid %d (it is not running)\n", info.PID)
		}
		if errors.Is(err, errNoDaemon) {
			if verb == "stop" {
				fmt.Fprintf(stdout, "no daemon runs for %s\n", dir)
				return nil
			}
			return fmt.Errorf("no daemon runs for %s", dir)
		}
		if err != nil {
			return err
		}
		if verb == "status" {
			fmt.Fprintf(stdout, "daemon running at %s (pid %d, data %s)\n", info.URL, info.PID, dir)
			return nil
		}
		if err := stopDaemon(ctx, dir, info); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "daemon stopped (pid %d)\n", info.PID)
		return nil
	}
	return usagef("unknown daemon command %q: say start, stop or status", verb)
}

// dataDir resolves a -data flag as serve does.
func dataDir(flagValue string) string {
	dir, _ := daemonDir(server.Config{Data: flagValue})
	return dir
}
