package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The event streams are described as text/event-stream strings: the
// validator takes their body as text (the events' data are checked
// against the StreamEvent schema one by one, openAPICheck.stream).
// The console's page and files are text, too.
func init() {
	for _, ct := range []string{"text/event-stream", "text/html", "text/javascript", "text/css"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
}

// openAPIFile is the OpenAPI description of the API, from this package;
// apiDocFile the reference page whose table of operations is generated
// from it (TestOpenAPIReference).
const (
	openAPIFile = "../../docs/openapi.yaml"
	apiDocFile  = "../../docs/api.md"
)

var updateAPIDoc = flag.Bool("update-api-doc", false, "rewrite the generated table of docs/api.md from docs/openapi.yaml")

// loadOpenAPI loads and validates docs/openapi.yaml.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(openAPIFile)
	if err != nil {
		t.Fatalf("loading %s: %v", openAPIFile, err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("%s is OpenAPI %s, want 3.1", openAPIFile, doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s is not a valid OpenAPI document: %v", openAPIFile, err)
	}
	return doc
}

// TestOpenAPIDocument: docs/openapi.yaml is a valid OpenAPI 3.1 document.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	loadOpenAPI(t)
}

// segmentsMatch reports whether a mux pattern's segments and a described
// path's agree: literals equal, or either side a {parameter}. A subtree
// pattern (ending in "/") matches described paths below it.
func segmentsMatch(pattern, path string) bool {
	subtree := strings.HasSuffix(pattern, "/") && pattern != "/"
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	ds := strings.Split(strings.Trim(path, "/"), "/")
	if pattern == "/{$}" {
		return path == "/"
	}
	if subtree {
		if len(ds) <= len(ps) {
			return false
		}
		ds = ds[:len(ps)]
	} else if len(ds) != len(ps) {
		return false
	}
	param := func(s string) bool { return strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") }
	for i := range ps {
		if ps[i] != ds[i] && !param(ps[i]) && !param(ds[i]) {
			return false
		}
	}
	return true
}

// TestOpenAPIRoutes: every route the router serves is described, with
// every method it answers, and every described path and method is served.
// The routes are the mux's own (apiRoutes), on a server with every kind of
// route: the example tools and an MCP proxy.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	srv := startServer(t, Config{Store: StoreMemory, ExampleTools: &ExampleTools{GetTime: true},
		MCPServers: []MCPServer{{Name: "gone", Command: []string{t.TempDir() + "/no-such-mcp-server"}}}})
	routes := srv.apiRoutes()
	described := doc.Paths.Map()
	for _, rt := range routes {
		var paths []string
		for p := range described {
			if segmentsMatch(rt.pattern, p) {
				paths = append(paths, p)
			}
		}
		if len(paths) == 0 {
			t.Errorf("route %s is served but not described in %s", rt.pattern, openAPIFile)
			continue
		}
		ms, ok := rt.handler.(methods)
		if !ok {
			continue // it routes by method itself (the callback receiver, a tool server)
		}
		for m := range ms {
			for _, p := range paths {
				if described[p].GetOperation(m) == nil {
					t.Errorf("route %s serves %s, but %s %s is not described", rt.pattern, m, m, p)
				}
			}
		}
	}
	for p, item := range described {
		i := slices.IndexFunc(routes, func(rt route) bool { return segmentsMatch(rt.pattern, p) })
		if i < 0 {
			t.Errorf("%s describes %s, which no route serves", openAPIFile, p)
			continue
		}
		ms, ok := routes[i].handler.(methods)
		if !ok {
			continue
		}
		for m := range item.Operations() {
			if ms[m] == nil {
				t.Errorf("%s describes %s %s, but route %s answers it with 405", openAPIFile, m, p, routes[i].pattern)
			}
		}
	}
}

// openAPICheck sends requests to a server and validates each answer
// (status, content type, body) against the OpenAPI document.
type openAPICheck struct {
	t      *testing.T
	srv    *Server
	doc    *openapi3.T
	router routers.Router
	token  string // sent as the bearer token, when set
}

// sharedOpenAPI is the document, loaded once, and a router of its paths
// on any host (the test servers listen on ports of their own).
var sharedOpenAPI = sync.OnceValues(func() (*openAPIRouter, error) {
	doc, err := openapi3.NewLoader().LoadFromFile(openAPIFile)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &openAPIRouter{doc: doc, router: router}, nil
})

