package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// peer is one system under the workload: the harness starts its processes,
// then drives each agent through it. Every method but start and stop is
// called concurrently.
type peer interface {
	name() string
	// start brings the system up; cb.url is where its workers post
	// "waiting" and "done".
	start(ctx context.Context, cb *callbacks, workDir string) error
	// pids are the system's processes whose memory and CPU count.
	pids() []int
	// begin makes the agent exist (DBOS starts its workflow; Restate
	// creates the object on its first call, so nothing).
	begin(ctx context.Context, agent string, turns int) error
	// user delivers the user message of the turn.
	user(ctx context.Context, agent string, turn int) error
	// toolResult delivers the tool result, the external event, to the
	// waiting agent; id is what its worker posted with "waiting".
	toolResult(ctx context.Context, agent string, turn int, id string) error
	// diskBytes is what the system's durable state takes on disk now.
	diskBytes(ctx context.Context) (int64, error)
	settings() map[string]string
	stop()
}

// signal is a worker's callback: the agent is waiting for its tool result
// (id names the awakeable or workflow), or its turn is done.
type signal struct {
	Agent string `json:"agent"`
	Turn  int    `json:"turn"`
	ID    string `json:"id"`
}

// callbacks is the harness's HTTP endpoint for the workers: POST /waiting
// and POST /done, each delivered to the agent's channel.
type callbacks struct {
	mu      sync.Mutex
	waiting map[string]chan signal
	done    map[string]chan signal
	srv     *http.Server
	url     string
	dropped atomic.Int64
}

func newCallbacks() (*callbacks, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cb := &callbacks{waiting: map[string]chan signal{}, done: map[string]chan signal{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /waiting", func(w http.ResponseWriter, r *http.Request) { cb.handle(w, r) })
	mux.HandleFunc("POST /done", func(w http.ResponseWriter, r *http.Request) { cb.handle(w, r) })
	cb.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	cb.url = "http://" + ln.Addr().String()
	go cb.srv.Serve(ln)
	return cb, nil
}

func (cb *callbacks) chans(agent string) (chan signal, chan signal) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	w, ok := cb.waiting[agent]
	if !ok {
		// Buffered: a journaled callback may be replayed (at least once).
		w = make(chan signal, 4)
		cb.waiting[agent] = w
		cb.done[agent] = make(chan signal, 4)
	}
	return w, cb.done[agent]
}

func (cb *callbacks) handle(w http.ResponseWriter, r *http.Request) {
	var s signal
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&s); err != nil || s.Agent == "" {
		http.Error(w, "want {agent, turn, id}", http.StatusBadRequest)
		return
	}
	cb.deliver(strings.HasSuffix(r.URL.Path, "/waiting"), s)
	w.WriteHeader(http.StatusNoContent)
}

// deliver hands s to the agent's waiting (or done) channel.
func (cb *callbacks) deliver(waiting bool, s signal) {
	wc, dc := cb.chans(s.Agent)
	c := dc
	if waiting {
		c = wc
	}
	select {
	case c <- s:
	default:
		cb.dropped.Add(1)
	}
}

// await takes the agent's next signal for turn from c (a replayed one of
// an earlier turn is skipped).
func await(ctx context.Context, c chan signal, turn int, what string, timeout time.Duration) (signal, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case s := <-c:
			if s.Turn == turn {
				return s, nil
			}
		case <-t.C:
			return signal{}, fmt.Errorf("no %q signal for turn %d within %s", what, turn, timeout)
		case <-ctx.Done():
			return signal{}, ctx.Err()
		}
	}
}

// errOverLimit is what drive's memory sampler stops it with.
var errOverLimit = errors.New("the system's processes passed the memory limit")

// driveResult is what one run of the workload on a peer measured.
type driveResult struct {
	completions int64
	seconds     float64
	cpu         time.Duration
	waitingIDs  map[string]string // agent -> id of its last turn's wait
}

