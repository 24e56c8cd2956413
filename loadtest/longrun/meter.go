package main

import (
	"context"
	"errors"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// meter wraps a history store and counts what slices load and what
// commits store. It adds nothing else.
type meter struct {
	runtime.HistoryStore

	mu          sync.Mutex
	loads       int64
	loadedItems int64
	loadedBytes int64
	storedBytes int64 // item bytes appended by every commit of the tree
	storedItems int64
}

// leasedMeter is a meter over a store that leases its views.
type leasedMeter struct {
	*meter
	ll runtime.LeaseLoader
}

// diskMeter is a leasedMeter over a store whose commits wait for the disk.
type diskMeter struct {
	*leasedMeter
	dw interface{ CommitsWaitForDisk() bool }
}

func (d *diskMeter) CommitsWaitForDisk() bool { return d.dw.CommitsWaitForDisk() }

// viewMeter is a meter over a store that loads slices' views and answers
// the consumed-input check with them (the DSQL store).
type viewMeter struct {
	*meter
	il runtime.InputViewLoader
}

func (v *viewMeter) LoadViewFor(ctx context.Context, id string, inputs []string) (*runtime.Thread, []bool, error) {
	th, seen, err := v.il.LoadViewFor(ctx, id, inputs)
	if err == nil {
		v.count(th)
	}
	return th, seen, err
}

// wrap returns the meter and the store to hand the system (which keeps the
// optional interfaces of h).
func wrap(h runtime.HistoryStore) (*meter, runtime.HistoryStore) {
	m := &meter{HistoryStore: h}
	ll, ok := h.(runtime.LeaseLoader)
	if !ok {
		if il, ok := h.(runtime.InputViewLoader); ok {
			return m, &viewMeter{meter: m, il: il}
		}
		return m, m
	}
	lm := &leasedMeter{meter: m, ll: ll}
	if dw, ok := h.(interface{ CommitsWaitForDisk() bool }); ok {
		return m, &diskMeter{leasedMeter: lm, dw: dw}
	}
	return m, lm
}

func (m *meter) Load(ctx context.Context, id string) (*runtime.Thread, error) {
	th, err := m.HistoryStore.Load(ctx, id)
	if err == nil {
		m.count(th)
	}
	return th, err
}

func (l *leasedMeter) LoadLeased(ctx context.Context, id string) (*runtime.Thread, error) {
	th, err := l.ll.LoadLeased(ctx, id)
	if err == nil {
		l.count(th)
	}
	return th, err
}

func (l *leasedMeter) Release(id string, lease any) { l.ll.Release(id, lease) }

// Consumed passes runtime.ConsumedChecker on (a store whose leased loads
// leave history out has it).
func (l *leasedMeter) Consumed(ctx context.Context, id string, before int, ids []string) ([]bool, error) {
	if cc, ok := l.HistoryStore.(runtime.ConsumedChecker); ok {
		return cc.Consumed(ctx, id, before, ids)
	}
	return nil, errors.New("longrun: the store cannot check consumed inputs")
}

func (m *meter) Commit(ctx context.Context, c *runtime.Commit) error {
	err := m.HistoryStore.Commit(ctx, c)
	if err == nil {
		var b int64
		for i := range c.Append {
			b += itemBytes(&c.Append[i])
		}
		m.mu.Lock()
		m.storedBytes += b
		m.storedItems += int64(len(c.Append))
		m.mu.Unlock()
	}
	return err
}

func (m *meter) count(th *runtime.Thread) {
	var b int64
	for i := range th.Items {
		b += itemBytes(&th.Items[i])
	}
	m.mu.Lock()
	m.loads++
	m.loadedItems += int64(len(th.Items))
	m.loadedBytes += b
	m.mu.Unlock()
}

type meterCounts struct {
	loads, loadedItems, loadedBytes, storedBytes, storedItems int64
}

func (m *meter) counts() meterCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return meterCounts{m.loads, m.loadedItems, m.loadedBytes, m.storedBytes, m.storedItems}
}

// itemBytes is an item's payload: its strings and content, plus 16 bytes
// for kind, flags and time.
func itemBytes(it *runtime.Item) int64 {
	n := 16 + len(it.Input) + len(it.Text) + len(it.Reasoning) + len(it.CallID) + len(it.Name) + len(it.Args)
	for _, c := range it.Content {
		n += len(c.Text) + len(c.Data) + len(c.MediaType)
	}
	return int64(n)
}
