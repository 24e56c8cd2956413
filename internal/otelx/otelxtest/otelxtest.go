// Package otelxtest records the engine's spans in memory for tests (the
// SDK's tracetest exporter, synchronously) and prints them as a tree.
package otelxtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentslice/agentslice/internal/otelx"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Recorder is tracing that keeps every ended span in memory and counts
// the ended slice spans of each thread.
type Recorder struct {
	*otelx.Tracing
	Exporter *tracetest.InMemoryExporter
	sig      *sliceSignal
}

// New returns a Recorder that samples every trace.
func New() *Recorder {
	r := &Recorder{Exporter: tracetest.NewInMemoryExporter(), sig: &sliceSignal{ended: map[string]int{}, changed: make(chan struct{}, 1)}}
	// The exporter is a syncer, registered before the signal: a slice
	// span is exported by the time it is counted.
	r.Tracing = otelx.New(sdktrace.WithSyncer(r.Exporter), sdktrace.WithSpanProcessor(r.sig),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	return r
}

// WaitSlices waits until n slice spans of thread have ended in all, up to
// timeout; false when fewer did.
func (r *Recorder) WaitSlices(thread string, n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		if r.sig.count(thread) >= n {
			return true
		}
		select {
		case <-r.sig.changed:
		case <-deadline:
			return false
		}
	}
}

// Ended is how many slice spans of thread have ended.
func (r *Recorder) Ended(thread string) int { return r.sig.count(thread) }

// Spans is what was exported so far.
func (r *Recorder) Spans() tracetest.SpanStubs { return r.Exporter.GetSpans() }

// sliceSignal counts the ended slice spans per thread.
type sliceSignal struct {
	mu      sync.Mutex
	ended   map[string]int
	changed chan struct{} // a token after each count
}

func (s *sliceSignal) count(thread string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended[thread]
}

func (*sliceSignal) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *sliceSignal) OnEnd(sp sdktrace.ReadOnlySpan) {
	if sp.Name() != runtime.SpanSlice {
		return
	}
	for _, kv := range sp.Attributes() {
		if kv.Key == runtime.AttrThread {
			s.mu.Lock()
			s.ended[kv.Value.AsString()]++
			s.mu.Unlock()
			select {
			case s.changed <- struct{}{}:
			default:
			}
		}
	}
}
func (*sliceSignal) Shutdown(context.Context) error   { return nil }
func (*sliceSignal) ForceFlush(context.Context) error { return nil }

// Attr is the value of span attribute key as a string ("" when unset).
func Attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// Find returns the spans named name (all when name is "").
func Find(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if name == "" || s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// ByID returns the span with ID id.
func ByID(spans tracetest.SpanStubs, id trace.SpanID) (tracetest.SpanStub, bool) {
	for _, s := range spans {
		if s.SpanContext.SpanID() == id {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// SliceOf returns the slice span s belongs to (s itself for a slice span):
// the nearest ancestor named slice.
func SliceOf(spans tracetest.SpanStubs, s tracetest.SpanStub) (tracetest.SpanStub, bool) {
	for s.Name != runtime.SpanSlice {
		p, ok := ByID(spans, s.Parent.SpanID())
		if !ok {
			return tracetest.SpanStub{}, false
		}
		s = p
	}
	return s, true
}

// shown are the attributes Tree prints, in this order.
var shown = []string{runtime.AttrThread, runtime.AttrBatch, runtime.AttrVersion, runtime.AttrOutcome,
	runtime.AttrGenAIModel, runtime.AttrGenAIInputTokens, runtime.AttrGenAIOutputTokens, runtime.AttrGenAIFinish,
	runtime.AttrGenAIToolName}

// Tree prints spans as trees, one line per span ordered by start time
// under its parent: its name, [+its start from the root's, its duration],
// its main attributes and links. Spans whose parent
// is not among spans are roots.
func Tree(spans tracetest.SpanStubs) string {
	kids := map[trace.SpanID][]tracetest.SpanStub{}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		if _, ok := ByID(spans, s.Parent.SpanID()); ok && s.Parent.IsValid() {
			kids[s.Parent.SpanID()] = append(kids[s.Parent.SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) }
	slices.SortStableFunc(roots, byStart)
	var b strings.Builder
	var origin time.Time
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		fmt.Fprintf(&b, "%s%s [+%s %s]", strings.Repeat("  ", depth), s.Name,
			s.StartTime.Sub(origin).Round(time.Microsecond), s.EndTime.Sub(s.StartTime).Round(time.Microsecond))
		for _, k := range shown {
			if v := Attr(s, k); v != "" {
				fmt.Fprintf(&b, " %s=%s", strings.TrimPrefix(strings.TrimPrefix(k, "agentslice."), "gen_ai."), v)
			}
		}
		if len(s.Links) > 0 {
			fmt.Fprintf(&b, " links=%d", len(s.Links))
		}
		if s.Status.Code.String() == "Error" {
			fmt.Fprintf(&b, " error=%q", s.Status.Description)
		}
		b.WriteByte('\n')
		k := kids[s.SpanContext.SpanID()]
		slices.SortStableFunc(k, byStart)
		for _, c := range k {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		origin = r.StartTime
		fmt.Fprintf(&b, "trace %s\n", r.SpanContext.TraceID())
		walk(r, 1)
	}
	return b.String()
}
