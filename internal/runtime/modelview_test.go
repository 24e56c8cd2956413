package runtime

import (
	"fmt"
	"testing"
)

// ModelView folds the latest summary and keeps count of how many of the
// returned items came from ancestors, wherever the summary lies: among the
// inherited items (an ancestor's summary) or among the thread's own.
func TestModelViewInheritedCount(t *testing.T) {
	t.Parallel()
	item := func(name string) Item { return Item{Kind: ItemUser, Input: name, Text: name} }
	summary := func(name string, covers int) Item {
		return Item{Kind: ItemSummary, Input: name, Text: name, Args: fmt.Sprintf(`{"covers":%d}`, covers)}
	}
	for _, tc := range []struct {
		name      string
		view      []Item
		inherited int
		want      []string // Input of each returned item
		wantInh   int
	}{
		{
			// An ancestor's summary (covers 1) at index 1: the summary and
			// the two ancestor items after it are inherited, the own two not.
			name:      "ancestor summary",
			view:      []Item{item("a0"), summary("s", 1), item("a2"), item("a3"), item("o4"), item("o5")},
			inherited: 4,
			want:      []string{"s", "a2", "a3", "o4", "o5"},
			wantInh:   3,
		},
		{
			// An ancestor's summary that covers its own position minus two:
			// the two covered-but-kept ancestor items stay inherited.
			name:      "ancestor summary keeping items before it",
			view:      []Item{item("a0"), item("a1"), item("a2"), summary("s", 1), item("a4"), item("o5")},
			inherited: 5,
			want:      []string{"s", "a1", "a2", "a4", "o5"},
			wantInh:   4,
		},
		{
			// The thread's own summary, covering into the inherited part.
			name:      "own summary",
			view:      []Item{item("a0"), item("a1"), item("o2"), summary("s", 1), item("o4")},
			inherited: 2,
			want:      []string{"s", "a1", "o2", "o4"},
			wantInh:   1,
		},
		{
			name:      "no summary",
			view:      []Item{item("a0"), item("o1")},
			inherited: 1,
			want:      []string{"a0", "o1"},
			wantInh:   1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, inh := ModelView(tc.view, tc.inherited, 0)
			var names []string
			for _, it := range got {
				names = append(names, it.Input)
			}
			if fmt.Sprint(names) != fmt.Sprint(tc.want) || inh != tc.wantInh {
				t.Fatalf("ModelView = %v, %d inherited; want %v, %d", names, inh, tc.want, tc.wantInh)
			}
		})
	}
}

// ownSummary finds the thread's own latest summary, down to its first own
// item (a summary there is its own), and never an ancestor's.
func TestOwnSummaryBounds(t *testing.T) {
	t.Parallel()
	sum := Item{Kind: ItemSummary, Args: `{"covers":1}`}
	usr := Item{Kind: ItemUser, Text: "x"}
	for _, tc := range []struct {
		name      string
		view      []Item
		inherited int
		want      int
	}{
		{"at the first own position", []Item{usr, usr, sum, usr}, 2, 2},
		{"only an ancestor's", []Item{usr, sum, usr, usr}, 2, -1},
		{"the latest of two", []Item{sum, usr, sum, usr, sum}, 1, 4},
		{"none", []Item{usr, usr}, 0, -1},
	} {
		s := &slice{th: &Thread{Inherited: tc.inherited}, view: tc.view}
		if got := s.ownSummary(); got != tc.want {
			t.Errorf("%s: ownSummary = %d, want %d", tc.name, got, tc.want)
		}
	}
}
