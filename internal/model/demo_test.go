package model

import (
	"context"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

func demoText(t *testing.T, m *Sim, h ...runtime.Item) (string, int) {
	t.Helper()
	var r rec
	chunks := 0
	w := &countingWriter{rec: &r, n: &chunks}
	if err := m.Complete(context.Background(), &runtime.CompletionRequest{History: h}, w); err != nil {
		t.Fatal(err)
	}
	return r.text.String(), chunks
}

type countingWriter struct {
	*rec
	n *int
}

func (w *countingWriter) Text(s string) { *w.n++; w.rec.Text(s) }

// The first run's default model must read like an answer: about the
// question, several different sentences, never one sentence repeated.
func TestDemoReplyReadsLikeAnAnswer(t *testing.T) {
	t.Parallel()
	m, err := FromConfig(context.Background(), Config{Provider: ProviderSim, ModelID: "sim", ContextWindow: 1000, MaxOutputTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	sim := m.(*Sim)
	user := func(s string) runtime.Item { return runtime.Item{Kind: runtime.ItemUser, Text: s} }

	slices, chunks := demoText(t, sim, user("Tell me about slices"))
	if !strings.Contains(slices, "slice") || !strings.Contains(slices, "Tell me about slices") {
		t.Errorf("reply does not answer the question: %q", slices)
	}
	if chunks < 2 {
		t.Errorf("reply streamed in %d chunk(s), want several", chunks)
	}
	sentences := strings.Split(strings.TrimSpace(slices), ". ")
	if len(sentences) < 3 {
		t.Errorf("reply has %d sentences, want at least 3: %q", len(sentences), slices)
	}
	seen := map[string]bool{}
	for _, s := range sentences {
		if seen[s] {
			t.Errorf("sentence repeated: %q in %q", s, slices)
		}
		seen[s] = true
	}
	if again, _ := demoText(t, sim, user("Tell me about slices")); again != slices {
		t.Errorf("same history, different reply (a retried slice must stream the same turn):\n%q\n%q", slices, again)
	}
	if other, _ := demoText(t, sim, user("How do tools work?")); other == slices || !strings.Contains(other, "oolset") && !strings.Contains(other, "Tools") {
		t.Errorf("a question about tools got %q", other)
	}
	// After a tool result it says what the tool answered.
	after, _ := demoText(t, sim, user("What time is it?"), runtime.Item{Kind: runtime.ItemToolCall},
		runtime.Item{Kind: runtime.ItemToolResult, Text: "2026-12-01T10:00:00Z\nmore"})
	if !strings.Contains(after, "2026-12-01T10:00:00Z") || strings.Contains(after, "more") {
		t.Errorf("after a tool result: %q", after)
	}
}

func TestSplitWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s string
		n int
	}{{"a b c d e f", 3}, {"one", 4}, {"", 2}, {"averyveryverylongword and more", 5}, {"x y", 1}} {
		p := splitWords(tc.s, tc.n)
		if strings.Join(p, "") != tc.s || len(p) > max(tc.n, 1) {
			t.Errorf("splitWords(%q, %d) = %q", tc.s, tc.n, p)
		}
	}
}
