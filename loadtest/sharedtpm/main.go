// Command sharedtpm measures the shared token bucket of the serverless
// deployment (dedup.TokenBucket, AGENTSLICE_SHARED_TPM) on DynamoDB Local
// under concurrent slices, with the workload of `make loadtest-priority`
// (completions of 1,000 tokens, 400 ms ± 100 ms of model latency, up to
// 256 completions at once).
//
// `make loadtest-priority` drives serve in process, where the model's
// tokens_per_minute is enforced in memory and the bucket does not apply.
// Here each of -slices goroutines plays slice functions one after the
// other, doing what the slice function's model wrapper does
// (serverless.sharedTPM): take the completion's estimate from the bucket;
// when the bucket is short, wait what it says (on AWS the thread waits
// through the timers, an SQS delay of whole seconds, so the wait is
// rounded up to a second here); else run the simulated completion and
// give back what it did not use. A Take that fails (the bucket stayed
// contended) calls the model anyway, unmetered, as the wrapper does.
//
// It prints the tokens used against what the bucket allows (a full
// minute's tokens at the start, then the rate), the DynamoDB requests per
// completion, the lost races and the latency of a Take, then one JSON
// line. Run with AGENTSLICE_TEST_DYNAMODB_ENDPOINT set (scripts/services/
// dynamodb.sh). The latencies of DynamoDB Local on a shared machine are not
// DynamoDB's: the counts are the figures, the times only say the order.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/loadtest/hostinfo"
)

type config struct {
	endpoint string
	slices   int
	duration time.Duration
	tpm      int64
	tokens   int64
	estimate int64
	latency  time.Duration
	jitter   time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.endpoint, "endpoint", os.Getenv("AGENTSLICE_TEST_DYNAMODB_ENDPOINT"), "DynamoDB Local's URL")
	flag.IntVar(&c.slices, "slices", 256, "slice functions running at once (loadtest-priority's provider concurrency)")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "how long the slices run")
	flag.Int64Var(&c.tpm, "tpm", 600_000, "the bucket's tokens per minute (set below the demand so that the bucket binds)")
	flag.Int64Var(&c.tokens, "tokens", 1000, "tokens a completion uses (input + output)")
	flag.Int64Var(&c.estimate, "estimate", 1500, "tokens a completion takes from the bucket before it runs (the wrapper's estimate)")
	flag.DurationVar(&c.latency, "latency", 400*time.Millisecond, "the simulated model's median latency")
	flag.DurationVar(&c.jitter, "jitter", 200*time.Millisecond, "spread of the latency (uniform, ± half)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "sharedtpm:", err)
		os.Exit(1)
	}
}

// counting counts the bucket's DynamoDB requests and its lost races.
type counting struct {
	api             dedup.LedgerAPI
	gets, updates   atomic.Int64
	lost            atomic.Int64 // conditional updates that found the bucket changed
	takeMu          sync.Mutex
	takeLatencies   []time.Duration
	admitted, waits atomic.Int64
	failOpen        atomic.Int64
	used, unmetered atomic.Int64
	waitedNanos     atomic.Int64
}

func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	return c.api.GetItem(ctx, in, opts...)
}

func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	out, err := c.api.UpdateItem(ctx, in, opts...)
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		c.lost.Add(1)
	}
	return out, err
}

// Result is the JSON line printed last.
type Result struct {
	Slices          int     `json:"slices"`
	Seconds         float64 `json:"seconds"`
	TPM             int64   `json:"tpm"`
	Completions     int64   `json:"completions"`
	TokensUsed      int64   `json:"tokens_used"`
	Allowed         int64   `json:"tokens_allowed"`
	Overrun         int64   `json:"tokens_over_allowed"`
	Utilisation     float64 `json:"utilisation"`
	Waits           int64   `json:"bucket_waits"`
	FailOpen        int64   `json:"takes_failed_open"`
	Unmetered       int64   `json:"tokens_unmetered"`
	RequestsPerComp float64 `json:"dynamodb_requests_per_completion"`
	LostRaces       int64   `json:"lost_races"`
	TakeP50ms       float64 `json:"take_p50_ms"`
	TakeP99ms       float64 `json:"take_p99_ms"`
	Host            string  `json:"host"`
}

