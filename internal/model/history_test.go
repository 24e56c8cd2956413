package model

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/agentslice/agentslice/internal/runtime"
)

// sketch renders turns compactly: "user[text] assistant[text call:A] tool[result:A!]".
func sketch(turns []turn) string {
	var out []string
	for _, t := range turns {
		var ps []string
		for _, p := range t.parts {
			switch p.kind {
			case partText:
				ps = append(ps, "text")
			case partImage:
				ps = append(ps, "image")
			case partCall:
				ps = append(ps, "call:"+p.callID)
			case partResult:
				s := "result:" + p.callID
				if p.isError {
					s += "!"
				}
				ps = append(ps, s)
			}
		}
		out = append(out, fmt.Sprintf("%s[%s]", []string{"", "user", "assistant", "tool"}[t.role], strings.Join(ps, " ")))
	}
	return strings.Join(out, " ")
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	user := func(s string) runtime.Item { return runtime.Item{Kind: runtime.ItemUser, Text: s} }
	asst := func(s string) runtime.Item { return runtime.Item{Kind: runtime.ItemAssistant, Text: s} }
	call := func(id string) runtime.Item {
		return runtime.Item{Kind: runtime.ItemToolCall, CallID: id, Name: "t", Args: "{}"}
	}
	result := func(id string) runtime.Item {
		return runtime.Item{Kind: runtime.ItemToolResult, CallID: id, Name: "t", Text: "ok"}
	}
	tests := []struct {
		name    string
		history []runtime.Item
		want    string
	}{
		{"empty", nil, ""},
		{"markers are skipped", []runtime.Item{user("a"), {Kind: runtime.ItemMarker, Text: "continue"}, user("b")}, "user[text text]"},
		{"summary is user text", []runtime.Item{{Kind: runtime.ItemSummary, Text: "s"}, user("a")}, "user[text text]"},
		{"assistant text and call form one turn", []runtime.Item{user("a"), asst("x"), call("A"), result("A")},
			"user[text] assistant[text call:A] tool[result:A]"},
		{"empty assistant text is dropped", []runtime.Item{user("a"), asst(""), call("A"), result("A")},
			"user[text] assistant[call:A] tool[result:A]"},
		{"two calls in one turn keep their results together", []runtime.Item{user("a"), call("A"), call("B"), result("A"), result("B")},
			"user[text] assistant[call:A call:B] tool[result:A result:B]"},
		{"injected pairs alternate", []runtime.Item{user("a"), call("E1"), result("E1"), call("E2"), result("E2")},
			"user[text] assistant[call:E1] tool[result:E1] assistant[call:E2] tool[result:E2]"},
		{"a dangling call gets an error result", []runtime.Item{user("a"), call("A"), user("b")},
			"user[text] assistant[call:A] tool[result:A!] user[text]"},
		{"a dangling call at the end gets an error result", []runtime.Item{user("a"), call("A")},
			"user[text] assistant[call:A] tool[result:A!]"},
		{"a partly answered turn is completed", []runtime.Item{user("a"), call("A"), call("B"), result("B"), asst("x")},
			"user[text] assistant[call:A call:B] tool[result:B result:A!] assistant[text]"},
		{"an orphan result becomes user text", []runtime.Item{user("a"), result("Z")}, "user[text text text]"},
		{"a late result after another turn is an orphan", []runtime.Item{user("a"), call("A"), user("b"), result("A")},
			"user[text] assistant[call:A] tool[result:A!] user[text text text]"},
		{"user images", []runtime.Item{{Kind: runtime.ItemUser, Text: "see", Content: []runtime.Content{{Type: "image", Data: "AA==", MediaType: "image/png"}}}},
			"user[text image]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := sketch(normalize(tt.history)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestResultContent(t *testing.T) {
	t.Parallel()
	turns := normalize([]runtime.Item{
		{Kind: runtime.ItemToolCall, CallID: "A", Name: "t"},
		{Kind: runtime.ItemToolResult, CallID: "A", Name: "t"},
	})
	p := turns[1].parts[0]
	if len(p.content) != 1 || p.content[0].Text != noOutputText {
		t.Errorf("an empty result must carry %q, got %+v", noOutputText, p.content)
	}
	if turns[0].parts[0].args != "{}" {
		t.Errorf("empty args must become {}, got %q", turns[0].parts[0].args)
	}
}

func TestWireCallID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"call_abcdefghijklmnopqrstuvwxyz", "evt_x", "tooluse_A-1"} {
		if got := wireCallID(id); got != id {
			t.Errorf("wireCallID(%q) = %q, want it unchanged", id, got)
		}
	}
	for _, id := range []string{"", "has space", "a.b", strings.Repeat("x", 41), "é"} {
		got := wireCallID(id)
		if got == id || len(got) > 40 || got != wireCallID(id) {
			t.Errorf("wireCallID(%q) = %q, want a stable safe stand-in", id, got)
		}
	}
}

func TestBedrockMessagesStartWithUser(t *testing.T) {
	t.Parallel()
	msgs := bedrockMessages(normalize([]runtime.Item{
		{Kind: runtime.ItemAssistant, Text: "I begin."},
		{Kind: runtime.ItemUser, Text: "ok"},
	}), false, false)
	if len(msgs) != 3 || msgs[0].Role != types.ConversationRoleUser {
		t.Fatalf("want user, assistant, user; got %+v", msgs)
	}
	if txt, ok := msgs[0].Content[0].(*types.ContentBlockMemberText); !ok || txt.Value != bedrockStartText {
		t.Errorf("first block %+v, want %q", msgs[0].Content[0], bedrockStartText)
	}
}

