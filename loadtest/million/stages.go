package main

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The wake-up's stages (issue 35): where the time from the POST to the
// reply goes inside serve. Serve runs with its OpenTelemetry tracing on,
// exporting over OTLP/HTTP to a receiver in the harness, sampling only the
// traces a message's traceparent asks for (parentbased_traceidratio with
// ratio 0): each wake-up POST carries a sampled traceparent of its own,
// the background load none, so only the wake-ups' slices are traced. The
// harness joins each wake-up's spans (slice, load, chat, commit, ...) with
// its own three times: POST sent, 202 received, reply event received.

// stageRecorder is the OTLP receiver and the wake-ups' times.
type stageRecorder struct {
	srv *http.Server
	url string

	mu    sync.Mutex
	spans map[string][]span // by trace ID (hex)
	wakes map[string]*wakeTimes
}

type span struct {
	name       string
	start, end time.Time
}

type wakeTimes struct{ sent, accepted, replied time.Time }

// startStages listens on a port of the loopback for serve's OTLP export.
func startStages() (*stageRecorder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &stageRecorder{url: "http://" + ln.Addr().String(), spans: map[string][]span{}, wakes: map[string]*wakeTimes{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.export), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }() // ends at close
	return r, nil
}

func (r *stageRecorder) close() { _ = r.srv.Close() }

// env is what serve needs to export its sampled traces here, flushed
// every 200 ms.
func (r *stageRecorder) env() []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0", "OTEL_BSP_SCHEDULE_DELAY=200"}
}

func (r *stageRecorder) export(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var msg coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				id := hex.EncodeToString(sp.TraceId)
				r.spans[id] = append(r.spans[id], span{sp.Name, time.Unix(0, int64(sp.StartTimeUnixNano)), time.Unix(0, int64(sp.EndTimeUnixNano))})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// traceparent returns a new sampled W3C traceparent and its trace ID.
func newTraceparent() (tp, traceID string) {
	var b [24]byte
	_, _ = rand.Read(b[:])
	traceID, spanID := hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	return "00-" + traceID + "-" + spanID + "-01", traceID
}

// record keeps one wake-up's own times.
func (r *stageRecorder) record(traceID string, sent, accepted, replied time.Time) {
	r.mu.Lock()
	r.wakes[traceID] = &wakeTimes{sent, accepted, replied}
	r.mu.Unlock()
}

// stageStats is the breakdown of the wake-ups: per stage, p50, p99 and
// mean in ms over the wake-ups whose trace arrived.
type stageStats struct {
	Traced int                   `json:"traced"`
	Stages map[string]stageQuant `json:"stages"`
	Order  []string              `json:"order"`
	// P99CommitShare is the share of the slowest wake-ups' time (those
	// whose total is at or above the total's p99) spent in the commit
	// span: the journal's group commit (its queue behind other commits,
	// the group's write and its fdatasync; on a busy 2-core machine mostly
	// the queue, see docs/performance.md), by tailShare.
	P99CommitShare float64 `json:"p99_commit_share"`
}

type stageQuant struct {
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	Mean float64 `json:"mean_ms"`
}

// breakdown waits for the last exports and computes the stages:
//
//	post      POST sent to 202 (the durable accept: journal write and fsync)
//	queued    202 to the first slice's start (scheduling; negative when the
//	          slice started before the 202 reached the harness)
//	load      the load span(s): history from the store (a frozen thread
//	          read back from SQLite)
//	chat      the simulated model's completion
//	commit    the commit span(s): the journal's group commit and fsync
//	slice_other  the rest of the slice(s)
//	between   between the slices of one wake-up (a tool call's result
//	          queued again), if more than one
//	deliver   the last slice's end to the reply event at the harness
//	total     202 to the reply event (the figure of wake_p50/p99)
func (r *stageRecorder) breakdown(ctx context.Context, wait time.Duration) stageStats {
	select { // the batch span processor's last exports (every 200 ms)
	case <-time.After(wait):
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	order := []string{"post", "queued", "load", "chat", "commit", "slice_other", "between", "deliver", "total"}
	vals := map[string][]float64{}
	traced := 0
	var totals, commits []float64 // per wake-up, for the tail's commit share
	for id, wt := range r.wakes {
		sps := r.spans[id]
		var slices_ []span
		sum := map[string]time.Duration{}
		for _, sp := range sps {
			if sp.name == "slice" {
				slices_ = append(slices_, sp)
			} else {
				sum[sp.name] += sp.end.Sub(sp.start)
			}
		}
		if len(slices_) == 0 {
			continue
		}
		traced++
		slices.SortFunc(slices_, func(a, b span) int { return a.start.Compare(b.start) })
		var inSlices time.Duration
		for _, s := range slices_ {
			inSlices += s.end.Sub(s.start)
		}
		first, last := slices_[0], slices_[len(slices_)-1]
		add := func(k string, d time.Duration) { vals[k] = append(vals[k], ms(d)) }
		add("post", wt.accepted.Sub(wt.sent))
		add("queued", first.start.Sub(wt.accepted))
		add("load", sum["load"])
		add("chat", sum["chat"])
		add("commit", sum["commit"])
		add("slice_other", inSlices-sum["load"]-sum["chat"]-sum["commit"])
		add("between", last.end.Sub(first.start)-inSlices)
		add("deliver", wt.replied.Sub(last.end))
		add("total", wt.replied.Sub(wt.accepted))
		totals, commits = append(totals, ms(wt.replied.Sub(wt.accepted))), append(commits, ms(sum["commit"]))
		for name, d := range sum {
			if !slices.Contains(order, name) {
				add(name, d)
			}
		}
	}
	st := stageStats{Traced: traced, Stages: map[string]stageQuant{}, Order: order, P99CommitShare: tailShare(totals, commits, 0.99)}
	for k, xs := range vals {
		p50, p99, _ := percentiles(xs)
		var s float64
		for _, x := range xs {
			s += x
		}
		st.Stages[k] = stageQuant{P50: p50, P99: p99, Mean: s / float64(len(xs))}
		if !slices.Contains(order, k) {
			st.Order = append(st.Order, k)
		}
	}
	r.wakes = map[string]*wakeTimes{}
	r.spans = map[string][]span{}
	return st
}

func (st stageStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d traced:", st.Traced)
	for _, k := range st.Order {
		if q, ok := st.Stages[k]; ok {
			fmt.Fprintf(&b, " %s %.2f/%.2f", k, q.P50, q.P99)
		}
	}
	fmt.Fprintf(&b, " (p50/p99 ms); commit %.0f%% of the wake-ups at or above total's p99", 100*st.P99CommitShare)
	return b.String()
}

// tpKey carries a wake-up's traceparent to api.post.
type tpKey struct{}

func withTraceparent(ctx context.Context, tp string) context.Context {
	return context.WithValue(ctx, tpKey{}, tp)
}

// stagesEnv is serve's environment for r (none when r is nil).
func stagesEnv(r *stageRecorder) []string {
	if r == nil {
		return nil
	}
	return r.env()
}
