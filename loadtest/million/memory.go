package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

type memoryResult struct {
	agents int
	rate   float64
	wake   wakeStats
}

// memoryRun measures the same wake-up figures on serve's memory store:
// agents are created through the API (one message each; the memory store
// starts empty), then the throughput, the background load at half of it
// and the wake-ups as on the durable store.
func memoryRun(ctx context.Context, c config, work string, rng *rand.Rand) (memoryResult, error) {
	m := memoryResult{agents: c.memAgents}
	cfg, err := serveConfig(work, "memory", "")
	if err != nil {
		return m, err
	}
	p, err := startServe(ctx, c.bin, cfg, nil)
	if err != nil {
		return m, err
	}
	defer p.stop()
	a := newAPI(p.url)
	if err := a.stream(ctx); err != nil {
		return m, err
	}
	defer a.stop()
	logf("memory store: creating %d agents through the API", c.memAgents)
	sem := make(chan struct{}, 256)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range c.memAgents {
		sem <- struct{}{}
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			defer func() { <-sem }()
			thread := agentName(i)
			ch := a.wait(thread)
			err := a.post(ctx, thread, "create", userText(thread, 1))
			if err == nil {
				select {
				case <-ch:
				case <-time.After(time.Minute):
					err = fmt.Errorf("no reply from %s in a minute", thread)
				}
			} else {
				a.unwait(thread)
			}
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return m, firstErr
	}
	bg := make([]string, min(c.bgAgents, c.memAgents/2))
	for i := range bg {
		bg[i] = agentName(i)
	}
	if m.rate, err = throughput(ctx, a, bg, c.satSeconds, "mem"); err != nil {
		return m, err
	}
	taken := map[int]bool{}
	for i := range bg {
		taken[i] = true
	}
	var agents []string
	for _, i := range pick(rng, 0, c.memAgents, min(c.wakeN, c.memAgents-len(bg)), taken) {
		agents = append(agents, agentName(i))
	}
	b := startBackground(ctx, a, bg, m.rate/2, "mem")
	m.wake = wake(ctx, a, agents, c.wakeRate, c.wakeConc, "mem")
	b.stop()
	logf("memory store (%d agents, %.0f messages/s, background %.0f/s): wake-up p50 %.2f ms, p99 %.2f ms, max %.2f ms",
		c.memAgents, m.rate, m.rate/2, m.wake.P50, m.wake.P99, m.wake.Max)
	return m, nil
}
