package serverless

import (
	"context"
	"net/http"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Counter counts the storage and queue round trips made under one context
// (one slice). It is safe for concurrent use (the dedup store marks several
// IDs with parallel requests).
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
}

type counterKey struct{}

// WithCounter returns a context that counts round trips into a new Counter.
func WithCounter(ctx context.Context) (context.Context, *Counter) {
	c := &Counter{counts: map[string]int{}}
	return context.WithValue(ctx, counterKey{}, c), c
}

// CounterFrom returns the Counter of ctx, or nil.
func CounterFrom(ctx context.Context) *Counter {
	c, _ := ctx.Value(counterKey{}).(*Counter)
	return c
}

func count(ctx context.Context, what string) {
	if c := CounterFrom(ctx); c != nil {
		c.mu.Lock()
		c.counts[what]++
		c.mu.Unlock()
	}
}

// Total returns the number of round trips counted.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// Counts returns the round trips by kind ("sql", "sqs", "dynamodb", ...).
func (c *Counter) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// kinds returns the counted kinds in a stable order, for logs.
func (c *Counter) kinds() []string {
	m := c.Counts()
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// countingClient is an aws.HTTPClient that counts each request (each SDK
// attempt, retries included) under label.
type countingClient struct {
	label string
	inner aws.HTTPClient
}

func (c countingClient) Do(req *http.Request) (*http.Response, error) {
	count(req.Context(), c.label)
	return c.inner.Do(req)
}

// withCountingHTTP returns a copy of cfg whose HTTP client counts requests
// as label.
func withCountingHTTP(cfg aws.Config, label string) aws.Config {
	inner := cfg.HTTPClient
	if inner == nil {
		inner = awshttp.NewBuildableClient()
	}
	cfg.HTTPClient = countingClient{label: label, inner: inner}
	return cfg
}

// sqlTracer counts pgx round trips: each query and each batch (a batch is
// sent as one pipeline), and each statement preparation that went to the
// server (the first use of a statement on a connection).
type sqlTracer struct{}

var (
	_ pgx.QueryTracer   = sqlTracer{}
	_ pgx.BatchTracer   = sqlTracer{}
	_ pgx.PrepareTracer = sqlTracer{}
)

func (sqlTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	count(ctx, "sql")
	return ctx
}

func (sqlTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (sqlTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	count(ctx, "sql")
	return ctx
}

func (sqlTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (sqlTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (sqlTracer) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}

func (sqlTracer) TracePrepareEnd(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareEndData) {
	if !d.AlreadyPrepared {
		count(ctx, "sql_prepare")
	}
}

// instrumentPool makes pc count round trips: the tracer above, plus the
// liveness ping a pool sends before handing out a connection that sat idle.
func instrumentPool(pc *pgxpool.Config) {
	pc.ConnConfig.Tracer = sqlTracer{}
	if should := pc.ShouldPing; should != nil {
		pc.ShouldPing = func(ctx context.Context, p pgxpool.ShouldPingParams) bool {
			ping := should(ctx, p)
			if ping {
				count(ctx, "sql_ping")
			}
			return ping
		}
	}
}
