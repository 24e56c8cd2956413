package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// TestMarkdownRendered: POST /markdown renders CommonMark with GitHub's
// extensions and strips everything that could run in the console.
func TestMarkdownRendered(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{})
	cases := []struct {
		name, text string
		want, not  []string
	}{
		{"emphasis and code", "**bold** and `x < y`", []string{"<strong>bold</strong>", "<code>x &lt; y</code>"}, nil},
		{"line breaks kept", "one\ntwo", []string{"one<br", "two"}, nil},
		{"list", "- a\n- b", []string{"<ul>", "<li>a</li>", "<li>b</li>"}, nil},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |", []string{"<table>", "<td>1</td>"}, nil},
		{"task list", "- [x] done", []string{`type="checkbox"`, "checked", "disabled"}, nil},
		{"fenced code", "```go\nfmt.Println(1)\n```", []string{`<pre><code class="language-go">`}, nil},
		{"bad class", "```go\\\" onclick=x\nx\n```", nil, []string{"onclick"}},
		{"link", "[docs](https://example.com/a)", []string{`href="https://example.com/a"`, "nofollow", "noopener", `target="_blank"`}, nil},
		{"raw script", "hi <script>alert(1)</script>", []string{"hi"}, []string{"<script"}},
		{"event handler", `<img src="x" onerror="alert(1)">`, nil, []string{"onerror", "<img"}},
		{"javascript URL", "[x](javascript:alert(1))", nil, []string{"javascript:"}},
		{"autolinked javascript", "<javascript:alert(1)>", nil, []string{"href=\"javascript"}},
		{"style", `<p style="position:fixed">x</p>`, nil, []string{"style="}},
	}
	texts := make([]string, len(cases))
	for i, c := range cases {
		texts[i] = c.text
	}
	body, _ := json.Marshal(markdownRequest{Texts: texts})
	var resp markdownResponse
	if code := do(t, http.MethodPost, srv.URL()+"/markdown", string(body), &resp); code != http.StatusOK || len(resp.HTML) != len(cases) {
		t.Fatalf("POST /markdown: %d, %d answers for %d texts", code, len(resp.HTML), len(cases))
	}
	for i, c := range cases {
		h := resp.HTML[i]
		for _, w := range c.want {
			if !strings.Contains(h, w) {
				t.Errorf("%s: %q renders as %q, missing %q", c.name, c.text, h, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(h, n) {
				t.Errorf("%s: %q renders as %q, which holds %q", c.name, c.text, h, n)
			}
		}
	}

	many, _ := json.Marshal(markdownRequest{Texts: make([]string, maxMarkdownTexts+1)})
	for _, c := range []struct {
		method, body, field string
		code                int
	}{
		{http.MethodPost, `{}`, "texts", http.StatusBadRequest},
		{http.MethodPost, `{"texts": "x"}`, "texts", http.StatusBadRequest},
		{http.MethodPost, `{"texts": [], "html": true}`, "html", http.StatusBadRequest},
		{http.MethodPost, string(many), "texts", http.StatusBadRequest},
		{http.MethodGet, "", "", http.StatusMethodNotAllowed},
	} {
		var e apiError
		if code := do(t, c.method, srv.URL()+"/markdown", c.body, &e); code != c.code || e.Field != c.field || e.Error == "" {
			t.Errorf("%s /markdown %.40s: %d %+v, want %d naming %q", c.method, c.body, code, e, c.code, c.field)
		}
	}
}

// TestMarkdownNeedsToken: rendering is part of the API, not of the
// console's open static files.
func TestMarkdownNeedsToken(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{AuthToken: "s3cret"})
	for _, path := range []string{"/markdown", "/agents", "/models"} {
		method := http.MethodGet
		if path == "/markdown" {
			method = http.MethodPost
		}
		var e apiError
		if code := do(t, method, srv.URL()+path, `{"texts":["x"]}`, &e); code != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d %+v", method, path, code, e)
		}
	}
}

// TestAgentsAndModelsListed: GET /agents and /models list what the
// console's pickers offer, and nothing of the definitions' secrets.
func TestAgentsAndModelsListed(t *testing.T) {
	t.Parallel()
	bare := startServer(t, Config{})
	var agents agentsResponse
	if code := do(t, http.MethodGet, bare.URL()+"/agents", "", &agents); code != http.StatusOK || agents.Agents == nil || len(agents.Agents) != 0 || agents.Default != "" {
		t.Fatalf("GET /agents without agents: %d %+v", code, agents)
	}
	var models modelsResponse
	if code := do(t, http.MethodGet, bare.URL()+"/models", "", &models); code != http.StatusOK || len(models.Models) != 1 || models.Models[0].Name != models.Default || models.Default == "" {
		t.Fatalf("GET /models without a catalog: %d %+v", code, models)
	}

	cat := &model.Catalog{Default: "a", Models: []model.Config{
		{Name: "a", Provider: model.ProviderSim, ModelID: "a", ContextWindow: 1000, MaxOutputTokens: 100},
		{Name: "b", Provider: model.ProviderSim, ModelID: "b", ContextWindow: 1000, MaxOutputTokens: 100}}}
	srv := startServer(t, Config{Models: cat, DefaultAgent: "writer", Agents: []AgentConfig{
		{Agent: runtime.Agent{Name: "writer", Instructions: "SECRET instructions.", Model: "b", Tools: []string{"threads"}, Priority: "background"}},
		{Agent: runtime.Agent{Name: "helper", Instructions: "Help."}},
	}})
	raw := map[string]any{}
	if code := do(t, http.MethodGet, srv.URL()+"/agents", "", &raw); code != http.StatusOK {
		t.Fatalf("GET /agents: %d", code)
	}
	if b, _ := json.Marshal(raw); strings.Contains(string(b), "SECRET") {
		t.Fatalf("GET /agents shows the instructions: %s", b)
	}
	agents = agentsResponse{}
	do(t, http.MethodGet, srv.URL()+"/agents", "", &agents)
	if agents.Default != "writer" || len(agents.Agents) != 2 || agents.Agents[0].Name != "helper" || agents.Agents[1].Name != "writer" ||
		agents.Agents[1].Model != "b" || strings.Join(agents.Agents[1].Tools, ",") != "threads" || agents.Agents[1].Priority != "background" {
		t.Fatalf("GET /agents: %+v", agents)
	}
	models = modelsResponse{}
	if code := do(t, http.MethodGet, srv.URL()+"/models", "", &models); code != http.StatusOK || models.Default != "a" ||
		len(models.Models) != 2 || models.Models[1] != (modelInfo{Name: "b", Provider: string(model.ProviderSim)}) {
		t.Fatalf("GET /models: %d %+v", code, models)
	}
	var e apiError
	if code := do(t, http.MethodPost, srv.URL()+"/agents", "{}", &e); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /agents: %d %+v", code, e)
	}
}