type openAPIRouter struct {
	doc    *openapi3.T
	router routers.Router
}

func newOpenAPICheck(t *testing.T, srv *Server) *openAPICheck {
	t.Helper()
	shared, err := sharedOpenAPI()
	if err != nil {
		t.Fatalf("%s: %v", openAPIFile, err)
	}
	return &openAPICheck{t: t, srv: srv, doc: shared.doc, router: shared.router}
}

// checkEventData validates one Server-Sent Event's data against the
// StreamEvent schema, or the Error schema for the "dropped" event that
// ends a stream that fell behind (openStreamWith, in helpers_test.go,
// calls it for every event the package's tests read).
func checkEventData(event string, data []byte) error {
	shared, err := sharedOpenAPI()
	if err != nil {
		return fmt.Errorf("%s: %w", openAPIFile, err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	schema := "StreamEvent"
	if event == "dropped" {
		schema = "Error"
	}
	if err := shared.doc.Components.Schemas[schema].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("event %s data %s is not a %s as %s describes it: %w", event, data, schema, openAPIFile, err)
	}
	return nil
}

// checkAnswer validates an answer of a test server against the document
// (do, in helpers_test.go, calls it for every request the package's tests
// send): a described route's as ValidateResponse does, and the JSON 404
// or 405 of a path or method the API does not serve as an Error.
func checkAnswer(t *testing.T, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	shared, err := sharedOpenAPI()
	if err != nil {
		t.Fatalf("%s: %v", openAPIFile, err)
	}
	c := &openAPICheck{t: t, doc: shared.doc, router: shared.router}
	_, _, err = c.router.FindRoute(req)
	if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
		var v any
		jerr := json.Unmarshal(body, &v)
		if jerr == nil {
			jerr = shared.doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
		}
		if (resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed) ||
			resp.Header.Get("Content-Type") != "application/json" || jerr != nil {
			t.Errorf("%s %s is not described in %s, and its answer %d %s %s is not the JSON 404 or 405 (%v)",
				req.Method, req.URL.Path, openAPIFile, resp.StatusCode, resp.Header.Get("Content-Type"), body, jerr)
		}
		return
	}
	if err := c.validate(req, resp, body); err != nil {
		t.Errorf("%s %s answered %d %s, which %s does not describe: %v", req.Method, req.URL, resp.StatusCode, body, openAPIFile, err)
	}
}

