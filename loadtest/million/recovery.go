package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

type recovery struct {
	ready, consumed float64
	inFlight, lost  int
}

// killAndRecover sends a burst of messages to idle agents while the
// background load runs, SIGKILLs serve once half the burst was accepted,
// restarts it on the same directory, and checks that every message serve
// accepted (a 202: durable) before the kill is answered in its thread's
// history.
func killAndRecover(ctx context.Context, c config, p *serveProc, a *api, b *background, cfg string, idx []int) (recovery, error) {
	var rec recovery
	var mu sync.Mutex
	accepted := map[string]string{} // message ID -> thread
	var n atomic.Int64
	half := make(chan struct{})
	var once sync.Once
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for _, i := range idx {
		sem <- struct{}{}
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			defer func() { <-sem }()
			thread, id := agentName(i), fmt.Sprintf("kill-%s-%d", runTag, i)
			if a.post(ctx, thread, id, "Wake up: the deploy you waited for finished.") != nil {
				return // refused or cut by the kill: never accepted
			}
			mu.Lock()
			accepted[id] = thread
			mu.Unlock()
			if n.Add(1) >= int64(len(idx)/2) {
				once.Do(func() { close(half) })
			}
		}()
		select {
		case <-half:
		default:
			continue
		}
		break
	}
	<-half
	p.kill()
	wg.Wait()
	for id, thread := range b.stop() {
		accepted[id] = thread
	}
	a.stop()
	rec.inFlight = len(accepted)
	logf("killed serve (SIGKILL) with %d accepted messages not yet known answered; restarting", rec.inFlight)
	// the restart logs at info: what recovery did, with times
	infoCfg, err := serveConfigLogging(filepath.Dir(cfg), "sqlite", c.data, "info", "serve-recovery.json")
	if err != nil {
		return rec, err
	}
	q, err := startServe(ctx, c.bin, infoCfg, nil)
	if err != nil {
		return rec, err
	}
	defer q.stop()
	rec.ready = q.ready.Seconds()
	logf("restarted serve's log up to ready:\n%s", tail(q.logs.String()))
	qa := newAPI(q.url)
	deadline := time.Now().Add(5 * time.Minute)
	pending := accepted
	for len(pending) > 0 && time.Now().Before(deadline) {
		next := map[string]string{}
		for id, thread := range pending {
			items, _, err := qa.history(ctx, thread, 0)
			if err != nil || !answered(items, id) {
				next[id] = thread
			}
		}
		pending = next
		if len(pending) > 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	rec.consumed = time.Since(q.started).Seconds()
	rec.lost = len(pending)
	for id, thread := range pending {
		logf("lost: message %s of %s", id, thread)
		break
	}
	return rec, nil
}
