package disk

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A search by title pages like the other filters: newest first, each page
// after the last one's (activity, ID), ties by ID, with the total the
// filter selects on every page; a root whose title does not match is on
// none.
func TestRootsByTitlePageAfterTheCursor(t *testing.T) {
	ctx := context.Background()
	h := open(t, t.TempDir()).History()
	keep := func(*runtime.ThreadState) {}
	for _, r := range []struct {
		id    string
		at    runtime.Stamp
		title string
	}{{"r1", 100, "plan the trip"}, {"r2", 200, "a trip north"}, {"r3", 300, "Trip notes"},
		{"r4", 300, "the trip back"}, {"r5", 500, "trip costs"}, {"x", 400, "something else"}} {
		commitWith(t, h, r.id, keep, []runtime.Item{{Kind: runtime.ItemUser, At: r.at, Text: r.title}})
	}
	var pages []string
	var afterAt runtime.Stamp
	afterID := ""
	for range 4 {
		page, total, err := h.RootsWhere(ctx, RootFilter{Title: "trip"}, afterAt, afterID, 2)
		if err != nil {
			t.Fatal(err)
		}
		if total != 5 {
			t.Fatalf("the title search counts %d roots, want 5", total)
		}
		var got []string
		for _, r := range page {
			got = append(got, fmt.Sprintf("%s@%d", r.ID, r.Activity))
		}
		pages = append(pages, strings.Join(got, ","))
		if len(page) == 0 {
			break
		}
		afterAt, afterID = page[len(page)-1].Activity, page[len(page)-1].ID
	}
	if got, want := strings.Join(pages, " | "), "r5@500,r3@300 | r4@300,r2@200 | r1@100 | "; got != want {
		t.Fatalf("pages of the title search: %q, want %q", got, want)
	}
}
