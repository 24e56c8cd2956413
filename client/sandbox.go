package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Sandbox is the answer of GET /threads/{id}/sandbox: the thread's git
// worktree, its branch, and the files it changed against its base.
type Sandbox struct {
	Thread string   `json:"thread"`
	Branch string   `json:"branch"`
	Dir    string   `json:"dir"`
	Base   string   `json:"base"`
	Files  []string `json:"files"`
}

// Applied is the answer of a successful SandboxApply: the commit made on
// the user's branch and the files it touched.
type Applied struct {
	Commit string   `json:"commit"`
	Files  []string `json:"files"`
}

// Sandbox reads a thread's sandbox. A thread without one (or a server
// without the sandbox toolset) is an *APIError 404.
func (c *Client) Sandbox(ctx context.Context, thread string) (*Sandbox, error) {
	var s Sandbox
	if err := c.getJSON(ctx, "/threads/"+url.PathEscape(thread)+"/sandbox", nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// SandboxDiff returns the unified diff of a thread's sandbox against its
// base ("" when it changed nothing).
func (c *Client) SandboxDiff(ctx context.Context, thread string) (string, error) {
	path := "/threads/" + url.PathEscape(thread) + "/sandbox/diff"
	resp, err := c.do(ctx, http.MethodGet, path, nil, nil, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("client: reading the answer of GET %s: %w", path, err)
	}
	return string(b), nil
}

// SandboxApply commits a thread's sandbox changes onto the user's current
// branch (message "" for the server's default). When it cannot (nothing to
// apply, a touched file has uncommitted changes, a conflict) the answer is
// an *APIError 409 whose Message says why; nothing changed then.
func (c *Client) SandboxApply(ctx context.Context, thread, message string) (Applied, error) {
	var body any
	if message != "" {
		body = map[string]string{"message": message}
	}
	var a Applied
	err := c.call(ctx, http.MethodPost, "/threads/"+url.PathEscape(thread)+"/sandbox/apply", nil, body, &a)
	return a, err
}

// SandboxDiscard removes a thread's sandbox (worktree, branch, refs) and
// returns the branch it removed; its changes are lost.
func (c *Client) SandboxDiscard(ctx context.Context, thread string) (string, error) {
	var out struct {
		Discarded string `json:"discarded"`
	}
	err := c.call(ctx, http.MethodPost, "/threads/"+url.PathEscape(thread)+"/sandbox/discard", nil, nil, &out)
	return out.Discarded, err
}

// AgentInfo is one agent of GET /agents.
type AgentInfo struct {
	Name     string   `json:"name"`
	Model    string   `json:"model,omitempty"`
	Tools    []string `json:"tools,omitempty"`
	Priority string   `json:"priority,omitempty"`
}

// Agents is the answer of GET /agents.
type Agents struct {
	Agents  []AgentInfo `json:"agents"`
	Default string      `json:"default"`
}

// Agents lists the agents a thread can run as.
func (c *Client) Agents(ctx context.Context) (*Agents, error) {
	var a Agents
	if err := c.getJSON(ctx, "/agents", nil, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// ModelInfo is one model of GET /models.
type ModelInfo struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
}

// Models is the answer of GET /models.
type Models struct {
	Models  []ModelInfo `json:"models"`
	Default string      `json:"default"`
}

// Models lists the models a thread can be switched to.
func (c *Client) Models(ctx context.Context) (*Models, error) {
	var m Models
	if err := c.getJSON(ctx, "/models", nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// SetModel switches a thread's model from its next completion ("" goes
// back to its default).
func (c *Client) SetModel(ctx context.Context, thread, model string) error {
	return c.call(ctx, http.MethodPost, "/threads/"+url.PathEscape(thread)+"/model", nil, map[string]string{"model": model}, nil)
}

// SetAgent switches the agent a thread runs as from its next completion.
func (c *Client) SetAgent(ctx context.Context, thread, agent string) error {
	return c.call(ctx, http.MethodPost, "/threads/"+url.PathEscape(thread)+"/agent", nil, map[string]string{"agent": agent}, nil)
}

// IsConflict reports whether err is an API answer 409.
func IsConflict(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.StatusCode == http.StatusConflict
}
