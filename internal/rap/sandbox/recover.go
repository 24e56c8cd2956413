package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
)

// Running commands outlive nothing: a command belongs to the server that
// started it. So that a restart can still tell the thread what became of
// one, each running command has a small record in the metadata directory
// (Root/.agentslice/commands): the invocation's callback, the command,
// its log and its process. The record goes when the final event is
// delivered or the call is cancelled. At its next start the server kills
// what is left of each recorded command (after a kill -9 of the server
// its process group runs on) and sends the thread the final event the
// command owes: it did not finish, its exit status is unknown, the log's
// tail and path (or, for a command that ended while the runtime could not
// be reached, the final event it could not deliver). /tool_call_status answers alive false for these calls
// (the kit tracks none from before the restart), which is the truth; the
// runtime's own liveness check and this final event may race, and the
// first one ends the subscription.

// metaDirName is the directory under Root that holds logs, records and the
// jail's cache; no sandbox has this name (Name starts with a letter or
// digit).
const metaDirName = ".agentslice"

const (
	stateRunning  = "running"  // the command runs (or the server died under it)
	stateStopped  = "stopped"  // the server stopped and killed it
	stateFinished = "finished" // it ended, but its final event (Final) was not delivered
)

// record is a running command's entry in the metadata directory.
type record struct {
	V           int       `json:"v"`
	Thread      string    `json:"thread"`
	Call        string    `json:"call"`
	CallID      *string   `json:"call_id"`
	CallbackURL string    `json:"callback_url"`
	Command     string    `json:"command"`
	Log         string    `json:"log"`
	Pid         int       `json:"pid"`        // the process group's leader
	ProcStart   string    `json:"proc_start"` // its start time in /proc, so a reused pid is not killed
	Started     time.Time `json:"started"`
	State       string    `json:"state"`
	Ended       time.Time `json:"ended,omitzero"`
	Final       string    `json:"final,omitempty"` // the final event's text, when State is finished
}

func (m *Manager) metaDir() string { return filepath.Join(m.cfg.Root, metaDirName) }

// logPath is where a call's command writes its output: beside the
// sandboxes, outside every worktree (so never in a diff).
func (m *Manager) logPath(sandboxName, call string) string {
	return filepath.Join(m.metaDir(), "logs", sandboxName, Name(call)+".log")
}

func (m *Manager) recordPath(thread, call string) string {
	return filepath.Join(m.metaDir(), "commands", Name(thread)+"."+Name(call)+".json")
}

func (m *Manager) saveRecord(r *record) error {
	p := m.recordPath(r.Thread, r.Call)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("recording the command: %v", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("recording the command: %v", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("recording the command: %v", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("recording the command: %v", err)
	}
	return nil
}

func (m *Manager) dropRecord(r *record) { _ = os.Remove(m.recordPath(r.Thread, r.Call)) }

// records reads the records left in the metadata directory; unreadable
// ones are returned as errors and left in place.
func (m *Manager) records() ([]*record, []error) {
	paths, _ := filepath.Glob(filepath.Join(m.metaDir(), "commands", "*.json"))
	var out []*record
	var errs []error
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil || r.Thread == "" || r.Call == "" {
			errs = append(errs, fmt.Errorf("sandbox: command record %s is unreadable: %v", p, err))
			continue
		}
		out = append(out, &r)
	}
	return out, errs
}

// procStart reads a process's start time (field 22 of /proc/PID/stat),
// "" when it cannot.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return ""
	}
	f := strings.Fields(rest) // fields from 3 (state) on
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// killLeftover kills what is left of a recorded command's process group:
// when its leader still runs as the same process (same start time), or
// is gone (members of its group may remain; no other group can have its
// ID while no process has it).
func killLeftover(r *record) {
	if r.Pid <= 1 {
		return
	}
	if now := procStart(r.Pid); now != "" && now != r.ProcStart {
		return // the pid is another process's now
	}
	_ = syscall.Kill(-r.Pid, syscall.SIGKILL)
}

