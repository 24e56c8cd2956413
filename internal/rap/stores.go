package rap

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// boundedMap is a small LRU map; the memory stores are built on it.
type boundedMap[V any] struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element
	order *list.List // front: most recent
}

type boundedItem[V any] struct {
	key string
	val V
}

func newBoundedMap[V any](max int) *boundedMap[V] {
	if max <= 0 {
		max = 10000
	}
	return &boundedMap[V]{max: max, items: map[string]*list.Element{}, order: list.New()}
}

func (m *boundedMap[V]) put(key string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.items[key]; ok {
		el.Value.(*boundedItem[V]).val = v
		m.order.MoveToFront(el)
		return
	}
	m.items[key] = m.order.PushFront(&boundedItem[V]{key: key, val: v})
	for m.order.Len() > m.max {
		old := m.order.Back()
		delete(m.items, old.Value.(*boundedItem[V]).key)
		m.order.Remove(old)
	}
}

func (m *boundedMap[V]) get(key string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	return el.Value.(*boundedItem[V]).val, true
}

func (m *boundedMap[V]) take(key string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	delete(m.items, key)
	m.order.Remove(el)
	return el.Value.(*boundedItem[V]).val, true
}

func storeKey(parts ...string) string {
	b, _ := json.Marshal(parts)
	return string(b)
}

// MemoryViews is an in-memory ViewStore keeping the latest view per (thread,
// view type), at most max entries (least recently updated first out).
type MemoryViews struct{ m *boundedMap[json.RawMessage] }

// NewMemoryViews returns a MemoryViews holding at most max views.
func NewMemoryViews(max int) *MemoryViews {
	return &MemoryViews{m: newBoundedMap[json.RawMessage](max)}
}

// PutView replaces the view.
func (v *MemoryViews) PutView(_ context.Context, threadID, viewType string, content json.RawMessage) error {
	v.m.put(storeKey(threadID, viewType), append(json.RawMessage(nil), content...))
	return nil
}

// View returns the latest content of the view.
func (v *MemoryViews) View(_ context.Context, threadID, viewType string) (json.RawMessage, bool, error) {
	c, ok := v.m.get(storeKey(threadID, viewType))
	return c, ok, nil
}

// MemoryChoices is an in-memory ChoiceStore: pending user choices by (thread,
// tool call), at most max of them.
type MemoryChoices struct{ m *boundedMap[UserChoice] }

// NewMemoryChoices returns a MemoryChoices holding at most max choices.
func NewMemoryChoices(max int) *MemoryChoices {
	return &MemoryChoices{m: newBoundedMap[UserChoice](max)}
}

// PutChoice remembers c until it is answered.
func (s *MemoryChoices) PutChoice(_ context.Context, threadID string, c UserChoice) error {
	s.m.put(storeKey(threadID, c.ID), c)
	return nil
}

// Choice returns the pending choice of a thread's tool call.
func (s *MemoryChoices) Choice(threadID, callID string) (UserChoice, bool) {
	return s.m.get(storeKey(threadID, callID))
}

// Answer POSTs the user's selection for a pending choice to its
// response_url and forgets the choice once the tool accepted it.
func (s *MemoryChoices) Answer(ctx context.Context, client *http.Client, threadID, callID string, selected int) error {
	c, ok := s.Choice(threadID, callID)
	if !ok {
		return fmt.Errorf("rap: no pending choice for call %s of thread %s", callID, threadID)
	}
	if selected < 0 || selected >= len(c.Choices) {
		return fmt.Errorf("rap: selection %d is out of range for %d choices", selected, len(c.Choices))
	}
	if err := PostChoice(ctx, client, c.ResponseURL, c.ID, selected, RetryPolicy{}); err != nil {
		return err
	}
	s.m.take(storeKey(threadID, callID))
	return nil
}