// do sends the request, checks the status it answered is want and that
// the answer is as described, and returns its body.
func (c *openAPICheck) do(method, path, body string, want int) []byte {
	t := c.t
	t.Helper()
	req, err := http.NewRequest(method, c.srv.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if want < 300 { // what the server accepts, the document must accept too
		if err := c.validateRequest(req, body); err != nil {
			t.Errorf("%s %s %s is accepted, but %s does not describe it: %v", method, path, body, openAPIFile, err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: got %d %s, want %d", method, path, resp.StatusCode, got, want)
	}
	if err := c.validate(req, resp, got); err != nil {
		t.Errorf("%s %s answered %d %s, which %s does not describe: %v", method, path, resp.StatusCode, got, openAPIFile, err)
	}
	return got
}

// stream opens an event stream, reads it until it has sent an event of
// every kind in until, then validates the answer (status, content type)
// and each event's data against the StreamEvent schema. It returns the
// kinds in the order they came.
func (c *openAPICheck) stream(path string, send func(), until ...string) []string {
	t := c.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.srv.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if send != nil {
		send()
	}
	var raw bytes.Buffer
	var kinds []string
	missing := slices.Clone(until)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	kind := ""
	for len(missing) > 0 && sc.Scan() {
		line := sc.Text()
		raw.WriteString(line + "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			kind = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			if err := checkEventData(kind, []byte(line[len("data: "):])); err != nil {
				t.Errorf("%s: event %s: %v", path, kind, err)
			}
			kinds = append(kinds, kind)
			missing = slices.DeleteFunc(missing, func(k string) bool { return k == kind })
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s: the stream ended (%v) without the events %v; it sent %v", path, sc.Err(), missing, kinds)
	}
	if err := c.validate(req, resp, raw.Bytes()); err != nil {
		t.Errorf("GET %s answered %d %s, which %s does not describe: %v", path, resp.StatusCode, resp.Header.Get("Content-Type"), openAPIFile, err)
	}
	return kinds
}

// validateRequest checks a request (its parameters and body) against the
// document.
func (c *openAPICheck) validateRequest(req *http.Request, body string) error {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return err
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	err = openapi3filter.ValidateRequest(context.Background(), in)
	req.Body = http.NoBody // the validator read it: put it back as it was
	if body != "" {
		req.Body = io.NopCloser(strings.NewReader(body))
	}
	return err
}

// validate checks one answer against the document.
func (c *openAPICheck) validate(req *http.Request, resp *http.Response, body []byte) error {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return err
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(context.Background(), in)
}

// TestOpenAPIResponses: the answers of a real server, with a scripted
// model and agents, to a representative set of requests (and errors) are
// as docs/openapi.yaml describes them.
func TestOpenAPIResponses(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Script: testdata(t, "hello_script.json"),
		Agents: []AgentConfig{
			{Agent: runtime.Agent{Name: "reviewer", Instructions: "You review code.", Priority: "background"}},
			{Agent: runtime.Agent{Name: "writer", Instructions: "You write release notes.", Tools: []string{"threads"}}},
		},
		DefaultAgent: "reviewer"})
	c := newOpenAPICheck(t, srv)

	c.do("POST", "/threads/oa-1/messages", `{"text":"hello","id":"m1","user_id":"u1"}`, http.StatusAccepted)
	waitIdle(t, srv)
	c.do("POST", "/threads/oa-2/messages", `{"text":"release notes please","agent":"writer"}`, http.StatusAccepted)
	waitIdle(t, srv)

	var th threadResponse
	if err := json.Unmarshal(c.do("GET", "/threads/oa-1", "", http.StatusOK), &th); err != nil || len(th.Items) < 2 {
		t.Fatalf("thread %+v (%v), want its history", th, err)
	}
	c.do("GET", "/threads/oa-1?from=1", "", http.StatusOK)
	c.stream("/threads/oa-1/events", nil, "message", "turn")
	c.stream("/events", func() {
		c.do("POST", "/threads/oa-3/messages", `{"text":"streamed"}`, http.StatusAccepted)
	}, "message", "turn", "state", "reply")
	waitIdle(t, srv)
	c.do("GET", "/threads/oa-1/views", "", http.StatusOK)
	c.do("GET", "/threads/oa-1/timeline", "", http.StatusOK)
	c.do("GET", "/stats", "", http.StatusOK)
	c.do("GET", "/stats?by=tool", "", http.StatusOK)

	// Two pages of one tree each, through the cursor.
	var page treeResponse
	if err := json.Unmarshal(c.do("GET", "/threads?limit=1", "", http.StatusOK), &page); err != nil || page.NextCursor == "" {
		t.Fatalf("first page %+v (%v), want a next_cursor", page, err)
	}
	c.do("GET", "/threads?limit=1&cursor="+url.QueryEscape(page.NextCursor), "", http.StatusOK)
	c.do("GET", "/threads?status=idle&agent=writer&q=notes", "", http.StatusOK)

	// A message the engine refuses (it names another agent than the
	// thread's) becomes a dead letter, listed and shown on its thread.
	bad := runtime.Message{V: runtime.MessageVersion, ID: "m-other", ThreadID: "oa-1", Kind: runtime.KindUser, Text: "x", Agent: "writer"}
	if err := srv.System().Send(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, srv)
	var dl deadLettersResponse
	if err := json.Unmarshal(c.do("GET", "/dead_letters", "", http.StatusOK), &dl); err != nil || len(dl.DeadLetters) != 1 {
		t.Fatalf("dead letters %+v (%v), want the refused message", dl, err)
	}
	c.do("GET", "/threads/oa-1", "", http.StatusOK)
	c.do("POST", "/dead_letters/m-other/redrive", "", http.StatusAccepted)
	waitIdle(t, srv) // refused again: open
	c.do("DELETE", "/dead_letters/m-other?thread=oa-1", "", http.StatusNoContent)
	c.do("POST", "/dead_letters/m-other/redrive", "", http.StatusNotFound)
	// A thread whose only message was refused shows its dead letters.
	lost := runtime.Message{V: runtime.MessageVersion, ID: "m-lost", ThreadID: "oa-lost", Kind: runtime.KindUser, Text: "x", Agent: "nobody"}
	if err := srv.System().Send(context.Background(), lost); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, srv)
	if err := json.Unmarshal(c.do("GET", "/threads/oa-lost", "", http.StatusOK), &th); err != nil || th.Status != "dead_letter" {
		t.Fatalf("thread %+v (%v), want status dead_letter", th, err)
	}

	c.do("GET", "/healthz", "", http.StatusOK)
	c.do("GET", "/readyz", "", http.StatusOK)
	c.do("GET", "/agents", "", http.StatusOK)
	c.do("GET", "/models", "", http.StatusOK)
	c.do("POST", "/markdown", `{"texts":["**hi**","- [x] done"]}`, http.StatusOK)
	c.do("POST", "/threads/oa-1/agent", `{"agent":"writer"}`, http.StatusAccepted)
	waitIdle(t, srv)
	c.do("POST", "/threads/oa-1/model", `{"model":""}`, http.StatusAccepted)
	waitIdle(t, srv)
	c.do("POST", "/threads/oa-2/stop", "", http.StatusAccepted)
	waitIdle(t, srv)
	c.do("POST", "/threads/oa-2/close", `{"reason":"done"}`, http.StatusAccepted)
	waitIdle(t, srv)

	// Errors: the JSON error shape, with the field where there is one.
	c.do("GET", "/threads/nobody", "", http.StatusNotFound)
	c.do("GET", "/threads?limit=0", "", http.StatusBadRequest)
	c.do("GET", "/threads/nobody/timeline", "", http.StatusNotFound)
	c.do("GET", "/stats?by=model", "", http.StatusBadRequest)
	c.do("GET", "/threads/oa-1?from=-1", "", http.StatusBadRequest)
	c.do("POST", "/threads/oa-1/messages", `{"text":""}`, http.StatusBadRequest)
	c.do("POST", "/threads/oa-1/messages", `{"text":"other text","id":"m1"}`, http.StatusConflict)
	c.do("POST", "/threads/oa-2/messages", `{"text":"closed?"}`, http.StatusConflict)
	c.do("POST", "/threads/oa-1/model", `{"model":"nope"}`, http.StatusBadRequest)
	c.do("POST", "/threads/oa-1/choices/call-1", `{"selected":0}`, http.StatusNotFound)
	c.do("POST", "/markdown", `{"texts":`+`["`+strings.Repeat(`a","`, maxMarkdownTexts)+`a"]}`, http.StatusBadRequest)
	c.do("POST", CallbackPath, `{"type":"tool_result"}`, http.StatusForbidden)
	c.do("GET", "/", "", http.StatusOK)
	c.do("GET", "/console/console.js", "", http.StatusOK)
}

