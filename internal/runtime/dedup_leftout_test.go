package runtime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// A redelivered message that a compacted root consumed before its view
// start is a duplicate even though a slice's load leaves that item out
// and there is no dedup store: the engine asks history about the
// left-out part, and the redelivery neither appends nor calls the model.
func TestRedeliveryBeforeTheViewStartIsDropped(t *testing.T) {
	store := local.NewHistoryStore()
	checkRedeliveryBeforeTheViewStart(t, store, store)
}

// checkRedeliveryBeforeTheViewStart commits a root of ten items whose
// summary at 8 covers m0..m7 (view start 8) into mem, then runs the
// engine on engineStore (mem itself, or a wrapper of it): a redelivery of
// m2 appends nothing and calls no model, and a new message still runs.
func checkRedeliveryBeforeTheViewStart(t *testing.T, mem, engineStore runtime.HistoryStore) {
	t.Helper()
	ctx := context.Background()
	add := make([]runtime.Item, 10)
	for i := range add {
		add[i] = runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("m%d", i), Text: fmt.Sprint(i)}
	}
	add[8] = runtime.Item{Kind: runtime.ItemSummary, Input: "sum", Text: "summary", Args: `{"covers":8}`}
	add[9] = runtime.Item{Kind: runtime.ItemAssistant, Text: "ok"}
	if err := mem.Commit(ctx, &runtime.Commit{ThreadID: "t", Append: add,
		State: runtime.ThreadState{Version: 1, Length: 10, Stack: []string{"t"}, ViewStart: 8}}); err != nil {
		t.Fatal(err)
	}
	m := &usageModel{}
	e, _ := newEngine(engineStore, m)
	if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "m2")}}); err != nil {
		t.Fatal(err)
	}
	th, err := mem.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Items) != 10 || m.n() != 0 {
		t.Fatalf("a redelivery of m2 (consumed at 2, before the view start 8): %d items (want 10), %d model calls (want 0)", len(th.Items), m.n())
	}
	// A new message still runs.
	if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "m10")}}); err != nil {
		t.Fatal(err)
	}
	if m.n() != 1 {
		t.Fatalf("a new message: %d model calls, want 1", m.n())
	}
}

// viewForStore is a history store that loads a root's slice view from its
// view start and answers, with the load, which of the batch's inputs an
// own item it left out consumed (runtime.InputViewLoader, as DSQL does). It
// embeds only the HistoryStore interface, so the engine does not lease.
type viewForStore struct{ runtime.HistoryStore }

func (s viewForStore) LoadViewFor(ctx context.Context, id string, inputs []string) (*runtime.Thread, []bool, error) {
	th, err := s.Load(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	consumed := make([]bool, len(inputs))
	vs := th.State.ViewStart
	if vs <= 0 || th.Inherited > 0 || vs > len(th.Items) {
		return th, consumed, nil // the whole view: nothing left out
	}
	for _, it := range th.Items[:vs] {
		for i, in := range inputs {
			consumed[i] = consumed[i] || (it.Input != "" && it.Input == in)
		}
	}
	view := *th
	view.Items, view.Base = th.Items[vs:], vs
	return &view, consumed, nil
}

// With a store that answers the consumed-input question with its view
// load, the engine asks it about the batch's messages: a redelivery of one
// consumed before the view start is dropped (engine.go's load).
func TestRedeliveryBeforeTheViewStartIsDroppedWithAViewLoad(t *testing.T) {
	mem := local.NewHistoryStore()
	checkRedeliveryBeforeTheViewStart(t, mem, viewForStore{mem})
}