// drive runs agents prefix-000000 .. prefix-(n-1) through turns turns, at most conc turns in
// flight, leaving every agent waiting for the tool result of its last
// turn. Completions counted: two per finished turn, one for the last.
//
// limit, when positive, bounds what the system's processes may hold (sum
// of Pss): a sampler checks it twice a second and stops the drive with an
// error wrapping errOverLimit once it is passed.
func drive(ctx context.Context, p peer, cb *callbacks, prefix string, n, turns, conc int, timeout time.Duration, limit int64) (driveResult, error) {
	var res driveResult
	res.waitingIDs = make(map[string]string, n)
	var mu sync.Mutex
	var firstErr error
	var completions, begun atomic.Int64
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	pids := p.pids()
	t0, c0 := time.Now(), cpuOf(pids)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		mu.Unlock()
	}
	if limit > 0 {
		done := make(chan struct{})
		defer close(done)
		go func() {
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-tick.C:
					if m := memOf(p.pids()); m.PSS > limit {
						fail(fmt.Errorf("%w: %d MiB held, over %d MiB, with %d of this drive's %d agents begun and %d completions", errOverLimit, m.PSS>>20, limit>>20, begun.Load(), n, completions.Load()))
						return
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		agent := fmt.Sprintf("%s-%06d", prefix, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			wc, dc := cb.chans(agent)
			sem <- struct{}{}
			begun.Add(1)
			<-sem
			if err := p.begin(ctx, agent, turns); err != nil {
				fail(fmt.Errorf("%s: begin: %w", agent, err))
				return
			}
			for turn := 0; turn < turns; turn++ {
				sem <- struct{}{}
				err := func() error {
					defer func() { <-sem }()
					if err := p.user(ctx, agent, turn); err != nil {
						return fmt.Errorf("user message: %w", err)
					}
					s, err := await(ctx, wc, turn, "waiting", timeout)
					if err != nil {
						return err
					}
					completions.Add(1)
					if turn == turns-1 {
						mu.Lock()
						res.waitingIDs[agent] = s.ID
						mu.Unlock()
						return nil
					}
					if err := p.toolResult(ctx, agent, turn, s.ID); err != nil {
						return fmt.Errorf("tool result: %w", err)
					}
					if _, err := await(ctx, dc, turn, "done", timeout); err != nil {
						return err
					}
					completions.Add(1)
					return nil
				}()
				if err != nil {
					fail(fmt.Errorf("%s turn %d: %w", agent, turn, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	res.completions = completions.Load()
	res.seconds = time.Since(t0).Seconds()
	res.cpu = cpuOf(pids) - c0
	return res, nil
}

// wake releases every waiting agent's last tool result: conc-1 releasers
// work through the agents as the background load, while one releases
// samples agents one at a time and times each from the event sent to the
// agent's "done" (its wake-up, one completion, its callback).
func wake(ctx context.Context, p peer, cb *callbacks, ids map[string]string, turns, conc, samples int, timeout time.Duration) ([]time.Duration, error) {
	agents := make([]string, 0, len(ids))
	for a := range ids {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	samples = min(samples, len(agents))
	sampled, rest := agents[:samples], agents[samples:]
	last := turns - 1
	release := func(agent string) (time.Duration, error) {
		_, dc := cb.chans(agent)
		t0 := time.Now()
		if err := p.toolResult(ctx, agent, last, ids[agent]); err != nil {
			return 0, err
		}
		if _, err := await(ctx, dc, last, "done", timeout); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}
	var next atomic.Int64
	var bg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	stopBG := make(chan struct{})
	for range max(conc-1, 1) {
		bg.Add(1)
		go func() {
			defer bg.Done()
			for {
				select {
				case <-stopBG:
					return
				default:
				}
				i := int(next.Add(1)) - 1
				if i >= len(rest) {
					return
				}
				if _, err := release(rest[i]); err != nil {
					errMu.Lock()
					firstErr = errors.Join(firstErr, fmt.Errorf("%s: %w", rest[i], err))
					errMu.Unlock()
					return
				}
			}
		}()
	}
	var lat []time.Duration
	for i, a := range sampled {
		// Spread the samples over the background releases, so each one
		// wakes while the others are being woken.
		for int(next.Load()) < i*len(rest)/samples && int(next.Load()) < len(rest) {
			time.Sleep(time.Millisecond)
		}
		d, err := release(a)
		if err != nil {
			close(stopBG)
			bg.Wait()
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		lat = append(lat, d)
	}
	bg.Wait()
	close(stopBG)
	return lat, firstErr
}

// quantile of sorted durations, in milliseconds.
func quantileMS(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q * float64(len(s)-1))
	return float64(s[i]) / float64(time.Millisecond)
}