func run(c config) error {
	if c.endpoint == "" {
		return errors.New("no DynamoDB Local: set -endpoint or AGENTSLICE_TEST_DYNAMODB_ENDPOINT (scripts/services/dynamodb.sh)")
	}
	if c.slices <= 0 || c.tpm <= 0 || c.tokens <= 0 || c.estimate <= 0 || c.duration <= 0 {
		return errors.New("-slices, -tpm, -tokens, -estimate and -duration must be positive")
	}
	ctx := context.Background()
	client := dynamodb.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
		func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(c.endpoint) })
	table := fmt.Sprintf("load-sharedtpm-%08x", rand.Uint32())
	if err := dedup.CreateTable(ctx, client, table); err != nil {
		return fmt.Errorf("creating table %s: %w", table, err)
	}
	defer func() {
		_, _ = client.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}()
	cnt := &counting{api: client}
	bucket, err := dedup.NewTokenBucket(cnt, table, c.tpm, nil)
	if err != nil {
		return err
	}
	start := time.Now()
	deadline := start.Add(c.duration)
	var wg sync.WaitGroup
	for i := range c.slices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(i), 7))
			for time.Now().Before(deadline) {
				t0 := time.Now()
				wait, err := bucket.Take(ctx, "m", c.estimate)
				took := time.Since(t0)
				cnt.takeMu.Lock()
				cnt.takeLatencies = append(cnt.takeLatencies, took)
				cnt.takeMu.Unlock()
				if err != nil { // the wrapper calls the model anyway
					cnt.failOpen.Add(1)
					complete(c, rnd)
					cnt.unmetered.Add(c.tokens)
					cnt.used.Add(c.tokens)
					continue
				}
				if wait > 0 {
					cnt.waits.Add(1)
					d := (wait + time.Second - 1).Truncate(time.Second) // an SQS delay is whole seconds
					d = min(d, time.Until(deadline))
					cnt.waitedNanos.Add(int64(max(d, 0)))
					time.Sleep(max(d, 0))
					continue
				}
				cnt.admitted.Add(1)
				complete(c, rnd)
				cnt.used.Add(c.tokens)
				if err := bucket.Give(ctx, "m", c.estimate-c.tokens); err != nil {
					fmt.Fprintln(os.Stderr, "give:", err)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	lat := cnt.takeLatencies
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(int(p*float64(len(lat))), len(lat)-1)].Microseconds()) / 1000
	}
	comps := cnt.admitted.Load() + cnt.failOpen.Load()
	allowed := c.tpm + int64(float64(c.tpm)*elapsed.Minutes())
	r := Result{Slices: c.slices, Seconds: elapsed.Seconds(), TPM: c.tpm, Completions: comps, TokensUsed: cnt.used.Load(),
		Allowed: allowed, Overrun: max(cnt.used.Load()-allowed, 0), Utilisation: float64(cnt.used.Load()) / float64(allowed),
		Waits: cnt.waits.Load(), FailOpen: cnt.failOpen.Load(), Unmetered: cnt.unmetered.Load(),
		LostRaces: cnt.lost.Load(), TakeP50ms: pct(0.5), TakeP99ms: pct(0.99), Host: hostinfo.Machine()}
	if comps > 0 {
		r.RequestsPerComp = float64(cnt.gets.Load()+cnt.updates.Load()) / float64(comps)
	}
	fmt.Printf("%d slices for %.1fs against a bucket of %d tokens/min: %d completions, %d tokens used of %d allowed (%.1f%%, %d over)\n",
		r.Slices, r.Seconds, r.TPM, r.Completions, r.TokensUsed, r.Allowed, 100*r.Utilisation, r.Overrun)
	fmt.Printf("bucket waits %d, takes that failed open %d (%d tokens unmetered), lost races %d, %.2f DynamoDB requests per completion (waits included), take p50 %.1fms p99 %.1fms\n",
		r.Waits, r.FailOpen, r.Unmetered, r.LostRaces, r.RequestsPerComp, r.TakeP50ms, r.TakeP99ms)
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	return nil
}

// complete is the simulated completion: its latency.
func complete(c config, rnd *rand.Rand) {
	d := c.latency
	if c.jitter > 0 {
		d += time.Duration(rnd.Int64N(int64(c.jitter))) - c.jitter/2
	}
	time.Sleep(max(d, 0))
}
