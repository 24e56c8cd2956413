package server

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/agentslice/agentslice/internal/rap/sandbox"
)

// The review endpoints of the sandbox toolset (docs/sandbox.md): a
// thread's sandbox, its diff, and apply, the one path by which a person
// brings a thread's changes into their working copy.

// SandboxResponse is the body of GET /threads/{id}/sandbox.
type SandboxResponse struct {
	Thread string   `json:"thread"`
	Repo   string   `json:"repo"` // the repository's name (sandbox.repo's base name, or its key in sandbox.repos)
	Branch string   `json:"branch"`
	Dir    string   `json:"dir"`
	Base   string   `json:"base"`
	Files  []string `json:"files"`
	// Applies, with ?check=true, says whether an apply would succeed now
	// (Manager.Check: it costs what an apply costs), and Problem why not.
	Applies *bool  `json:"applies,omitempty"`
	Problem string `json:"problem,omitempty"`
}

// ApplyRequest is the (optional) body of POST /threads/{id}/sandbox/apply.
type ApplyRequest struct {
	Message string `json:"message,omitempty"`
}

// ApplyResponse is the body of a successful apply.
type ApplyResponse struct {
	Commit string   `json:"commit"`
	Files  []string `json:"files"`
}

// SandboxRunning returns how many calls of the sandbox toolset are
// running (a background command is one until it ends); 0 without the
// toolset.
func (s *Server) SandboxRunning() int {
	for _, m := range s.services {
		if k, ok := m.svc.(*sandbox.Server); ok {
			return k.Running()
		}
	}
	return 0
}

// threadSandbox finds the sandbox of the path's thread and its
// repository, or answers 404.
func (s *Server) threadSandbox(w http.ResponseWriter, r *http.Request) (*sandbox.Manager, *sandbox.Sandbox, bool) {
	id, ok := threadID(w, r)
	if !ok {
		return nil, nil, false
	}
	if s.repos == nil {
		writeError(w, http.StatusNotFound, "", "this server has no sandbox toolset (configure sandbox.repo)")
		return nil, nil, false
	}
	m, sb, err := s.repos.Lookup(r.Context(), id)
	switch {
	case err != nil:
		writeError(w, http.StatusInternalServerError, "", "%v", err)
		return nil, nil, false
	case sb == nil:
		writeError(w, http.StatusNotFound, "thread_id", "thread %s has no sandbox (it has not used a sandbox tool)", id)
		return nil, nil, false
	}
	return m, sb, true
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) {
	m, sb, ok := s.threadSandbox(w, r)
	if !ok {
		return
	}
	files, base, err := sb.Files(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "", "%v", err)
		return
	}
	if files == nil {
		files = []string{}
	}
	resp := SandboxResponse{Thread: sb.Thread, Repo: m.Name(), Branch: sb.Branch, Dir: sb.Dir, Base: base, Files: files}
	if r.URL.Query().Get("check") == "true" {
		err := m.Check(r.Context(), sb.Thread)
		ok := err == nil
		var ae *sandbox.ApplyError
		switch {
		case errors.Is(err, sandbox.ErrNothingToApply):
			resp.Problem = "no changes to apply"
		case errors.As(err, &ae):
			resp.Problem = ae.Reason + ": " + strings.Join(ae.Files, ", ")
		case err != nil:
			writeError(w, http.StatusInternalServerError, "", "%v", err)
			return
		}
		resp.Applies = &ok
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) getSandboxDiff(w http.ResponseWriter, r *http.Request) {
	_, sb, ok := s.threadSandbox(w, r)
	if !ok {
		return
	}
	d, _, err := sb.Diff(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "", "%v", err)
		return
	}
	w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
	_, _ = io.WriteString(w, d)
}

// applySandbox commits the thread's changes onto the user's branch; 409
// with the reason (and the files) when it cannot, nothing changed.
func (s *Server) applySandbox(w http.ResponseWriter, r *http.Request) {
	m, sb, ok := s.threadSandbox(w, r)
	if !ok {
		return
	}
	var req ApplyRequest // optional: {"message": "..."} or nothing
	if !s.decodeOptionalBody(w, r, &req) {
		return
	}
	done, err := m.Apply(r.Context(), sb.Thread, req.Message)
	var ae *sandbox.ApplyError
	switch {
	case errors.Is(err, sandbox.ErrNothingToApply):
		writeError(w, http.StatusConflict, "", "thread %s has no changes to apply", sb.Thread)
	case errors.As(err, &ae):
		writeJSON(w, http.StatusConflict, map[string]any{"error": ae.Error(), "reason": ae.Reason, "files": ae.Files})
	case err != nil:
		writeError(w, http.StatusInternalServerError, "", "%v", err)
	default:
		writeJSON(w, http.StatusOK, ApplyResponse{Commit: done.Commit, Files: done.Files})
	}
}

// discardSandbox removes the thread's sandbox (worktree, branch, refs).
func (s *Server) discardSandbox(w http.ResponseWriter, r *http.Request) {
	m, sb, ok := s.threadSandbox(w, r)
	if !ok {
		return
	}
	if err := m.Discard(r.Context(), sb.Thread); err != nil {
		writeError(w, http.StatusInternalServerError, "", "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"discarded": sb.Branch})
}

// InfoResponse is the body of GET /info: what this server serves, for a
// client to check it talks to the server it means (`agentslice code`
// warns when the daemon serves another repository's sandbox).
type InfoResponse struct {
	// Sandbox is the sandbox toolset's, absent without one.
	Sandbox *SandboxInfo `json:"sandbox,omitempty"`
}

// SandboxInfo says which repositories the sandboxes are made from.
type SandboxInfo struct {
	Repos []string `json:"repos"`
}

func (s *Server) getInfo(w http.ResponseWriter, _ *http.Request) {
	var info InfoResponse
	if s.sandbox != nil {
		info.Sandbox = &SandboxInfo{Repos: []string{s.sandbox.Repo()}}
	}
	writeJSON(w, http.StatusOK, info)
}
