package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentslice/agentslice/internal/rap"
)

// Permissions: a jailed command has no network and writes only its
// sandbox, /tmp and the jail's cache. A run_command that asks for more
// (its network argument, or directories in write_outside) asks the person
// first with a user_choice: allow once, allow always (for the thread), or
// refuse. The thread waits on the choice as it waits on any tool: it is a
// row of data; the call's goroutine in this server waits for the answer,
// which the runtime POSTs to the choice's response_url
// ({base}/permission/{token}, the token an unguessable capability). A
// refusal is the call's result, which the model reads; "always" is kept
// under Root/.agentslice/grants, so the thread is not asked again, across
// restarts. The network access of a thread's agent (Config.NetworkFor,
// from the agent definition's network field in serve) may allow the
// network without asking, or refuse it without asking.
//
// An unanswered question survives a restart of the server: it is asked
// again, with the same token (permission_restart.go).

// Access is what a thread's commands may do without asking the person.
type Access string

// Values of Access.
const (
	// AccessAsk asks the person (the default).
	AccessAsk Access = "ask"
	// AccessAllow allows without asking.
	AccessAllow Access = "allow"
	// AccessDeny refuses without asking.
	AccessDeny Access = "deny"
)

// ValidAccess reports whether a is "", ask, allow or deny.
func ValidAccess(a Access) bool {
	switch a {
	case "", AccessAsk, AccessAllow, AccessDeny:
		return true
	}
	return false
}

// PermissionPath prefixes the response_url of a permission question:
// {base}/permission/{token}.
const PermissionPath = "/permission/"

// The options of a permission question, in order.
var permissionChoices = []string{"Allow once", "Allow always (this thread)", "Refuse"}

const (
	choiceOnce = iota
	choiceAlways
	choiceRefuse
)

// jailGrant is what one command may do beyond the jail's defaults.
type jailGrant struct {
	Network bool     `json:"network,omitempty"`
	Write   []string `json:"write,omitempty"` // absolute, clean directories
}

// asks holds the questions waiting for the person's answer.
type asks struct {
	mu      sync.Mutex
	pending map[string]*ask   // by token
	resumed map[string]string // thread NUL call -> the token its question had before a restart
}

type ask struct {
	call   string        // the run_command call's ID (the choice's id)
	answer chan int      // receives the selected option once
	done   chan struct{} // closed when the call stops waiting
}

// permit decides what the command may do beyond the jail's defaults:
// granted already (by the agent's access or an earlier "always"), asked
// now, or refused. refusal is the result for the model when the command
// must not run; a nil grant and an empty refusal mean ctx ended while
// asking.
func (m *Manager) permit(ctx context.Context, c *rap.Call, sb *Sandbox, command string, network bool, write []string) (*jailGrant, string, error) {
	want := &jailGrant{Network: network}
	for _, w := range write {
		dir, err := m.outsideDir(sb, w)
		if err != nil {
			return nil, "", err
		}
		if !slices.Contains(want.Write, dir) {
			want.Write = append(want.Write, dir)
		}
	}
	if !want.Network && len(want.Write) == 0 {
		return want, "", nil
	}
	access := m.networkAccess(ctx, c)
	if want.Network && access == AccessDeny {
		return nil, "refused: your agent may not use the network (its definition says network: deny), so the command did not run. " +
			"Do the work without the network, or end your turn and tell the person what you need.", nil
	}
	kept := m.loadGrant(sb.Name)
	var ask []string
	if want.Network && access != AccessAllow && !kept.Network {
		ask = append(ask, "the network")
	}
	for _, d := range want.Write {
		if !slices.Contains(kept.Write, d) {
			ask = append(ask, "writing to "+d)
		}
	}
	if len(ask) == 0 {
		return want, "", nil
	}
	what := strings.Join(ask, " and ")
	prompt := fmt.Sprintf("Thread %s wants to run a command in its sandbox with %s (outside what the jail allows):\n%s", c.GroupID, what, command)
	if m.bwrap == "" {
		prompt += "\n(Commands run unjailed on this host: the answer is recorded, but nothing enforces it.)"
	}
	n, err := m.askPerson(ctx, c, prompt)
	switch {
	case err != nil:
		return nil, "", err
	case n < 0:
		return nil, "", nil // cancelled while waiting
	case n == choiceRefuse:
		return nil, fmt.Sprintf("refused: the person did not allow %s, so the command did not run: %s\n"+
			"Do it without that (the jail has no network; only your sandbox and /tmp are writable), or end your turn and explain why you need it.", what, command), nil
	case n == choiceAlways:
		kept.Network = kept.Network || want.Network
		for _, d := range want.Write {
			if !slices.Contains(kept.Write, d) {
				kept.Write = append(kept.Write, d)
			}
		}
		if err := m.saveGrant(sb.Name, kept); err != nil {
			m.logf("sandbox: keeping the permission of thread %s: %v", c.GroupID, err)
		}
	}
	return want, "", nil
}

