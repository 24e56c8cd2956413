// Package rapcheck is the conformance check behind `agentslice rap check`:
// it exercises a running RAP tool server against the specification's MUSTs
// (and a few SHOULDs, reported as warnings) and reports one row per check.
// It plays the runtime: it fetches and validates the toolset, sends
// invocations whose callback URLs it signs and serves itself (so a tool that
// alters the URL or posts a malformed body is caught), and asks
// /tool_call_status, /cancel_tool_call and /close_thread about calls it
// made up.
//
// It only invokes what is safe: an operation that does not exist, arguments
// the tool's own schema refuses, and "probes": tools annotated readOnly
// whose schema accepts {} (unless longRunning), plus the calls a user names
// (Config.Probes). It must not invoke any other tool.
package rapcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/agentslice/agentslice/rapkit"
)

// Config says which server to check and how.
type Config struct {
	// Base is the tool server's base URL (the toolset is at
	// Base+"/.well-known/rap-toolset").
	Base string
	// Probes are extra calls to make: tool name → JSON arguments. Each is
	// invoked once and must produce a result (and, for a subscription, a
	// final event).
	Probes map[string]json.RawMessage
	// Timeout bounds each wait for an answer or a callback. Default 10s.
	Timeout time.Duration
	// CallbackHost is the address the tool server reaches this checker's
	// callback receiver at. Default 127.0.0.1.
	CallbackHost string
	// Client makes the requests; default a client with Timeout.
	Client *http.Client
	// Wait is how long to keep asking for the toolset while the server
	// cannot be reached (it was just started). Zero: ask once.
	Wait time.Duration
}

// Status is a check's outcome.
type Status string

// The outcomes: a failed MUST is FAIL; a missed SHOULD is WARN.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Warn Status = "WARN"
	Skip Status = "SKIP"
)

// Result is one row of the report.
type Result struct {
	Check  string
	Status Status
	Detail string
}

// Report is every check's result, in the order they ran.
type Report struct {
	Server  string
	Results []Result
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool {
	for _, x := range r.Results {
		if x.Status == Fail {
			return true
		}
	}
	return false
}

// Print writes the report as a table, then a summary line.
func (r *Report) Print(w io.Writer) {
	width := 0
	for _, x := range r.Results {
		width = max(width, len(x.Check))
	}
	counts := map[Status]int{}
	fmt.Fprintf(w, "RAP conformance of %s\n", r.Server)
	for _, x := range r.Results {
		counts[x.Status]++
		fmt.Fprintf(w, "%-4s  %-*s  %s\n", x.Status, width, x.Check, x.Detail)
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d warnings, %d skipped\n", counts[Pass], counts[Fail], counts[Warn], counts[Skip])
}

type checker struct {
	cfg      Config
	rcv      *receiver
	report   *Report
	toolset  *rapkit.Toolset
	schemas  []*rapkit.Schema
	endpoint string
	seq      int
	echoes   []string // calls whose callbacks did not echo call_id
	unsigned []string // callbacks whose URL did not verify
	results  int      // tool_results received
}

// Run checks the server at cfg.Base. The error is for the checker's own
// trouble (it cannot listen for callbacks); the server's faults are rows of
// the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.CallbackHost == "" {
		cfg.CallbackHost = "127.0.0.1"
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	cfg.Base = strings.TrimRight(cfg.Base, "/")
	u, err := url.Parse(cfg.Base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: must be an absolute http(s) URL", cfg.Base)
	}
	rcv, err := startReceiver(cfg.CallbackHost)
	if err != nil {
		return nil, err
	}
	defer rcv.close()
	c := &checker{cfg: cfg, rcv: rcv, report: &Report{Server: cfg.Base}}
	if !c.discovery(ctx) {
		c.add("invocation", Skip, "no valid toolset, nothing to invoke")
		return c.report, nil
	}
	c.unknownOperation(ctx)
	c.badArguments(ctx)
	c.malformed(ctx)
	c.probes(ctx)
	c.status(ctx)
	c.notifications(ctx)
	c.summaries()
	return c.report, nil
}

func (c *checker) add(check string, s Status, format string, args ...any) {
	c.report.Results = append(c.report.Results, Result{Check: check, Status: s, Detail: fmt.Sprintf(format, args...)})
}

// discovery fetches and validates the toolset.
func (c *checker) discovery(ctx context.Context) bool {
	status, body, ctype, err := c.do(ctx, http.MethodGet, c.cfg.Base+rapkit.ToolsetPath, nil)
	for deadline := time.Now().Add(c.cfg.Wait); err != nil && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
		status, body, ctype, err = c.do(ctx, http.MethodGet, c.cfg.Base+rapkit.ToolsetPath, nil)
	}
	switch {
	case err != nil:
		c.add("discovery", Fail, "GET %s: %v", rapkit.ToolsetPath, err)
		return false
	case status != http.StatusOK:
		c.add("discovery", Fail, "GET %s answered HTTP %d, want 200: %s", rapkit.ToolsetPath, status, snippet(body))
		return false
	}
	ts, schemas, err := rapkit.DecodeToolset(body)
	if err != nil {
		c.add("discovery", Fail, "the toolset is invalid (a runtime rejects all of it): %v", err)
		return false
	}
	names := make([]string, 0, len(ts.Tools))
	for _, t := range ts.Tools {
		names = append(names, t.Name)
	}
	c.add("discovery", Pass, "toolset %q: %d tool(s), %s; every inputSchema compiles", ts.Name, len(ts.Tools), strings.Join(names, ", "))
	if !strings.HasPrefix(ctype, "application/json") {
		c.add("content_type", Warn, "the toolset's Content-Type is %q, want application/json", ctype)
	}
	bu, _ := url.Parse(c.cfg.Base + "/")
	ep, err := bu.Parse(ts.Endpoint)
	if err != nil {
		c.add("endpoint", Fail, "endpoint %q does not resolve against %s: %v", ts.Endpoint, c.cfg.Base, err)
		return false
	}
	c.toolset, c.schemas, c.endpoint = ts, schemas, ep.String()
	c.add("endpoint", Pass, "invocations go to %s", c.endpoint)
	return true
}

