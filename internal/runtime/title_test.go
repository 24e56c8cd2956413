package runtime_test

import (
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// ThreadTitle keeps a first user message of up to TitleMax runes whole (on
// one line) and trims a longer one to TitleMax runes ending in "…".
func TestThreadTitleBounds(t *testing.T) {
	t.Parallel()
	exact := strings.Repeat("é", runtime.TitleMax) // runes, not bytes
	for _, c := range []struct{ text, want string }{
		{"  fix\n the   build ", "fix the build"},
		{exact, exact},
		{exact + "x", strings.Repeat("é", runtime.TitleMax-1) + "…"},
	} {
		own := []runtime.Item{{Kind: runtime.ItemAssistant, Text: "not a title"}, {Kind: runtime.ItemUser, Text: c.text}}
		if got := runtime.ThreadTitle(own); got != c.want {
			t.Errorf("ThreadTitle(%d runes) = %q (%d runes), want %q", len([]rune(c.text)), got, len([]rune(got)), c.want)
		}
	}
	if got := runtime.ThreadTitle([]runtime.Item{{Kind: runtime.ItemAssistant, Text: "x"}}); got != "" {
		t.Errorf("ThreadTitle without a user item = %q, want empty", got)
	}
}
