package rap

import (
	"github.com/agentslice/agentslice/rapkit"

	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeCallback(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file      string
		wantType  CallbackType
		wantField string // "" = valid
	}{
		{"tool_result_text.json", TypeToolResult, ""},
		{"tool_result_content.json", TypeToolResult, ""},
		{"tool_result_subscription.json", TypeToolResult, ""},
		{"subscription_event.json", TypeSubscriptionEvent, ""},
		{"subscription_event_final.json", TypeSubscriptionEvent, ""},
		{"oauth.json", TypeOAuth, ""},
		{"user_choice.json", TypeUserChoice, ""},
		{"view_update.json", TypeViewUpdate, ""},
		{"bad_no_type.json", "", "type"},
		{"bad_unknown_type.json", "", "type"},
		{"bad_missing_group.json", "", "group_id"},
		{"bad_missing_text.json", "", "text"},
		{"bad_subscription_type.json", "", "subscription"},
		{"bad_image_base64.json", "", "content[0].data"},
		{"bad_content_type.json", "", "content[1].type"},
		{"tool_result_display_text.json", TypeToolResult, ""},
		{"tool_result_display_diff.json", TypeToolResult, ""},
		{"tool_result_display_image.json", TypeToolResult, ""},
		{"tool_result_display_unknown.json", TypeToolResult, ""},
		{"tool_result_display_none.json", TypeToolResult, ""},
		{"bad_event_no_call.json", "", "tool_call_id"},
		{"bad_event_no_text.json", "", "text"},
		{"bad_oauth_url.json", "", "auth_url"},
		{"bad_choice_default.json", "", "default"},
		{"bad_choice_empty.json", "", "choices"},
		{"bad_view_content.json", "", "content"},
		{"bad_trailing.json", "", ""},
		{"bad_not_object.json", "", ""},
		{"bad_group_space.json", "", "group_id"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			cb, err := DecodeCallback(readTestdata(t, "callbacks", tc.file))
			valid := strings.HasPrefix(tc.file, "bad_") == false
			if valid {
				if err != nil {
					t.Fatalf("DecodeCallback: %v", err)
				}
				if cb.Type != tc.wantType {
					t.Fatalf("type = %q, want %q", cb.Type, tc.wantType)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("DecodeCallback error = %v, want a *FieldError", err)
			}
			if fe.Field != tc.wantField {
				t.Fatalf("field = %q (%v), want %q", fe.Field, err, tc.wantField)
			}
		})
	}
}

// TestDisplayAsSpecExamples decodes the spec's display_as examples (and
// ones with unknown or malformed segments) and checks which segment a UI
// gets: the first one this runtime supports, the model's text untouched.
func TestDisplayAsSpecExamples(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file     string
		want     Display
		wantNone bool
		text     string
	}{
		{file: "tool_result_display_text.json", want: Display{Type: "text", Text: "Deployed instance i-0abc123"},
			text: "Deployment completed successfully. Instance i-0abc123 is running."},
		{file: "tool_result_display_diff.json", want: Display{Type: "diff", Path: "src/main.rs",
			Patch: "--- src/main.rs\n+++ src/main.rs\n@@ -1,3 +1,4 @@\n fn main() {\n+    println!(\"hello\");\n }"},
			text: "Replaced text in src/main.rs"},
		{file: "tool_result_display_image.json", want: Display{Type: "image", Data: "iVBORw0KGgo=", MediaType: "image/png"},
			text: "Rendered the chart."},
		{file: "tool_result_display_unknown.json", want: Display{Type: "text", Text: "done, shown as text"}, text: "done"},
		{file: "tool_result_display_none.json", wantNone: true, text: "done"},
		// A presentation hint that is not a list never costs the result.
		{file: "tool_result_display_object.json", want: Display{Type: "text", Text: "done, shown as text"}, text: "done"},
		{file: "tool_result_display_string.json", wantNone: true, text: "done"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			cb, err := DecodeCallback(readTestdata(t, "callbacks", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := cb.ToolResult.Display()
			if ok == tc.wantNone || got != tc.want {
				t.Fatalf("Display() = %+v, %v; want %+v", got, ok, tc.want)
			}
			m := MessageFor("thread_xyz", "call_abc123", cb)
			if m.Text != tc.text || len(m.Content) != 0 {
				t.Fatalf("model gets %q %v, want the full text %q", m.Text, m.Content, tc.text)
			}
		})
	}
}