// networkAccess is the network access of the calling thread's agent:
// Config.NetworkFor's answer (serve reads the thread's agent), else the
// invocation's agent policy (x-agentslice-agent), capped by
// Config.MaxNetwork when that is set (and MaxNetwork itself when neither
// says anything); else allow when Config.Network, else ask.
func (m *Manager) networkAccess(ctx context.Context, c *rap.Call) Access {
	var a Access
	if f := m.cfg.NetworkFor; f != nil {
		got, err := f(ctx, c.GroupID)
		if err != nil {
			m.logf("sandbox: the network access of thread %s: %v (asking the person)", c.GroupID, err)
			return AccessAsk
		}
		a = got
	}
	if a == "" && c.Agent != nil && ValidAccess(Access(c.Agent.Network)) {
		a = Access(c.Agent.Network)
	}
	if ceiling := m.cfg.MaxNetwork; ceiling != "" {
		if a == "" || accessRank(a) > accessRank(ceiling) {
			a = ceiling
		}
	}
	switch {
	case a != "":
		return a
	case m.cfg.Network:
		return AccessAllow
	}
	return AccessAsk
}

// accessRank orders access: deny < ask < allow.
func accessRank(a Access) int {
	switch a {
	case AccessDeny:
		return 0
	case AccessAllow:
		return 2
	}
	return 1
}

// outsideDir checks a directory a command asks to write: absolute, an
// existing directory (symlinks resolved), outside the sandbox, and not
// holding the user's working copy nor inside it.
func (m *Manager) outsideDir(sb *Sandbox, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("write_outside: %q is not an absolute path (your sandbox is writable already; name directories outside it)", p)
	}
	dir, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", fmt.Errorf("write_outside: %q: %v (name an existing directory)", p, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("write_outside: %q is not a directory", p)
	}
	within := func(a, b string) bool { // a is b or inside it
		rel, err := filepath.Rel(b, a)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	switch {
	case dir == "/":
		return "", fmt.Errorf("write_outside: %q is the whole file system: name the directories the command needs", p)
	case within(dir, sb.Dir):
		return "", fmt.Errorf("write_outside: %q is inside your sandbox, which is writable already", p)
	case within(dir, m.repo) || within(m.repo, dir):
		return "", fmt.Errorf("write_outside: %q holds the user's working copy (%s), which commands never write; change files in your sandbox", p, m.repo)
	}
	return dir, nil
}

// askPerson sends the user_choice and waits for the answer: the selected
// option, or -1 when ctx ends first.
func (m *Manager) askPerson(ctx context.Context, c *rap.Call, prompt string) (int, error) {
	if m.publicURL == "" {
		return 0, fmt.Errorf("this sandbox server has no public URL at which the person's answer could reach it, so it cannot ask; the command did not run")
	}
	token := m.resumedToken(c.GroupID, c.ID)
	if token == "" {
		tok := make([]byte, 16)
		_, _ = rand.Read(tok) // never fails (crypto/rand)
		token = hex.EncodeToString(tok)
	}
	if err := m.keepAsk(askRecord{V: 1, Token: token, Invocation: c.Invocation}); err != nil {
		m.logf("sandbox: keeping the permission question of call %s (a restart will not ask it again): %v", c.ID, err)
	}
	a := &ask{call: c.ID, answer: make(chan int, 1), done: make(chan struct{})}
	m.asks.mu.Lock()
	if m.asks.pending == nil {
		m.asks.pending = map[string]*ask{}
	}
	m.asks.pending[token] = a
	m.asks.mu.Unlock()
	defer func() {
		m.asks.mu.Lock()
		delete(m.asks.pending, token)
		m.asks.mu.Unlock()
		close(a.done)
		if ctx.Err() == nil || !m.stopping.Load() {
			m.dropAsk(token) // answered, failed or cancelled; a stopping server keeps it for the next start
		}
	}()
	if err := c.Choice(ctx, prompt, permissionChoices, choiceRefuse, strings.TrimRight(m.publicURL, "/")+PermissionPath+token); err != nil {
		return 0, fmt.Errorf("asking the person: %v", err)
	}
	select {
	case n := <-a.answer:
		return n, nil
	case <-ctx.Done():
		return -1, nil
	}
}

// answer takes the runtime's POST of the person's answer to a question's
// response_url.
func (m *Manager) answer(w http.ResponseWriter, r *http.Request, token string) bool {
	m.asks.mu.Lock()
	a := m.asks.pending[token]
	m.asks.mu.Unlock()
	if a == nil {
		return false
	}
	var resp rap.ChoiceResponse
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&resp); err != nil {
		httpError(w, http.StatusBadRequest, "the body is not {id, selected}: "+err.Error())
		return true
	}
	if resp.ID != a.call || resp.Selected < 0 || resp.Selected >= len(permissionChoices) {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("id %q or selected %d does not answer this question (call %s, 0 to %d)", resp.ID, resp.Selected, a.call, len(permissionChoices)-1))
		return true
	}
	select {
	case a.answer <- resp.Selected:
	case <-a.done:
		httpError(w, http.StatusNotFound, "the question is no longer asked")
		return true
	default: // answered already: the first answer holds
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"accepted"}` + "\n"))
	return true
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"error": msg})
	_, _ = w.Write(append(b, '\n'))
}

func (m *Manager) grantPath(name string) string {
	return filepath.Join(m.metaDir(), "grants", name+".json")
}

// loadGrant returns what the sandbox's thread was allowed always.
func (m *Manager) loadGrant(name string) jailGrant {
	var g jailGrant
	if b, err := os.ReadFile(m.grantPath(name)); err == nil {
		if err := json.Unmarshal(b, &g); err != nil {
			m.logf("sandbox: permission record %s is unreadable (%v): asking again", m.grantPath(name), err)
			return jailGrant{}
		}
	}
	return g
}

func (m *Manager) saveGrant(name string, g jailGrant) error {
	p := m.grantPath(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(g) // a bool and strings: cannot fail
	if err := os.WriteFile(p+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(p+".tmp", p)
}