// call is one invocation the checker made.
type call struct {
	id, thread, callID string
	ch                 <-chan received
	status             int
	body               []byte
	err                error
}

// invoke sends one invocation with a fresh signed callback URL.
func (c *checker) invoke(ctx context.Context, operation string, args json.RawMessage, fail503 bool) *call {
	c.seq++
	cl := &call{id: fmt.Sprintf("rapcheck_call_%d", c.seq), thread: fmt.Sprintf("rapcheck_thread_%d", c.seq),
		callID: fmt.Sprintf("rapcheck_model_call_%d", c.seq)}
	cbURL, ch, err := c.rcv.expect(cl.thread, cl.id, fail503)
	if err != nil {
		cl.err = err
		return cl
	}
	cl.ch = ch
	body, _ := json.Marshal(rapkit.Invocation{Operation: operation, Arguments: args, ID: cl.id, CallID: &cl.callID,
		CallbackURL: cbURL, GroupID: cl.thread})
	cl.status, cl.body, _, cl.err = c.do(ctx, http.MethodPost, c.endpoint, body)
	return cl
}

// result waits for the call's tool_result and checks its shape; events and
// other callbacks before it are returned too.
func (c *checker) result(ctx context.Context, cl *call) (*rapkit.ToolResult, []received, error) {
	var before []received
	for {
		got, err := next(ctx, cl.ch, c.cfg.Timeout)
		if err != nil {
			return nil, before, fmt.Errorf("%w: %v", errNoResult, err)
		}
		if !got.verified {
			c.unsigned = append(c.unsigned, fmt.Sprintf("%s: %v", cl.id, got.err))
		}
		if got.err != nil {
			return nil, before, got.err
		}
		if got.cb.ToolResult == nil {
			before = append(before, got)
			continue
		}
		r := got.cb.ToolResult
		if r.GroupID != cl.thread || r.ID != cl.id {
			return r, before, fmt.Errorf("the result names group_id %q and id %q, want %q and %q", r.GroupID, r.ID, cl.thread, cl.id)
		}
		c.results++
		if r.CallID == nil || *r.CallID != cl.callID {
			c.echoes = append(c.echoes, cl.id)
		}
		return r, before, nil
	}
}

