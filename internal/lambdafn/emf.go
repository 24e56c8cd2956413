package lambdafn

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// DefaultNamespace is the CloudWatch namespace of the functions' metrics.
const DefaultNamespace = "agentslice"

// Metric is one value of an EMF record.
type Metric struct {
	Name  string
	Unit  string // CloudWatch unit: "Milliseconds", "Count", ...
	Value float64
}

// Metrics writes CloudWatch embedded metric format (EMF) records: one JSON
// object per line on W. In Lambda, W is stdout and CloudWatch Logs extracts
// the metrics from the function's log stream; no agent or API call is
// involved. See
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
type Metrics struct {
	W         io.Writer
	Namespace string           // default DefaultNamespace
	Now       func() time.Time // default time.Now
}

// emfDirective is the "_aws" member of an EMF record.
type emfDirective struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []emfMetric `json:"CloudWatchMetrics"`
}

type emfMetric struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []emfMetricN `json:"Metrics"`
}

type emfMetricN struct {
	Name string `json:"Name"`
	Unit string `json:"Unit,omitempty"`
}

// Emit writes one record with the given dimensions (one dimension set of
// all of them), metrics and extra properties. Properties are searchable
// in CloudWatch Logs Insights but are not metrics; they must not use the
// names of dimensions or metrics.
func (m *Metrics) Emit(dims map[string]string, metrics []Metric, props map[string]any) error {
	if m == nil || m.W == nil {
		return nil
	}
	now, ns := time.Now, m.Namespace
	if m.Now != nil {
		now = m.Now
	}
	if ns == "" {
		ns = DefaultNamespace
	}
	rec := make(map[string]any, len(dims)+len(metrics)+len(props)+1)
	for k, v := range props {
		rec[k] = v
	}
	keys := make([]string, 0, len(dims))
	for k, v := range dims {
		keys = append(keys, k)
		rec[k] = v
	}
	sort.Strings(keys)
	names := make([]emfMetricN, len(metrics))
	for i, mt := range metrics {
		names[i] = emfMetricN{Name: mt.Name, Unit: mt.Unit}
		rec[mt.Name] = mt.Value
	}
	rec["_aws"] = emfDirective{
		Timestamp:         now().UnixMilli(),
		CloudWatchMetrics: []emfMetric{{Namespace: ns, Dimensions: [][]string{keys}, Metrics: names}},
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("lambdafn: encoding an EMF record: %w", err)
	}
	_, err = m.W.Write(append(b, '\n'))
	return err
}

// SyncWriter serialises writes, so that log lines and EMF records written
// from several goroutines to one stream never interleave.
type SyncWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (s *SyncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.W.Write(p)
}

// NewLogger returns the JSON logger the functions use, writing to w.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