// TestOpenAPIResponsesDegraded: the answers of a server with a token, a
// small body limit and a tool server that is down (401, 413, a degraded
// /healthz, a 503 /readyz) are as docs/openapi.yaml describes them.
func TestOpenAPIResponsesDegraded(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	srv := startServer(t, Config{Store: StoreMemory, AuthToken: "s3cret", ToolServers: []string{down},
		Limits: Limits{MaxBodyBytes: 64}, ExampleTools: &ExampleTools{GetTime: true}})
	c := newOpenAPICheck(t, srv)
	c.do("GET", "/threads", "", http.StatusUnauthorized)
	c.token = "s3cret"
	c.do("GET", "/threads", "", http.StatusOK)
	c.do("POST", "/threads/oa-big/messages", `{"text":"`+strings.Repeat("a", 100)+`"}`, http.StatusRequestEntityTooLarge)
	c.do("POST", "/threads/oa-big/stop", "", http.StatusNotFound)
	c.do("GET", "/readyz", "", http.StatusServiceUnavailable)
	c.do("GET", "/tools/examples"+rap.ToolsetPath, "", http.StatusOK)
	c.do("POST", "/tools/examples"+rap.InvokePath, `{}`, http.StatusBadRequest)
	var h struct{ Status string }
	if err := json.Unmarshal(c.do("GET", "/healthz", "", http.StatusOK), &h); err != nil || h.Status != "degraded" {
		t.Fatalf("healthz %+v (%v), want degraded", h, err)
	}
}

