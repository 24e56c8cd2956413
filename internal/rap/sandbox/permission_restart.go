package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentslice/agentslice/internal/rap"
)

// A question waiting for the person's answer survives a restart of the
// server: askPerson keeps its invocation and token in a record under
// Root/.agentslice/asks (dropped once answered or cancelled, kept when the
// server stops or dies meanwhile); the next start reruns that run_command
// call (rap.Server.Rerun: tracked as running again, so tool_call_status
// answers true), which asks the same question again with the same token,
// so an answer to the earlier response_url path is taken too.

// askRecord is one question kept on disk.
type askRecord struct {
	V          int            `json:"v"`
	Token      string         `json:"token"`
	Invocation rap.Invocation `json:"invocation"`
}

func (m *Manager) askDir() string { return filepath.Join(m.metaDir(), "asks") }

func (m *Manager) askPath(token string) string { return filepath.Join(m.askDir(), token+".json") }

// keepAsk writes the question's record (atomically).
func (m *Manager) keepAsk(rec askRecord) error {
	if err := os.MkdirAll(m.askDir(), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	p := m.askPath(rec.Token)
	if err := os.WriteFile(p+".tmp", b, 0o600); err != nil { // the token is a capability
		return err
	}
	return os.Rename(p+".tmp", p)
}

func (m *Manager) dropAsk(token string) {
	if err := os.Remove(m.askPath(token)); err != nil && !os.IsNotExist(err) {
		m.logf("sandbox: dropping the record of a permission question: %v", err)
	}
}

// resumedToken returns (and forgets) the token the question of this call
// had before a restart, or "".
func (m *Manager) resumedToken(thread, call string) string {
	m.asks.mu.Lock()
	defer m.asks.mu.Unlock()
	key := thread + "\x00" + call
	tok := m.asks.resumed[key]
	delete(m.asks.resumed, key)
	return tok
}

// reofferAsks reruns the calls whose questions an earlier run of the
// server left unanswered; it returns how many. A record that cannot be
// read or rerun is dropped (the runtime's liveness check then ends the
// call, as before records were kept).
func (m *Manager) reofferAsks(srv *rap.Server, epoch string) int {
	entries, err := os.ReadDir(m.askDir())
	if err != nil {
		if !os.IsNotExist(err) {
			m.logf("sandbox: reading the permission questions of an earlier run: %v", err)
		}
		return 0
	}
	n := 0
	for _, e := range entries {
		token, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		var rec askRecord
		b, err := os.ReadFile(m.askPath(token))
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err == nil && (rec.Token != token || rec.Invocation.Operation != "run_command") {
			err = fmt.Errorf("it is not a run_command question of token %s", token)
		}
		if err != nil {
			m.logf("sandbox: dropping permission question record %s: %v", e.Name(), err)
			m.dropAsk(token)
			continue
		}
		m.asks.mu.Lock()
		if m.asks.resumed == nil {
			m.asks.resumed = map[string]string{}
		}
		m.asks.resumed[rec.Invocation.GroupID+"\x00"+rec.Invocation.ID] = token
		m.asks.mu.Unlock()
		if err := srv.Rerun(rec.Invocation, epoch); err != nil {
			m.logf("sandbox: asking the question of call %s again: %v", rec.Invocation.ID, err)
			m.resumedToken(rec.Invocation.GroupID, rec.Invocation.ID)
			m.dropAsk(token)
			continue
		}
		n++
	}
	return n
}
