// Package client is a Go client of the HTTP API of `agentslice serve`: list
// threads, send a message, read a thread, follow its event stream, answer a
// user_choice, and check health. The agentslice command line is built on it.
//
// Stability: the package follows the API it speaks, which is young. Method
// signatures and the meaning of existing fields are kept within a minor
// version; fields are added as the API grows. Responses are decoded
// leniently: fields this version does not know are ignored, fields a server
// does not send stay at their zero value, so a newer client talks to an older
// server and the other way round.
//
// Assumed, not yet sent by every server: GET /threads answers ?limit=,
// ?cursor=, ?status=, ?agent= and ?q= (ListOptions passes each one that is
// set; a server that ignores them lists everything) and may send
// "next_cursor"; a listed thread may carry "title", "agent" and
// "last_activity"; history items may carry "at". All are optional here.
//
// Errors: every non-2xx answer is an *APIError with the status code and the
// server's message and field; transport failures are wrapped with what was
// being done.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one serve. The zero value is not usable: set BaseURL (or
// use New).
type Client struct {
	// BaseURL is the server's base URL, such as http://127.0.0.1:8080.
	BaseURL string
	// Token, when set, is sent as "Authorization: Bearer <token>" (serve's
	// auth_token or AGENTSLICE_TOKEN).
	Token string
	// HTTPClient makes the requests (default http.DefaultClient). Event
	// streams last long: give it no overall Timeout, bound calls with their
	// context instead.
	HTTPClient *http.Client
}

// New returns a client of the server at baseURL, authenticating with token
// when it is not "".
func New(baseURL, token string) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: server URL %q is not an absolute http(s) URL", baseURL)
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token}, nil
}

// APIError is an answer of the server outside 2xx.
type APIError struct {
	StatusCode int
	// Message is the server's "error"; Field names what it is about, if
	// anything ("thread_id", "agent", "text", ...).
	Message string
	Field   string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	return s
}

// IsNotFound reports whether err is an API answer 404.
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound
}

func (c *Client) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return http.DefaultClient
}

// do sends a request and returns the response of a 2xx answer; any other
// becomes an *APIError.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any, header http.Header) (*http.Response, error) {
	u := strings.TrimRight(c.BaseURL, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("client: encoding the body of %s %s: %w", method, path, err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, fmt.Errorf("client: building %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, u, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var e struct {
			Error string `json:"error"`
			Field string `json:"field"`
		}
		ae := &APIError{StatusCode: resp.StatusCode}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			ae.Message, ae.Field = e.Error, e.Field
		} else {
			ae.Message = strings.TrimSpace(string(b))
		}
		return nil, ae
	}
	return resp, nil
}

func (c *Client) getJSON(ctx context.Context, path string, query url.Values, out any) error {
	return c.call(ctx, http.MethodGet, path, query, nil, out)
}

func (c *Client) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	resp, err := c.do(ctx, method, path, query, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: decoding the answer of %s %s: %w", method, path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the trailing newline: the connection can be reused
	return nil
}

// Health is the answer of GET /healthz.
type Health struct {
	Status        string `json:"status"`
	Threads       int    `json:"threads"`
	ActiveThreads int    `json:"active_threads"`
	DeadLetters   int    `json:"dead_letters"`
	Model         string `json:"model"`
}

// Health checks that the server is alive (no token needed).
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.getJSON(ctx, "/healthz", nil, &h)
	return h, err
}

// Info is the answer of GET /info: what the server serves.
type Info struct {
	// Sandbox is nil when the server has no sandbox toolset.
	Sandbox *struct {
		// Repos are the repositories its sandboxes are made from.
		Repos []string `json:"repos"`
	} `json:"sandbox,omitempty"`
}

// Info says what the server serves (its sandbox repositories). A server
// from before GET /info answers it 404 (an *APIError).
func (c *Client) Info(ctx context.Context) (Info, error) {
	var in Info
	err := c.getJSON(ctx, "/info", nil, &in)
	return in, err
}

// ListOptions filter and page GET /threads; each set field is passed as
// its query parameter (limit, cursor, status, agent, q).
type ListOptions struct {
	Limit  int
	Cursor string
	Status string
	Agent  string
	Query  string
}

