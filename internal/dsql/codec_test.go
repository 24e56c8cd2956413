package dsql

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentslice/agentslice/internal/runtime"
)

func TestSplitChunks(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "héllo ✓ 🎉 wörld", strings.Repeat("🎉", 10), strings.Repeat("ab", 50)} {
		for _, n := range []int{4, 5, 7, 100} {
			parts := splitChunks(s, n)
			if strings.Join(parts, "") != s {
				t.Fatalf("split(%q, %d) = %q loses bytes", s, n, parts)
			}
			for _, p := range parts {
				if len(p) > n || !utf8.ValidString(p) || (len(parts) > 1 && p == "") {
					t.Fatalf("split(%q, %d): part %q is empty, too long or not UTF-8", s, n, p)
				}
			}
		}
	}
}

// TestItemEncodingGolden pins the stored form of items (format 1): the
// field names are runtime.Item's json tags, and HTML characters are not
// escaped.
func TestItemEncodingGolden(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/items_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden []json.RawMessage
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	want := []runtime.Item{
		{Kind: runtime.ItemUser, Input: "m1", Text: "<b>héllo</b> & ✓"},
		{Kind: runtime.ItemAssistant, Text: "ok", Reasoning: "r", Usage: &runtime.Usage{Input: 1, Output: 2, Total: 3}},
		{Kind: runtime.ItemToolCall, CallID: "c1", Name: "run_command", Args: `{"command":"ls"}`},
		{Kind: runtime.ItemToolResult, Input: "m2", CallID: "c1", Name: "run_command", IsError: true,
			Content: []runtime.Content{{Type: "image", Data: "aGk=", MediaType: "image/png"}}},
		{Kind: runtime.ItemMarker, At: runtime.StampOf(time.Date(2026, 9, 1, 10, 20, 30, 456e6, time.UTC)), CallID: "c1",
			Name: runtime.ChoiceMarkerName, Args: `{"prompt":"Which?"}`, Text: "choose"},
	}
	// Rows written before items had times put is_error after name; JSON
	// reads them the same.
	old := `{"kind":"tool_result","input":"m2","call_id":"c1","name":"run_command","is_error":true,"content":[{"type":"image","data":"aGk=","mediaType":"image/png"}]}`
	if back, err := decodeItem(itemFormatJSON, []byte(old)); err != nil || !reflect.DeepEqual(back, want[3]) {
		t.Errorf("an earlier row decodes as %+v (%v)", back, err)
	}
	if len(golden) != len(want) {
		t.Fatalf("%d golden items, want %d", len(golden), len(want))
	}
	for i := range want {
		got, err := encodeItem(&want[i])
		if err != nil {
			t.Fatal(err)
		}
		if got != string(golden[i]) {
			t.Errorf("item %d encodes as\n%s\nwant\n%s", i, got, golden[i])
		}
		back, err := decodeItem(itemFormatJSON, golden[i])
		if err != nil || !reflect.DeepEqual(back, want[i]) {
			t.Errorf("item %d decodes as %+v (%v)", i, back, err)
		}
	}
	if _, err := decodeItem(2, golden[0]); err == nil || !strings.Contains(err.Error(), "unknown item format 2") {
		t.Errorf("format 2 decoded: %v", err)
	}
}

// FuzzDecodeItem: whatever a row holds, decoding never panics, and what
// decodes re-encodes to something that decodes the same.
func FuzzDecodeItem(f *testing.F) {
	for _, s := range []string{`{"kind":"user","text":"hi"}`, `{"kind":"tool_result","content":[{"type":"text"}]}`, `{"kind":"nope"}`, `{}`, `[`, `{"kind":"user","usage":{"input":-1}}`} {
		f.Add(int16(1), []byte(s))
	}
	f.Fuzz(func(t *testing.T, format int16, body []byte) {
		it, err := decodeItem(format, body)
		if err != nil {
			return
		}
		enc, err := encodeItem(&it)
		if err != nil {
			t.Fatalf("decoded %+v but cannot encode it: %v", it, err)
		}
		again, err := decodeItem(itemFormatJSON, []byte(enc))
		if err != nil || !reflect.DeepEqual(normal(again), normal(it)) {
			t.Fatalf("round trip of %+v gave %+v (%v)", it, again, err)
		}
	})
}

// normal maps an empty Content slice to nil (omitempty drops it).
func normal(it runtime.Item) runtime.Item {
	if len(it.Content) == 0 {
		it.Content = nil
	}
	return it
}