func TestErrorResultsWithoutStatus(t *testing.T) {
	t.Parallel()
	turns := normalize([]runtime.Item{
		{Kind: runtime.ItemToolCall, CallID: "A", Name: "t"},
		{Kind: runtime.ItemToolResult, CallID: "A", Name: "t", IsError: true, Text: "disk full"},
		{Kind: runtime.ItemToolCall, CallID: "B", Name: "t"},
		{Kind: runtime.ItemToolResult, CallID: "B", Name: "t", IsError: true, Text: "error: already marked"},
	})
	msgs := bedrockMessages(turns, false, false)
	var texts []string
	for _, m := range msgs {
		for _, b := range m.Content {
			if tr, ok := b.(*types.ContentBlockMemberToolResult); ok {
				if tr.Value.Status != "" {
					t.Errorf("status sent although tool_result_status is off")
				}
				texts = append(texts, tr.Value.Content[0].(*types.ToolResultContentBlockMemberText).Value)
			}
		}
	}
	if want := []string{"error: disk full", "error: already marked"}; fmt.Sprint(texts) != fmt.Sprint(want) {
		t.Errorf("error result texts %q, want %q", texts, want)
	}
}

func TestImagePlaceholders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c      runtime.Content
		images bool
		reason string
	}{
		{runtime.Content{Type: "image", Data: "iVBORw0KGgo=", MediaType: "image/png"}, true, ""},
		{runtime.Content{Type: "image", Data: "iVBORw0KGgo=", MediaType: "image/png"}, false, reasonNoImages},
		{runtime.Content{Type: "image", Data: "iVBORw0KGgo=", MediaType: "image/tiff"}, true, reasonBadFormat},
		{runtime.Content{Type: "image", Data: "not base64!", MediaType: "image/jpeg"}, true, reasonBadData},
	}
	for _, tt := range tests {
		if _, _, reason := checkImage(tt.c, tt.images); reason != tt.reason {
			t.Errorf("checkImage(%s, images=%v) reason %q, want %q", tt.c.MediaType, tt.images, reason, tt.reason)
		}
	}
}

// FuzzBedrockMessages builds histories from arbitrary bytes and checks the
// invariants Converse enforces on what the mapping sends: the first message
// is from the user, roles alternate, no message is empty, every toolUse is
// answered by a toolResult in the next message, and every toolResult answers
// a toolUse of the message before, ahead of any other content.
func FuzzBedrockMessages(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 2, 3, 4, 0})
	f.Add([]byte{3, 3, 2, 0, 2, 2, 3, 1, 5, 6})
	f.Add([]byte{2, 2, 0, 3, 3, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h []runtime.Item
		for _, c := range b {
			id := fmt.Sprintf("c%d", (c>>3)%4) // a few IDs, so calls and results meet
			switch c % 7 {
			case 0:
				h = append(h, runtime.Item{Kind: runtime.ItemUser, Text: "u"})
			case 1:
				h = append(h, runtime.Item{Kind: runtime.ItemAssistant, Text: "a"})
			case 2:
				h = append(h, runtime.Item{Kind: runtime.ItemToolCall, CallID: id, Name: "t", Args: "{}"})
			case 3:
				h = append(h, runtime.Item{Kind: runtime.ItemToolResult, CallID: id, Name: "t", Text: "r"})
			case 4:
				h = append(h, runtime.Item{Kind: runtime.ItemMarker})
			case 5:
				h = append(h, runtime.Item{Kind: runtime.ItemSummary, Text: "s"})
			case 6:
				h = append(h, runtime.Item{Kind: runtime.ItemAssistant, Text: ""})
			}
		}
		msgs := bedrockMessages(normalize(h), true, true)
		for i, m := range msgs {
			if i == 0 && m.Role != types.ConversationRoleUser {
				t.Fatalf("first message is %s", m.Role)
			}
			if i > 0 && msgs[i-1].Role == m.Role {
				t.Fatalf("messages %d and %d are both %s", i-1, i, m.Role)
			}
			if len(m.Content) == 0 {
				t.Fatalf("message %d is empty", i)
			}
			var uses, results []string
			for j, blk := range m.Content {
				switch v := blk.(type) {
				case *types.ContentBlockMemberToolUse:
					uses = append(uses, aws.ToString(v.Value.ToolUseId))
				case *types.ContentBlockMemberToolResult:
					if j != len(results) {
						t.Fatalf("message %d: a toolResult comes after other content", i)
					}
					results = append(results, aws.ToString(v.Value.ToolUseId))
				}
			}
			if len(uses) > 0 {
				if i+1 >= len(msgs) {
					t.Fatalf("toolUse %v in the last message", uses)
				}
				var next []string
				for _, blk := range msgs[i+1].Content {
					if v, ok := blk.(*types.ContentBlockMemberToolResult); ok {
						next = append(next, aws.ToString(v.Value.ToolUseId))
					}
				}
				if fmt.Sprint(sorted(next)) != fmt.Sprint(sorted(uses)) {
					t.Fatalf("message %d uses %v, next message answers %v", i, uses, next)
				}
			}
			if len(results) > 0 {
				var prev []string
				if i > 0 {
					for _, blk := range msgs[i-1].Content {
						if v, ok := blk.(*types.ContentBlockMemberToolUse); ok {
							prev = append(prev, aws.ToString(v.Value.ToolUseId))
						}
					}
				}
				if fmt.Sprint(sorted(prev)) != fmt.Sprint(sorted(results)) {
					t.Fatalf("message %d answers %v, previous message used %v", i, results, prev)
				}
			}
		}
	})
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
