package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeMessageGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/messages/*.json")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := DecodeMessage(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			again, err := EncodeMessage(m)
			if err != nil {
				t.Fatal(err)
			}
			m2, err := DecodeMessage(again)
			if err != nil || m2.ID != m.ID || m2.Kind != m.Kind || m2.Text != m.Text || len(m2.Content) != len(m.Content) {
				t.Fatalf("round trip: %+v %v", m2, err)
			}
		})
	}
}

func TestDecodeMessageRejects(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"not json", `{"v":1,`, "malformed JSON"},
		{"unknown field", `{"v":1,"id":"a","thread_id":"t","kind":"user","text":"x","colour":"red"}`, "colour"},
		{"trailing data", `{"v":1,"id":"a","thread_id":"t","kind":"user","text":"x"} {}`, "trailing"},
		{"no version", `{"id":"a","thread_id":"t","kind":"user","text":"x"}`, `"v"`},
		{"missing id", `{"v":1,"thread_id":"t","kind":"user","text":"x"}`, `"id"`},
		{"id with space", `{"v":1,"id":"a b","thread_id":"t","kind":"user","text":"x"}`, "space"},
		{"unknown kind", `{"v":1,"id":"a","thread_id":"t","kind":"yell","text":"x"}`, `unknown kind "yell"`},
		{"empty user text", `{"v":1,"id":"a","thread_id":"t","kind":"user"}`, "empty user message"},
		{"wake without call", `{"v":1,"id":"a","thread_id":"t","kind":"wake"}`, `"tool_call_id"`},
		{"bad content type", `{"v":1,"id":"a","thread_id":"t","kind":"tool_result","tool_call_id":"c","content":[{"type":"video"}]}`, `content[0].type`},
		{"image without data", `{"v":1,"id":"a","thread_id":"t","kind":"tool_result","tool_call_id":"c","content":[{"type":"image"}]}`, `content[0]`},
		{"invalid utf-8", "{\"v\":1,\"id\":\"a\",\"thread_id\":\"t\",\"kind\":\"user\",\"text\":\"\xff\"}", "UTF-8"},
		{"oversize", `{"v":1,"id":"a","thread_id":"t","kind":"user","text":"` + strings.Repeat("x", MaxMessageBytes+1) + `"}`, "limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeMessage([]byte(tc.body))
			var bad *BadMessageError
			if !errors.As(err, &bad) {
				t.Fatalf("got %v, want a BadMessageError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func FuzzDecodeMessage(f *testing.F) {
	files, _ := filepath.Glob("testdata/messages/*.json")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte(`{"v":1,"id":"a","thread_id":"t","kind":"wake","tool_call_id":"c"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(b)
		if err != nil {
			var bad *BadMessageError
			if !errors.As(err, &bad) {
				t.Fatalf("decode error of the wrong type: %T %v", err, err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("decoded message fails validation: %v", err)
		}
		enc, err := EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeMessage(enc); err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
	})
}

func TestDeriveIDIsStableAndUnambiguous(t *testing.T) {
	if DeriveID("x_", "a", "b") != DeriveID("x_", "a", "b") {
		t.Fatal("not deterministic")
	}
	if DeriveID("x_", "ab", "c") == DeriveID("x_", "a", "bc") {
		t.Fatal("part boundaries are ambiguous")
	}
}

func TestMessageClassIsChecked(t *testing.T) {
	for _, c := range []Class{"", ClassInteractive, ClassBackground} {
		m := Message{V: 1, ID: "m", ThreadID: "t", Kind: KindUser, Text: "x", Class: c}
		if err := m.Validate(); err != nil {
			t.Errorf("class %q refused: %v", c, err)
		}
	}
	m := Message{V: 1, ID: "m", ThreadID: "t", Kind: KindUser, Text: "x", Class: "urgent"}
	var bm *BadMessageError
	if err := m.Validate(); !errors.As(err, &bm) || bm.Field != "class" {
		t.Fatalf("class urgent: got %v, want a BadMessageError on field class", err)
	}
	if c, err := ParseClass(""); err != nil || c != ClassInteractive {
		t.Fatalf("ParseClass(\"\") = %q, %v; want interactive", c, err)
	}
	if _, err := ParseClass("urgent"); err == nil {
		t.Fatal("ParseClass(urgent) accepted")
	}
}
