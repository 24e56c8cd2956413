package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
//
// A fork is idempotent when the caller names it: "thread": ID in the body
// (the new thread's ID), or an Idempotency-Key header (the ID is then
// derived from the source and the key). A retried request finds the fork
// it made (same source, same position) and answers 200 with the same
// body, sending its first message again under the same message ID, which
// the runtime processes once; an ID taken by another thread is a 409.

// forkRequest is the body of POST /threads/{id}/fork.
type forkRequest struct {
	At *int `json:"at"`
	// Thread is the fork's ID, chosen by the caller so that a retry finds
	// the fork instead of making another one.
	Thread string `json:"thread,omitempty"`
	Agent  string `json:"agent,omitempty"`
	Model  string `json:"model,omitempty"`
	Text   string `json:"text,omitempty"`
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
	id, named, ok := forkID(w, r, source, req.Thread)
	if !ok {
		return
	}
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
		msgID := newMessageID()
		if named {
			msgID = derivedID("msg_", id, "text") // a retry sends the same message
		}
		msg = runtime.Message{V: runtime.MessageVersion, ID: msgID, ThreadID: id, Kind: runtime.KindUser, Text: req.Text,
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
	status := http.StatusCreated
	if named {
		again, ok := s.existingFork(w, r, id, source, *req.At)
		if !ok {
			return
		}
		if again {
			status = http.StatusOK
		}
	}
	if status == http.StatusCreated {
		if err := s.store.Commit(r.Context(), c); err != nil {
			if !named || !errors.Is(err, runtime.ErrConflict) {
				writeError(w, http.StatusServiceUnavailable, "", "creating the fork of %s: %v", source, err)
				return
			}
			// A request with the same ID made it first: the same fork,
			// or another thread's ID.
			if _, ok := s.existingFork(w, r, id, source, *req.At); !ok {
				return
			}
			status = http.StatusOK
		} else {
			s.log.Info("thread forked", "thread", id, "source", source, "at", *req.At, "agent", c.State.Agent, "model", c.State.Model)
		}
	}
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
	writeJSON(w, status, resp)
}

// forkID is the ID of a new fork of source: the body's thread, else one
// derived from the Idempotency-Key header, else a random one (named
// false). A bad ID, or a key and a thread that disagree, is a 400.
func forkID(w http.ResponseWriter, r *http.Request, source, thread string) (id string, named, ok bool) {
	key := r.Header.Get("Idempotency-Key")
	if key != "" {
		if len(key) > 255 {
			writeError(w, http.StatusBadRequest, "Idempotency-Key", "is %d bytes long: at most 255", len(key))
			return "", false, false
		}
		derived := derivedID("fork_", source, key)
		if thread != "" && thread != derived {
			writeError(w, http.StatusBadRequest, "thread", "%q and the Idempotency-Key header both name the fork: give one", thread)
			return "", false, false
		}
		return derived, true, true
	}
	if thread == "" {
		return "fork_" + strings.TrimPrefix(newMessageID(), "msg_"), false, true
	}
	m := runtime.Message{V: runtime.MessageVersion, ID: "x", ThreadID: thread, Kind: runtime.KindUser, Text: "x"}
	if err := m.Validate(); err != nil {
		var bm *runtime.BadMessageError
		if errors.As(err, &bm) {
			writeError(w, http.StatusBadRequest, "thread", "the fork's ID: %s", bm.Reason)
		} else {
			writeError(w, http.StatusBadRequest, "thread", "the fork's ID: %v", err)
		}
		return "", false, false
	}
	if thread == source {
		writeError(w, http.StatusConflict, "thread", "%q is the thread being forked", thread)
		return "", false, false
	}
	return thread, true, true
}

// derivedID is prefix and a hash of parts: the same parts, the same ID.
func derivedID(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return prefix + hex.EncodeToString(h.Sum(nil)[:12])
}

// existingFork reports whether thread id exists as the fork of source at
// at (a retry: again true); it answers 409 when id is another thread's,
// and 503 when it cannot tell.
func (s *Server) existingFork(w http.ResponseWriter, r *http.Request, id, source string, at int) (again, ok bool) {
	th, err := s.store.Load(r.Context(), id)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", id, err)
		return false, false
	}
	st := &th.State
	if st.Version == 0 && st.Parent == "" {
		return false, true
	}
	if f := st.Fork; f == nil || f.Thread != source || f.At != at {
		what := "a thread that is not a fork"
		if f != nil {
			what = fmt.Sprintf("the fork of %s at %d", f.Thread, f.At)
		}
		writeError(w, http.StatusConflict, "thread", "thread %s exists already (%s): a retry must name the same source and position (%s at %d)", id, what, source, at)
		return false, false
	}
	return true, true
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