func (o ListOptions) values() url.Values {
	v := url.Values{}
	if o.Limit > 0 {
		v.Set("limit", strconv.Itoa(o.Limit))
	}
	for k, s := range map[string]string{"cursor": o.Cursor, "status": o.Status, "agent": o.Agent, "q": o.Query} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// ThreadSummary is one thread of a listing, with its children.
type ThreadSummary struct {
	ID string `json:"id"`
	// Status is closed, running, sleeping, waiting_for_choice,
	// waiting_for_tool, watching (a subscription is active and nothing
	// else is), idle (or a status a newer server adds, such as failed).
	Status       string          `json:"status"`
	Title        string          `json:"title,omitempty"`
	Agent        string          `json:"agent,omitempty"`
	LastActivity *time.Time      `json:"last_activity,omitempty"`
	Temporary    bool            `json:"temporary,omitempty"`
	Length       int             `json:"length"`
	Tokens       int             `json:"tokens,omitempty"`
	Children     []ThreadSummary `json:"children,omitempty"`
}

// ThreadList is the answer of GET /threads.
type ThreadList struct {
	Threads    []ThreadSummary `json:"threads"`
	Count      int             `json:"count"`
	Truncated  bool            `json:"truncated,omitempty"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// Threads lists the thread tree: roots with their children.
func (c *Client) Threads(ctx context.Context, opts ListOptions) (*ThreadList, error) {
	var l ThreadList
	if err := c.getJSON(ctx, "/threads", opts.values(), &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// Message is what Send sends to a thread.
type Message struct {
	Text string `json:"text"`
	// ID makes the send idempotent (default: the server makes one up).
	ID     string `json:"id,omitempty"`
	UserID string `json:"user_id,omitempty"`
	// Agent is the agent a new thread runs as; on an existing thread, the
	// one it runs as (a mismatch is a 409).
	Agent string `json:"agent,omitempty"`
	// Class is "interactive" (default) or "background", for a new thread.
	Class string `json:"class,omitempty"`
	// Upgrade is a new thread's agent upgrade policy: "latest" (default)
	// or "pinned" (it keeps the definition version it started with).
	Upgrade string `json:"upgrade,omitempty"`
}

// Accepted is the answer of a Send: the message's ID and its thread.
type Accepted struct {
	ID       string `json:"id"`
	ThreadID string `json:"thread_id"`
}

// Send queues a message for a thread; a new thread ID starts a thread.
func (c *Client) Send(ctx context.Context, thread string, m Message) (Accepted, error) {
	var a Accepted
	err := c.call(ctx, http.MethodPost, "/threads/"+url.PathEscape(thread)+"/messages", nil, m, &a)
	return a, err
}

// Item is one entry of a thread's history.
type Item struct {
	// Kind is user, assistant, tool_call, tool_result or marker.
	Kind      string     `json:"kind"`
	At        *time.Time `json:"at,omitempty"`
	Input     string     `json:"input,omitempty"`
	Text      string     `json:"text,omitempty"`
	Reasoning string     `json:"reasoning,omitempty"`
	CallID    string     `json:"call_id,omitempty"`
	Name      string     `json:"name,omitempty"`
	Args      string     `json:"args,omitempty"`
	IsError   bool       `json:"is_error,omitempty"`
	Usage     *Usage     `json:"usage,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	Input      int `json:"input,omitempty"`
	Output     int `json:"output,omitempty"`
	Cached     int `json:"cached,omitempty"`
	CacheWrite int `json:"cache_write,omitempty"`
	Total      int `json:"total,omitempty"`
}

// Choice is a user_choice waiting for its answer.
type Choice struct {
	CallID  string   `json:"call_id"`
	Prompt  string   `json:"prompt"`
	Choices []string `json:"choices"`
	Default *int     `json:"default,omitempty"`
}

// ThreadState is the part of a thread's state the API shows.
type ThreadState struct {
	Version  int64    `json:"version"`
	Length   int      `json:"length"`
	Parent   string   `json:"parent,omitempty"`
	Children []string `json:"children,omitempty"`
	Closed   bool     `json:"closed,omitempty"`
	Tokens   int      `json:"tokens,omitempty"`
	Agent    string   `json:"agent,omitempty"`
	Model    string   `json:"model,omitempty"`
	Usage    Usage    `json:"usage"`
	// Fork says where a forked thread's history comes from.
	Fork *ForkPoint `json:"fork,omitempty"`
	// AgentHash is the version of the agent definition the thread runs;
	// Upgrade its upgrade policy ("": latest).
	AgentHash string `json:"agent_hash,omitempty"`
	Upgrade   string `json:"upgrade,omitempty"`
	// Subscriptions are the thread's active subscriptions (a tool still
	// sending events: a background command, a watch), by the call that
	// started each.
	Subscriptions []Subscription `json:"subscriptions,omitempty"`
}

// Subscription is an active subscription: the call that started it and
// its tool.
type Subscription struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Args   string `json:"args,omitempty"`
}

// ForkPoint is the source thread of a fork and how many of its items the
// fork inherits.
type ForkPoint struct {
	Thread string `json:"thread"`
	At     int    `json:"at"`
}

// Thread is the answer of GET /threads/{id}.
type Thread struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	// Reason says why a thread is failed or waiting for its provider.
	Reason string      `json:"reason,omitempty"`
	State  ThreadState `json:"state"`
	// Inherited items come from the thread's ancestors; Items starts at
	// From of Total.
	Inherited int        `json:"inherited"`
	From      int        `json:"from"`
	Total     int        `json:"total"`
	Items     []Item     `json:"items"`
	Choice    *Choice    `json:"choice,omitempty"`
	Until     *time.Time `json:"until,omitempty"`
	// Budget is the thread's limit and spend, and its tree's.
	Budget *Budget `json:"budget,omitempty"`
}

// Limit is a spending limit; a zero field limits nothing.
type Limit struct {
	Tokens int64   `json:"tokens,omitempty"`
	USD    float64 `json:"usd,omitempty"`
}

