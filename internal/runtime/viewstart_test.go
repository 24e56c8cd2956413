package runtime

import "testing"

// viewStartIn of a view loaded from a base past 0 (a leased or view load)
// takes the latest summary before pos, counting positions from base: a
// summary at or after pos (folded later in the same slice, say after an
// event that spawned a child) is not the child's, whose view would then
// start past items it has no summary for.
func TestViewStartInAViewLoadedFromABase(t *testing.T) {
	t.Parallel()
	const base = 10
	view := []Item{
		{Kind: ItemUser, Text: "a"},                // 10
		{Kind: ItemAssistant, Text: "b"},           // 11
		{Kind: ItemSummary, Args: `{"covers":10}`}, // 12
		{Kind: ItemUser, Text: "c"},                // 13
		{Kind: ItemAssistant, Text: "d"},           // 14
		{Kind: ItemSummary, Args: `{"covers":13}`}, // 15
		{Kind: ItemUser, Text: "e"},                // 16
	}
	for _, c := range []struct{ pos, want int }{{12, 0}, {13, 10}, {15, 10}, {16, 13}, {17, 13}} {
		if got := viewStartIn(view, base, c.pos); got != c.want {
			t.Errorf("viewStartIn(view from %d, pos %d) = %d, want %d", base, c.pos, got, c.want)
		}
	}
}