func resultText(r *rapkit.ToolResult) string {
	if r.Text != nil && len(r.Content) == 0 {
		return *r.Text
	}
	var b strings.Builder
	for _, it := range r.Content {
		b.WriteString(it.Text)
	}
	return b.String()
}

// unknownOperation: the tool MUST validate operation; it SHOULD answer 200
// and send the error as the result. Its callback's first POST is answered
// 503, to see the tool retry (a SHOULD).
func (c *checker) unknownOperation(ctx context.Context) {
	cl := c.invoke(ctx, "rapcheck_no_such_tool", json.RawMessage(`{}`), true)
	switch {
	case cl.err != nil:
		c.add("unknown_operation", Fail, "POST %s: %v", c.endpoint, cl.err)
		return
	case cl.status >= 400 && cl.status < 500:
		c.add("unknown_operation", Warn, "answered HTTP %d; the spec asks for 200 and the error as the call's result", cl.status)
		return
	case cl.status != http.StatusOK:
		c.add("unknown_operation", Fail, "answered HTTP %d to an invocation of an unknown operation: %s", cl.status, snippet(cl.body))
		return
	}
	r, _, err := c.result(ctx, cl)
	if err != nil {
		c.add("unknown_operation", Fail, "answered 200 but: %v (a tool MUST send a result for every invocation it accepts)", err)
		return
	}
	c.add("unknown_operation", Pass, "200, then an error result: %s", snippet([]byte(resultText(r))))
	c.checkRetried(ctx, cl)
}

// checkRetried waits for the result's second POST: its first was answered
// 503, so a tool that retries 5xx (a SHOULD) sends it again.
func (c *checker) checkRetried(ctx context.Context, cl *call) {
	if got, err := next(ctx, cl.ch, c.cfg.Timeout); err == nil && got.attempt >= 2 {
		c.add("callback_retry", Pass, "a callback answered 503 was sent again")
		return
	}
	c.add("callback_retry", Warn, "a callback answered 503 was not sent again within %s (tools SHOULD retry 5xx)", c.cfg.Timeout)
}

// badArguments sends, to the first tool whose schema refuses them,
// arguments that do not match: the tool MUST validate its input.
func (c *checker) badArguments(ctx context.Context) {
	for i, t := range c.toolset.Tools {
		args := refused(c.schemas[i], t.InputSchema)
		if args == nil {
			continue
		}
		cl := c.invoke(ctx, t.Name, args, false)
		switch {
		case cl.err != nil:
			c.add("invalid_arguments", Fail, "POST %s: %v", c.endpoint, cl.err)
		case cl.status >= 400 && cl.status < 500:
			c.add("invalid_arguments", Warn, "%s %s answered HTTP %d; the spec asks for 200 and the error as the result", t.Name, args, cl.status)
		case cl.status != http.StatusOK:
			c.add("invalid_arguments", Fail, "%s %s answered HTTP %d: %s", t.Name, args, cl.status, snippet(cl.body))
		default:
			r, _, err := c.result(ctx, cl)
			switch {
			case err != nil:
				c.add("invalid_arguments", Fail, "%s %s: answered 200 but %v", t.Name, args, err)
			case r.Subscription:
				c.add("invalid_arguments", Fail, "%s %s (refused by its own schema) started a subscription instead of failing", t.Name, args)
			default:
				c.add("invalid_arguments", Pass, "%s %s: error result %s", t.Name, args, snippet([]byte(resultText(r))))
			}
		}
		return
	}
	c.add("invalid_arguments", Skip, "no tool's schema refuses any argument object this checker tries")
}

// refused returns arguments the schema refuses, or nil.
func refused(s *rapkit.Schema, raw json.RawMessage) json.RawMessage {
	cands := []string{`{}`, `{"rapcheck_unexpected":true}`}
	var doc struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(raw, &doc)
	names := make([]string, 0, len(doc.Properties))
	for n := range doc.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		k, _ := json.Marshal(n)
		cands = append(cands, `{`+string(k)+`:{"rapcheck":"wrong type"}}`, `{`+string(k)+`:12345}`)
	}
	for _, a := range cands {
		if s.Validate([]byte(a)) != nil {
			return json.RawMessage(a)
		}
	}
	return nil
}