// Spend is what was used: tokens and US dollars at the catalog's prices.
type Spend struct {
	Tokens int64   `json:"tokens"`
	USD    float64 `json:"usd"`
}

// Budget is a thread's budgets as GET /threads/{id} shows them.
type Budget struct {
	Limit *Limit `json:"limit,omitempty"`
	Spent Spend  `json:"spent"`
	// Waiting is "thread" or "tree" while the thread waits on that limit.
	Waiting string `json:"waiting,omitempty"`
	Tree    *struct {
		Root     string   `json:"root"`
		Limit    *Limit   `json:"limit,omitempty"`
		Spent    Spend    `json:"spent"`
		Reserved Spend    `json:"reserved"`
		Waiting  []string `json:"waiting,omitempty"`
	} `json:"tree,omitempty"`
}

// Own is how many items the thread itself wrote: the cursor of its event
// stream after everything it has.
func (t *Thread) Own() int { return t.Total - t.Inherited }

// Thread reads a thread's state and its history items from position from.
// A thread without history is an *APIError 404 (see IsNotFound).
func (c *Client) Thread(ctx context.Context, id string, from int) (*Thread, error) {
	var q url.Values
	if from > 0 {
		q = url.Values{"from": {strconv.Itoa(from)}}
	}
	var t Thread
	if err := c.getJSON(ctx, "/threads/"+url.PathEscape(id), q, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Choose answers a thread's pending user_choice of tool call callID with
// the index of the selected choice.
func (c *Client) Choose(ctx context.Context, thread, callID string, selected int) error {
	return c.call(ctx, http.MethodPost, "/threads/"+url.PathEscape(thread)+"/choices/"+url.PathEscape(callID), nil,
		map[string]int{"selected": selected}, nil)
}

// Stop interrupts a thread: the running completion and the pending call
// (reason is recorded with the stop; "" for none).
func (c *Client) Stop(ctx context.Context, thread, reason string) error {
	return c.control(ctx, thread, "stop", reason)
}

// Close stops a thread and closes it for good: it takes no more messages.
func (c *Client) Close(ctx context.Context, thread, reason string) error {
	return c.control(ctx, thread, "close", reason)
}

func (c *Client) control(ctx context.Context, thread, what, reason string) error {
	body := map[string]string{}
	if reason != "" {
		body["reason"] = reason
	}
	return c.call(ctx, http.MethodPost, "/threads/"+url.PathEscape(thread)+"/"+what, nil, body, nil)
}

// ForkOptions is what a fork changes: its agent and model (default: the
// source's) and its first user message (default: none, the fork is idle).
// Thread names the fork: a Fork retried with the same Thread returns the
// fork the first call made instead of making another (default: the server
// picks a new ID each time).
type ForkOptions struct {
	Thread string `json:"thread,omitempty"`
	Agent  string `json:"agent,omitempty"`
	Model  string `json:"model,omitempty"`
	Text   string `json:"text,omitempty"`
}

// Forked is the answer of a Fork: the new thread and, when a text was
// given, the ID of its first message.
type Forked struct {
	Thread  string `json:"thread"`
	Message string `json:"message,omitempty"`
}

// Fork creates a new root thread whose history is thread's items [0, at)
// (positions as Thread numbers Items), shared with thread rather than
// copied, and that goes on as opts says. A position outside the history is
// a 400 *APIError, one between a tool call and its result a 409.
func (c *Client) Fork(ctx context.Context, thread string, at int, opts ForkOptions) (Forked, error) {
	body := struct {
		At int `json:"at"`
		ForkOptions
	}{at, opts}
	var f Forked
	err := c.call(ctx, http.MethodPost, "/threads/"+url.PathEscape(thread)+"/fork", nil, body, &f)
	return f, err
}

// AgentVersion is one kept version of an agent's definition.
type AgentVersion struct {
	Hash    string    `json:"hash"`
	Stored  time.Time `json:"stored"`
	Current bool      `json:"current,omitempty"`
	Model   string    `json:"model,omitempty"`
	Tools   []string  `json:"tools,omitempty"`
	// Threads counts the threads whose latest completion ran it, Pinned
	// those of them pinned to it.
	Threads int `json:"threads"`
	Pinned  int `json:"pinned"`
}

// AgentVersions is the answer of GET /agents/{name}/versions.
type AgentVersions struct {
	Agent    string         `json:"agent"`
	Current  string         `json:"current,omitempty"`
	Versions []AgentVersion `json:"versions"`
}

// AgentVersions lists the kept versions of an agent, oldest first.
func (c *Client) AgentVersions(ctx context.Context, agent string) (*AgentVersions, error) {
	var v AgentVersions
	if err := c.getJSON(ctx, "/agents/"+url.PathEscape(agent)+"/versions", nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// UpgradeAgent makes a pinned thread run a kept version of its agent from
// its next completion (recorded in its history).
func (c *Client) UpgradeAgent(ctx context.Context, thread, version string) error {
	return c.call(ctx, http.MethodPost, "/threads/"+url.PathEscape(thread)+"/agent", nil, map[string]string{"version": version}, nil)
}
