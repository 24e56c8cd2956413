package server

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"sync"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

// The console renders the model's markdown through the server:
//
//	POST /markdown  {"texts": ["**hi**", ...]} → 200 {"html": ["<p><strong>hi</strong></p>\n", ...]}
//
// in one request for many texts (a replayed history). The HTML is
// goldmark's (CommonMark with GitHub's tables, strikethrough, autolinks
// and task lists; a line break is a line break, as in a chat; raw HTML
// in the text is not passed through) cleaned by
// bluemonday's user-content policy, so nothing a model or a tool writes
// can run in the console: no script, no event handler, no javascript:
// URL, no style. Rendering is a pure function of the text; it reads no
// thread, and it needs the token like the rest of the API.

// maxMarkdownTexts bounds the texts of one POST /markdown (the body is
// bounded by limits.max_body_bytes too).
const maxMarkdownTexts = 512

// markdownRequest is the body of POST /markdown.
type markdownRequest struct {
	Texts []string `json:"texts"`
}

type markdownResponse struct {
	HTML []string `json:"html"`
}

// markdown renders markdown to sanitized HTML. Safe for concurrent use.
type markdown struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

// consoleMarkdown is the server's renderer, built on first use.
var consoleMarkdown = sync.OnceValue(newMarkdown)

func newMarkdown() *markdown {
	p := bluemonday.UGCPolicy()
	p.RequireNoFollowOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true) // with rel="noopener"
	// GitHub task lists: goldmark renders them as disabled checkboxes.
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").OnElements("input")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[\w+#.-]{1,32}$`)).OnElements("code") // fenced code's language
	return &markdown{md: goldmark.New(goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(html.WithHardWraps())), policy: p}
}

// render returns the sanitized HTML of one text.
func (m *markdown) render(text string) (string, error) {
	var b bytes.Buffer
	if err := m.md.Convert([]byte(text), &b); err != nil {
		return "", err
	}
	return m.policy.Sanitize(b.String()), nil
}

func (s *Server) renderMarkdown(w http.ResponseWriter, r *http.Request) {
	var req markdownRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if req.Texts == nil {
		writeError(w, http.StatusBadRequest, "texts", "missing: the list of markdown texts to render")
		return
	}
	if len(req.Texts) > maxMarkdownTexts {
		writeError(w, http.StatusBadRequest, "texts", "%d texts in one request; at most %d", len(req.Texts), maxMarkdownTexts)
		return
	}
	out := markdownResponse{HTML: make([]string, len(req.Texts))}
	for i, t := range req.Texts {
		h, err := consoleMarkdown().render(t)
		if err != nil { // goldmark fails only when writing to the buffer fails
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("texts[%d]", i), "rendering: %v", err)
			return
		}
		out.HTML[i] = h
	}
	writeJSON(w, http.StatusOK, out)
}