// Recover reports the commands an earlier run of the server left: each
// one's leftover processes are killed and its thread gets the final event
// (through srv, the toolset server now running). It returns how many it
// reported. A record whose event cannot be delivered is dropped all the
// same (the runtime's liveness check ends the subscription then), unless
// ctx ended first.
func (m *Manager) Recover(ctx context.Context, srv *rap.Server) int {
	recs, errs := m.records()
	for _, err := range errs {
		m.logf("sandbox: %v", err)
	}
	n := 0
	epoch := "r" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, r := range recs {
		text := r.Final
		if r.State != stateFinished {
			killLeftover(r)
			why := "the sandbox server stopped (a crash or kill) while it ran, and what was left of it was killed at the next start"
			if r.State == stateStopped {
				why = "the sandbox server was stopped while it ran, which killed it"
			}
			text = fmt.Sprintf("command %s did not finish: %s; its exit status is unknown. It started at %s: %s\n%s\nfull log: %s\n",
				r.Call, why, r.Started.UTC().Format(time.RFC3339), r.Command, m.logTail(r.Log), r.Log)
		}
		if sb, err := m.Lookup(ctx, r.Thread); err == nil && sb != nil {
			sb.mu.Lock()
			if err := sb.importStore(ctx); err != nil {
				m.logf("%v", err)
			}
			sb.mu.Unlock()
		}
		c := srv.Resume(rap.Invocation{Operation: "run_command", ID: r.Call, CallID: r.CallID, CallbackURL: r.CallbackURL, GroupID: r.Thread}, epoch)
		err := c.Event(ctx, text, true, true)
		if ctx.Err() != nil {
			return n
		}
		if err != nil {
			m.logf("sandbox: reporting the interrupted command %s of thread %s: %v", r.Call, r.Thread, err)
		} else {
			n++
		}
		m.dropRecord(r)
	}
	return n
}

func (m *Manager) logf(format string, args ...any) {
	if m.cfg.Logger != nil {
		m.cfg.Logger.Warn(fmt.Sprintf(format, args...))
	}
}

// Server is the sandbox toolset's server: the kit server with the
// commands' lifecycle around it. Start reports the commands an earlier
// run left (Recover, in the background); Stop kills the running commands
// and keeps their records, so the next start reports them.
type Server struct {
	*rap.Server
	repos *Repos
	wg    sync.WaitGroup

	mu     sync.Mutex
	cancel context.CancelFunc
}

// Start starts the kit server, then reports the earlier run's commands in
// a goroutine Stop waits for.
func (s *Server) Start(ctx context.Context) error {
	if err := s.Server.Start(ctx); err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	s.wg.Add(1)
	go func() { // owned by the Server: Stop waits for it
		defer s.wg.Done()
		for _, m := range s.repos.list {
			if n := m.Recover(rctx, s.Server); n > 0 && m.cfg.Logger != nil {
				m.cfg.Logger.Info("sandbox: reported commands an earlier run left unfinished", "repo", m.Name(), "commands", n)
			}
			if n := m.reofferAsks(s.Server, "q"+strconv.FormatInt(time.Now().UnixNano(), 36)); n > 0 && m.cfg.Logger != nil {
				m.cfg.Logger.Info("sandbox: asked again the permission questions an earlier run left unanswered", "repo", m.Name(), "questions", n)
			}
		}
	}()
	return nil
}

// ServeHTTP answers the person's answers to permission questions
// (PermissionPath, permission.go) and hands everything else to the kit.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if i := strings.LastIndex(r.URL.Path, PermissionPath); i >= 0 && r.Method == http.MethodPost {
		for _, m := range s.repos.list {
			if m.answer(w, r, r.URL.Path[i+len(PermissionPath):]) {
				return
			}
		}
		httpError(w, http.StatusNotFound, "no question is waiting for this answer (answered already, or asked by an earlier run of the server)")
		return
	}
	s.Server.ServeHTTP(w, r)
}

// Stop kills the running commands (keeping their records) and stops the
// kit server. It is safe to call twice.
func (s *Server) Stop() {
	for _, m := range s.repos.list {
		m.stopping.Store(true)
	}
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.Server.Stop()
	s.wg.Wait()
}

// isLog reports whether full is one of sb's command logs (read_file reads
// them by the absolute path a result names).
func (m *Manager) isLog(sb *Sandbox, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	dir := filepath.Join(m.metaDir(), "logs", sb.Name)
	clean := filepath.Clean(p)
	if filepath.Dir(clean) != dir || !strings.HasSuffix(clean, ".log") {
		return "", false
	}
	return clean, true
}