// malformed: a body that is not JSON, and one without the fields a result
// needs, carry no callback URL to send an error to. The spec asks for 200
// to any invocation (a SHOULD); a 4xx says the same more plainly. Either
// passes; a 5xx makes a runtime retry what can never succeed.
func (c *checker) malformed(ctx context.Context) {
	for _, b := range []struct{ check, body string }{
		{"malformed_invocation", `{"operation": "x",`},
		{"incomplete_invocation", `{"operation": "x", "arguments": {}}`},
	} {
		status, body, _, err := c.do(ctx, http.MethodPost, c.endpoint, []byte(b.body))
		switch {
		case err != nil:
			c.add(b.check, Fail, "POST %s: %v (it must answer, not hang or drop the connection)", b.body, err)
		case status < 500:
			c.add(b.check, Pass, "%s: HTTP %d", b.body, status)
		default:
			c.add(b.check, Warn, "%s answered HTTP %d: a runtime retries 5xx, and this body can never succeed (answer 200 or 4xx): %s", b.body, status, snippet(body))
		}
	}
}

// probes invokes the safe tools and the user's probes.
func (c *checker) probes(ctx context.Context) {
	type probe struct {
		name string
		args json.RawMessage
	}
	var list []probe
	known := map[string]bool{}
	for i, t := range c.toolset.Tools {
		known[t.Name] = true
		if _, user := c.cfg.Probes[t.Name]; user {
			continue
		}
		if a := t.Annotations; a != nil && a.ReadOnly && !a.LongRunning && c.schemas[i].Validate([]byte(`{}`)) == nil {
			list = append(list, probe{t.Name, json.RawMessage(`{}`)})
		}
	}
	names := make([]string, 0, len(c.cfg.Probes))
	for n := range c.cfg.Probes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !known[n] {
			c.add("probe "+n, Fail, "the toolset has no tool %q", n)
			continue
		}
		list = append(list, probe{n, c.cfg.Probes[n]})
	}
	if len(list) == 0 {
		c.add("probe", Skip, "no read-only tool takes {} and no -probe was given: no successful call was checked")
		return
	}
	for _, p := range list {
		c.probe(ctx, "probe "+p.name, p.name, p.args)
	}
}

func (c *checker) probe(ctx context.Context, check, name string, args json.RawMessage) {
	cl := c.invoke(ctx, name, args, false)
	switch {
	case cl.err != nil:
		c.add(check, Fail, "POST %s: %v", c.endpoint, cl.err)
		return
	case cl.status != http.StatusOK:
		c.add(check, Fail, "answered HTTP %d, want 200 at once: %s", cl.status, snippet(cl.body))
		return
	}
	r, before, err := c.result(ctx, cl)
	if err != nil {
		c.add(check, Fail, "answered 200 but: %v", err)
		return
	}
	if !r.Subscription {
		c.add(check, Pass, "200, then a result (%d callback(s) before it): %s", len(before), snippet([]byte(resultText(r))))
		return
	}
	events := 0
	for {
		got, err := next(ctx, cl.ch, c.cfg.Timeout)
		if err != nil {
			c.add(check, Warn, "a subscription: %d event(s), no final one yet: %v", events, err)
			return
		}
		if !got.verified {
			c.unsigned = append(c.unsigned, fmt.Sprintf("%s: %v", cl.id, got.err))
		}
		if got.err != nil {
			c.add(check, Fail, "a subscription event: %v", got.err)
			return
		}
		ev := got.cb.SubscriptionEvent
		if ev == nil {
			continue
		}
		if ev.ToolCallID != cl.id || ev.GroupID != cl.thread {
			c.add(check, Fail, "an event names tool_call_id %q and group_id %q, want %q and %q", ev.ToolCallID, ev.GroupID, cl.id, cl.thread)
			return
		}
		events++
		if ev.Final {
			c.add(check, Pass, "200, a subscription, %d event(s), the last final", events)
			return
		}
	}
}