func TestDecodeCallbackContentWins(t *testing.T) {
	t.Parallel()
	cb, err := DecodeCallback(readTestdata(t, "callbacks", "tool_result_content.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := MessageFor("thr_1", "call_1", cb)
	if m.Text != "" || len(m.Content) != 2 || m.Content[1].Type != "image" {
		t.Fatalf("message = %+v, want the content items and no text", m)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("message does not validate: %v", err)
	}
}

func TestDecodeToolset(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file      string
		wantField string // "" = valid
	}{
		{"valid_full.json", ""},
		{"valid_relative_endpoint.json", ""},
		{"bad_empty_tools.json", "tools"},
		{"bad_no_name.json", "name"},
		{"bad_long_name.json", "name"},
		{"bad_no_endpoint.json", "endpoint"},
		{"bad_endpoint_scheme.json", "endpoint"},
		{"bad_no_tools.json", "tools"},
		{"bad_tool_name.json", "tools[1].name"},
		{"bad_dup_tool.json", "tools[1].name"},
		{"bad_reserved_tool.json", "tools[0].name"},
		{"bad_no_description.json", "tools[0](a).description"},
		{"bad_no_schema.json", "tools[0](a).inputSchema"},
		{"bad_schema_invalid.json", "tools[0](a).inputSchema"},
		{"bad_schema_not_object_type.json", "tools[0](a).inputSchema"},
		{"bad_schema_remote_ref.json", "tools[0](a).inputSchema"},
		{"valid_annotation_custom.json", ""},
		{"valid_annotation_wrong_type.json", ""},
		{"bad_tools_type.json", "tools"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			ts, schemas, err := DecodeToolset(readTestdata(t, "toolsets", tc.file))
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("DecodeToolset: %v", err)
				}
				if len(schemas) != len(ts.Tools) {
					t.Fatalf("%d schemas for %d tools", len(schemas), len(ts.Tools))
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("DecodeToolset error = %v, want a *FieldError", err)
			}
			if fe.Field != tc.wantField {
				t.Fatalf("field = %q (%v), want %q", fe.Field, err, tc.wantField)
			}
			if ts != nil {
				t.Fatal("a rejected toolset must not be returned in part")
			}
		})
	}
}

func TestDecodeToolsetAnnotations(t *testing.T) {
	t.Parallel()
	ts, _, err := DecodeToolset(readTestdata(t, "toolsets", "valid_full.json"))
	if err != nil {
		t.Fatal(err)
	}
	a := ts.Tools[0].Annotations
	if a == nil || !a.ReadOnly || !a.LongRunning || a.Destructive || string(a.Custom["x-team"]) != `"infra"` {
		t.Fatalf("annotations = %+v", a)
	}
	// The spec's requiresAuth is a string naming the auth provider.
	if b := ts.Tools[1].Annotations; b == nil || b.RequiresAuth != "github" || !b.Destructive {
		t.Fatalf("annotations of tools[1] = %+v", b)
	}
	// Unknown keys, prefixed or not, are kept; a wrong-typed known key is
	// kept verbatim and ignored rather than refusing the toolset.
	ts, _, err = DecodeToolset(readTestdata(t, "toolsets", "valid_annotation_custom.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := ts.Tools[0].Annotations
	if c.RequiresAuth != "github" || !c.LongRunning || string(c.Custom["dangerous"]) != "true" ||
		string(c.Custom["x-mycompany-priority"]) != `"high"` {
		t.Fatalf("custom annotations = %+v", c)
	}
	ts, _, err = DecodeToolset(readTestdata(t, "toolsets", "valid_annotation_wrong_type.json"))
	if err != nil {
		t.Fatal(err)
	}
	if w := ts.Tools[0].Annotations; w.ReadOnly || string(w.Custom["readOnly"]) != `"yes"` {
		t.Fatalf("wrong-typed annotation = %+v", w)
	}
	// Round trip: what the kit serves decodes to the same annotations.
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Annotations
	if err := json.Unmarshal(b, &back); err != nil || back.RequiresAuth != "github" || string(back.Custom["dangerous"]) != "true" {
		t.Fatalf("round trip %s = %+v, %v", b, back, err)
	}
}

func seedDir(f *testing.F, dir string) {
	entries, err := os.ReadDir(filepath.Join("testdata", dir))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readTestdata(f, dir, e.Name()))
	}
}

// FuzzDecodeCallback checks that any body either decodes into a callback
// whose message validates, or fails with a *FieldError; never a panic.
func FuzzDecodeCallback(f *testing.F) {
	seedDir(f, "callbacks")
	f.Fuzz(func(t *testing.T, b []byte) {
		cb, err := DecodeCallback(b)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			return
		}
		if cb.Type == TypeViewUpdate {
			return
		}
		id, _ := cb.CallRef()
		m := MessageFor(cb.GroupID(), id, cb)
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted callback %s gives an invalid message: %v", b, err)
		}
	})
}

// FuzzDecodeToolset checks that any document either decodes with one
// compiled schema per tool, or fails with a *FieldError; never a panic.
func FuzzDecodeToolset(f *testing.F) {
	seedDir(f, "toolsets")
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, schemas, err := DecodeToolset(b)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			return
		}
		if len(schemas) != len(ts.Tools) {
			t.Fatalf("%d schemas for %d tools", len(schemas), len(ts.Tools))
		}
		for i, s := range schemas {
			_ = s.Validate([]byte(`{}`)) // must not panic
			if !rapkit.ValidName(ts.Tools[i].Name) {
				t.Fatalf("accepted invalid tool name %q", ts.Tools[i].Name)
			}
		}
	})
}
