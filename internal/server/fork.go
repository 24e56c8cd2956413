package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A thread can be forked from any position of its history:
//
//	POST /threads/{id}/fork  {"at": N, "agent"?: ..., "model"?: ..., "text"?: ...} → 201 {"thread": NEW_ID}
//
// The fork is a new root thread whose history is the source's items
// [0, at) (positions as GET /threads/{id} numbers its items), inherited by
// position like a child's, so nothing is copied and nothing before at runs
// again: recorded tool results are history. It runs as agent and model
// (the source's unless named) and starts idle, or with text as its first
// user message. A position outside the history is a 400; one that splits a
// tool call from its result is a 409 saying which positions would do.

// forkRequest is the body of POST /threads/{id}/fork.
type forkRequest struct {
	At    *int   `json:"at"`
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	Text  string `json:"text,omitempty"`
}

type forkResponse struct {
	Thread string `json:"thread"`
	// Message is the ID of the first message, when text was given.
	Message string `json:"message,omitempty"`
}

func (s *Server) forkThread(w http.ResponseWriter, r *http.Request) {
	source, ok := threadID(w, r)
	if !ok {
		return
	}
	var req forkRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if req.At == nil {
		writeError(w, http.StatusBadRequest, "at", "missing: the position to fork at (the fork keeps the items before it)")
		return
	}
	src, err := s.store.Load(r.Context(), source)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", source, err)
		return
	}
	if src.State.Version == 0 && src.State.Parent == "" {
		writeError(w, http.StatusNotFound, "thread_id", "thread %s has no history yet", source)
		return
	}
	if at := *req.At; at < 0 || at > len(src.Items) {
		writeError(w, http.StatusBadRequest, "at", "position %d is outside thread %s's history of %d items (0 to %d)", at, source, len(src.Items), len(src.Items))
		return
	}
	id := "fork_" + strings.TrimPrefix(newMessageID(), "msg_")
	c, err := runtime.NewFork(src, id, *req.At, nil)
	if err != nil {
		writeError(w, http.StatusConflict, "at", "%v", err)
		return
	}
	if req.Agent != "" && req.Agent != c.State.Agent {
		if s.agents == nil {
			writeError(w, http.StatusBadRequest, "agent", "names agent %q, but the configuration defines no agents", req.Agent)
			return
		}
		if _, ok := s.agents.Agent(req.Agent); !ok {
			writeError(w, http.StatusBadRequest, "agent", "unknown agent %q (defined: %s)", req.Agent, strings.Join(s.agents.Names(), ", "))
			return
		}
		c.State.Agent, c.State.AgentHash = req.Agent, "" // bound to its current version at the first completion
	}
	if req.Model != "" {
		name, ok := s.checkModel(w, r, req.Model)
		if !ok {
			return
		}
		c.State.Model = name
	}
	var msg runtime.Message
	if req.Text != "" {
		msg = runtime.Message{V: runtime.MessageVersion, ID: newMessageID(), ThreadID: id, Kind: runtime.KindUser, Text: req.Text,
			Class: c.State.Class}
		if err := msg.Validate(); err != nil {
			var bm *runtime.BadMessageError
			if errors.As(err, &bm) {
				writeError(w, http.StatusBadRequest, "text", "%s", bm.Reason)
				return
			}
			writeError(w, http.StatusBadRequest, "text", "%v", err)
			return
		}
	}
	if err := s.store.Commit(r.Context(), c); err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "creating the fork of %s: %v", source, err)
		return
	}
	s.log.Info("thread forked", "thread", id, "source", source, "at", *req.At, "agent", c.State.Agent, "model", c.State.Model)
	resp := forkResponse{Thread: id}
	if req.Text != "" {
		if err := s.sys.Send(r.Context(), msg); err != nil {
			// The fork exists (idle); say so, so the client can send the text itself.
			writeError(w, http.StatusServiceUnavailable, "", "fork %s was created, but enqueueing its message failed: %v", id, err)
			return
		}
		s.recent.add(id, msg.ID, msg.Text)
		resp.Message = msg.ID
	}
	writeJSON(w, http.StatusCreated, resp)
}

// checkModel resolves a model name of a request as POST /threads/{id}/model
// does ("" for the server's own model), answering 400 when it cannot.
func (s *Server) checkModel(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	if name == s.set.model.Name {
		return "", true
	}
	if s.cfg.Models == nil {
		writeError(w, http.StatusBadRequest, "model", "%q: this server runs %q and has no models catalog to switch to", name, s.set.model.Name)
		return "", false
	}
	if _, err := s.cfg.Models.Lookup(name); err != nil {
		writeError(w, http.StatusBadRequest, "model", "%q is not in the models catalog", name)
		return "", false
	}
	if _, err := s.models.get(r.Context(), s, name); err != nil {
		writeError(w, http.StatusBadRequest, "model", "%v", err)
		return "", false
	}
	return name, true
}