// status: /tool_call_status MUST answer 200 {"alive": false} for a call the
// server does not know, and validate its IDs.
func (c *checker) status(ctx context.Context) {
	st, body, _, err := c.do(ctx, http.MethodPost, c.cfg.Base+rapkit.ToolCallStatusPath,
		[]byte(`{"thread_id":"rapcheck_thread_unknown","tool_call_id":"rapcheck_call_unknown"}`))
	var ans map[string]json.RawMessage
	switch {
	case err != nil:
		c.add("status_unknown_call", Fail, "POST %s: %v", rapkit.ToolCallStatusPath, err)
	case st != http.StatusOK:
		c.add("status_unknown_call", Fail, "%s answered HTTP %d for an unknown call, want 200 {\"alive\": false}: %s", rapkit.ToolCallStatusPath, st, snippet(body))
	case json.Unmarshal(body, &ans) != nil || string(ans["alive"]) != "false":
		c.add("status_unknown_call", Fail, "%s answered %s for an unknown call, want {\"alive\": false}", rapkit.ToolCallStatusPath, snippet(body))
	default:
		c.add("status_unknown_call", Pass, `{"alive": false}`)
	}
	st, body, _, err = c.do(ctx, http.MethodPost, c.cfg.Base+rapkit.ToolCallStatusPath, []byte(`{}`))
	switch {
	case err != nil:
		c.add("status_validates_ids", Fail, "POST %s: %v", rapkit.ToolCallStatusPath, err)
	case st >= 400 && st < 500:
		c.add("status_validates_ids", Pass, "{} (no IDs): HTTP %d", st)
	default:
		c.add("status_validates_ids", Warn, "{} (no IDs) answered HTTP %d; servers MUST validate the IDs: %s", st, snippet(body))
	}
}

// notifications: /cancel_tool_call and /close_thread MUST answer 200,
// whether or not the server knows the call or thread.
func (c *checker) notifications(ctx context.Context) {
	for _, n := range []struct{ check, path, body string }{
		{"cancel_unknown_call", rapkit.CancelToolCallPath, `{"thread_id":"rapcheck_thread_unknown","tool_call_id":"rapcheck_call_unknown"}`},
		{"close_thread", rapkit.CloseThreadPath, `{"thread_id":"rapcheck_thread_unknown"}`},
	} {
		st, body, _, err := c.do(ctx, http.MethodPost, c.cfg.Base+n.path, []byte(n.body))
		switch {
		case err != nil:
			c.add(n.check, Fail, "POST %s: %v", n.path, err)
		case st != http.StatusOK:
			c.add(n.check, Fail, "%s answered HTTP %d, want 200 (whether or not it knows the call): %s", n.path, st, snippet(body))
		default:
			c.add(n.check, Pass, "%s: 200", n.path)
		}
	}
}

// summaries adds the rows gathered across calls.
func (c *checker) summaries() {
	bad := append(c.unsigned, c.rcv.strays()...)
	switch {
	case len(bad) > 0:
		c.add("callback_signature", Fail, "%d callback(s) did not come to the signed callback URL as given (tools MUST post to it unchanged): %s", len(bad), bad[0])
	case c.results == 0:
		c.add("callback_signature", Fail, "no callback arrived at all")
	default:
		c.add("callback_signature", Pass, "every callback came to its signed URL unchanged")
	}
	switch {
	case len(c.echoes) > 0:
		c.add("call_id_echo", Fail, "%d result(s) did not echo the invocation's call_id (first: %s)", len(c.echoes), c.echoes[0])
	case c.results == 0:
		c.add("call_id_echo", Skip, "no result arrived")
	default:
		c.add("call_id_echo", Pass, "every result (%d) echoed call_id", c.results)
	}
}

func (c *checker) do(ctx context.Context, method, u string, body []byte) (status int, out []byte, ctype string, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	out, err = io.ReadAll(io.LimitReader(resp.Body, rapkit.MaxToolsetBytes+1))
	return resp.StatusCode, out, resp.Header.Get("Content-Type"), err
}

func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	if s == "" {
		return "(empty)"
	}
	return s
}