// TestOpenAPIResponsesDrift: an answer that drifts from the document (a
// renamed field, a missing one, an undescribed status) fails validation,
// so TestOpenAPIResponses cannot pass by describing nothing.
func TestOpenAPIResponsesDrift(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Store: StoreMemory})
	c := newOpenAPICheck(t, srv)
	req, err := http.NewRequest("GET", srv.URL()+"/threads?limit=2", nil)
	if err != nil {
		t.Fatal(err)
	}
	json := http.Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name   string
		status int
		header http.Header
		body   string
	}{
		{"renamed field", 200, json, `{"threads":[],"count":0,"totals":0}`},
		{"missing field", 200, json, `{"threads":[],"count":0}`},
		{"wrong type", 200, json, `{"threads":[],"count":"0","total":0}`},
		{"undescribed status", 418, json, `{"error":"teapot"}`},
		{"error without its text", 400, json, `{"field":"limit"}`},
		{"not JSON", 200, http.Header{"Content-Type": {"text/plain"}}, `threads`},
	}
	if err := c.validate(req, &http.Response{StatusCode: 200, Header: json}, []byte(`{"threads":[],"count":0,"total":0}`)); err != nil {
		t.Fatalf("the right answer does not validate: %v", err)
	}
	for _, tc := range cases {
		if err := c.validate(req, &http.Response{StatusCode: tc.status, Header: tc.header}, bytes.Clone([]byte(tc.body))); err == nil {
			t.Errorf("%s: %d %s validated", tc.name, tc.status, tc.body)
		}
	}
	// And requests: the document's request bodies are as strict as the server.
	for body, valid := range map[string]bool{`{"text":"hi","id":"m1"}`: true, `{"txt":"hi"}`: false, `{"text":5}`: false} {
		req, err := http.NewRequest("POST", srv.URL()+"/threads/t1/messages", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if err := c.validateRequest(req, body); (err == nil) != valid {
			t.Errorf("request %s: validation says %v, want valid %v", body, err, valid)
		}
	}
}

// The generated part of docs/api.md lies between these lines.
const (
	apiDocBegin = "<!-- operations: generated from openapi.yaml by TestOpenAPIReference (go test ./internal/server -run TestOpenAPIReference -update-api-doc) -->"
	apiDocEnd   = "<!-- end of operations -->"
)

// operationsTable is the reference table of every operation the document
// describes, by path, then method.
func operationsTable(doc *openapi3.T) string {
	var b strings.Builder
	b.WriteString("| method | path | what it does | answers |\n|---|---|---|---|\n")
	paths := doc.Paths.InMatchingOrder()
	slices.Sort(paths)
	for _, p := range paths {
		item := doc.Paths.Value(p)
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			op := item.GetOperation(m)
			if op == nil {
				continue
			}
			codes := slices.Sorted(func(yield func(string) bool) {
				for c := range op.Responses.Map() {
					if !yield(c) {
						return
					}
				}
			})
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", m, p, op.Summary, strings.Join(codes, ", "))
		}
	}
	return b.String()
}

// TestOpenAPIReference: docs/api.md's table of operations is the one
// docs/openapi.yaml gives (-update-api-doc rewrites it).
func TestOpenAPIReference(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	page, err := os.ReadFile(apiDocFile)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(page), apiDocBegin+"\n")
	_, after, ok2 := strings.Cut(rest, apiDocEnd)
	if !ok || !ok2 {
		t.Fatalf("%s has no generated part (a line %q, the table, a line %q)", apiDocFile, apiDocBegin, apiDocEnd)
	}
	want := operationsTable(doc)
	if rest[:len(rest)-len(after)-len(apiDocEnd)] == want {
		return
	}
	if *updateAPIDoc {
		if err := os.WriteFile(apiDocFile, []byte(before+apiDocBegin+"\n"+want+apiDocEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table of operations is not %s's (run go test ./internal/server -run TestOpenAPIReference -update-api-doc); want:\n%s", apiDocFile, openAPIFile, want)
}
