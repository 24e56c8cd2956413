package dedup_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

const endpointVar = "AGENTSLICE_TEST_DYNAMODB_ENDPOINT"

func client(endpoint string, opts ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.NewFromConfig(awstest.Config(), append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, opts...)...)
}

var tables atomic.Int64

// newTable creates a fresh table on DynamoDB Local and deletes it when the
// test ends.
func newTable(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	c := client(testenv.Need(t, endpointVar))
	name := awstest.Name(t, "-"+strconv.FormatInt(tables.Add(1), 10))
	ctx := context.Background()
	if err := dedup.CreateTable(ctx, c, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return c, name
}

// table is a store's table on DynamoDB Local, for inspecting its items.
type table struct {
	c    *dynamodb.Client
	name string
}

func newStore(t *testing.T, cfg dedup.Config) (*dedup.Store, table) {
	t.Helper()
	c, name := newTable(t)
	cfg.Table = name
	s, err := dedup.New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, table{c, name}
}

func TestConformance(t *testing.T) {
	storetest.RunDedup(t, func(t *testing.T) runtime.DedupStore {
		s, _ := newStore(t, dedup.Config{})
		return s
	})
}

func TestCreateTableTwiceAndTTL(t *testing.T) {
	c, name := newTable(t)
	ctx := context.Background()
	if err := dedup.CreateTable(ctx, c, name); err != nil {
		t.Fatalf("creating an existing table: %v", err)
	}
	d, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(d.TimeToLiveDescription.AttributeName); got != "expires_at" || d.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Fatalf("TTL %q %s, want expires_at ENABLED", got, d.TimeToLiveDescription.TimeToLiveStatus)
	}
	tab, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	ks := tab.Table.KeySchema
	if len(ks) != 1 || aws.ToString(ks[0].AttributeName) != "pk" || ks[0].KeyType != types.KeyTypeHash {
		t.Fatalf("key schema %+v, want pk HASH only", ks)
	}
}

// Each mark is its own small item: nothing grows with the thread.
func TestOneSmallItemPerID(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, c := newStore(t, dedup.Config{TTL: time.Hour, Now: func() time.Time { return now }})
	ctx := context.Background()
	ids := make([]string, 250)
	for i := range ids {
		ids[i] = fmt.Sprintf("msg-%d", i)
	}
	for i := 0; i < len(ids); i += 50 {
		if err := s.Mark(ctx, "thread-big", ids[i:i+50]); err != nil {
			t.Fatal(err)
		}
	}
	items := scan(t, c)
	if len(items) != len(ids) {
		t.Fatalf("%d items after marking %d IDs, want one each", len(items), len(ids))
	}
	for pk, exp := range items {
		if !strings.HasPrefix(pk, "thread-big msg-") || exp != now.Add(time.Hour).Unix() {
			t.Fatalf("item pk=%q expires_at=%d", pk, exp)
		}
	}
}

func TestMarkKeepsFirstExpiryAndReplacesExpired(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s, c := newStore(t, dedup.Config{TTL: time.Hour, Now: clock})
	ctx := context.Background()
	first := clock().Add(time.Hour).Unix()

	if err := s.Mark(ctx, "t", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	advance(30 * time.Minute)
	if err := s.Mark(ctx, "t", []string{"a", "a"}); err != nil {
		t.Fatalf("re-mark: %v", err)
	}
	if got := scan(t, c)["t a"]; got != first {
		t.Fatalf("re-mark moved expiry to %d, want %d", got, first)
	}
	advance(31 * time.Minute) // past the first expiry; DynamoDB has not deleted it yet
	seen, err := s.Seen(ctx, "t", []string{"a"})
	if err != nil || seen[0] {
		t.Fatalf("expired mark: seen=%v err=%v, want not seen", seen, err)
	}
	if err := s.Mark(ctx, "t", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if got, want := scan(t, c)["t a"], clock().Add(time.Hour).Unix(); got != want {
		t.Fatalf("expired mark not replaced: expiry %d, want %d", got, want)
	}
	if seen, err := s.Seen(ctx, "t", []string{"a"}); err != nil || !seen[0] {
		t.Fatalf("after re-marking an expired ID: seen=%v err=%v", seen, err)
	}
}

// BatchGetItem rejects duplicate keys; Seen must not pass them on.
func TestSeenWithRepeatedIDs(t *testing.T) {
	s, _ := newStore(t, dedup.Config{})
	ctx := context.Background()
	if err := s.Mark(ctx, "t", []string{"x"}); err != nil {
		t.Fatal(err)
	}
	seen, err := s.Seen(ctx, "t", []string{"x", "y", "x", "y"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[true false true false]" {
		t.Fatalf("seen %v", seen)
	}
	if seen, err := s.Seen(ctx, "t", nil); err != nil || len(seen) != 0 {
		t.Fatalf("no IDs: %v %v", seen, err)
	}
}

func TestInvalidIDs(t *testing.T) {
	// No server needed: IDs are checked before any request.
	s, err := dedup.New(client("http://127.0.0.1:1"), dedup.Config{Table: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		thread string
		ids    []string
	}{
		{"", []string{"a"}},
		{"a b", []string{"c"}},
		{"a", []string{"b c"}},
		{"a", []string{""}},
	} {
		if err := s.Mark(ctx, tc.thread, tc.ids); !errors.Is(err, dedup.ErrInvalidID) {
			t.Errorf("Mark(%q, %q) = %v, want ErrInvalidID", tc.thread, tc.ids, err)
		}
		if _, err := s.Seen(ctx, tc.thread, tc.ids); !errors.Is(err, dedup.ErrInvalidID) {
			t.Errorf("Seen(%q, %q) = %v, want ErrInvalidID", tc.thread, tc.ids, err)
		}
	}
}

func TestNewValidatesConfig(t *testing.T) {
	c := client("http://127.0.0.1:1")
	if _, err := dedup.New(c, dedup.Config{}); err == nil || !strings.Contains(err.Error(), "Table") {
		t.Fatalf("missing table: %v", err)
	}
	if _, err := dedup.New(nil, dedup.Config{Table: "x"}); err == nil {
		t.Fatal("nil client accepted")
	}
	if _, err := dedup.New(c, dedup.Config{Table: "x", TTL: -time.Second}); err == nil {
		t.Fatal("negative TTL accepted")
	}
}

// scan returns the table's items as pk -> expires_at.
func scan(t *testing.T, tb table) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	p := dynamodb.NewScanPaginator(tb.c, &dynamodb.ScanInput{TableName: aws.String(tb.name)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if len(it) != 2 {
				t.Fatalf("item has %d attributes, want pk and expires_at only: %v", len(it), it)
			}
			exp, _ := strconv.ParseInt(it["expires_at"].(*types.AttributeValueMemberN).Value, 10, 64)
			out[it["pk"].(*types.AttributeValueMemberS).Value] = exp
		}
	}
	return out
}

// fakeDynamo answers DynamoDB JSON-protocol requests with canned responses.
// DynamoDB Local never throttles and never leaves keys unprocessed, so these
// paths are tested against this fake instead.
func fakeDynamo(t *testing.T, respond func(n int, target string, body []byte) (int, string)) *dynamodb.Client {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status, resp := respond(int(n.Add(1)), r.Header.Get("X-Amz-Target"), body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, resp)
	}))
	t.Cleanup(srv.Close)
	return client(srv.URL, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
}

func TestThrottlingIsRetryableError(t *testing.T) {
	for _, code := range []string{"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"} {
		t.Run(code, func(t *testing.T) {
			c := fakeDynamo(t, func(int, string, []byte) (int, string) {
				return 400, `{"__type":"com.amazonaws.dynamodb.v20120810#` + code + `","message":"slow down"}`
			})
			s, err := dedup.New(c, dedup.Config{Table: "tbl"})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			err = s.Mark(ctx, "t", []string{"a", "b"})
			if !errors.Is(err, dedup.ErrThrottled) || runtime.IsPermanent(err) {
				t.Fatalf("Mark: %v, want ErrThrottled (retryable)", err)
			}
			if !strings.Contains(err.Error(), "retry later") || !strings.Contains(err.Error(), code) {
				t.Fatalf("message %q should say to retry and name %s", err, code)
			}
			if _, err := s.Seen(ctx, "t", []string{"a"}); !errors.Is(err, dedup.ErrThrottled) {
				t.Fatalf("Seen: %v, want ErrThrottled", err)
			}
		})
	}
	t.Run("OtherErrorsAreNotThrottling", func(t *testing.T) {
		c := fakeDynamo(t, func(int, string, []byte) (int, string) {
			return 400, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"no table"}`
		})
		s, _ := dedup.New(c, dedup.Config{Table: "tbl"})
		err := s.Mark(context.Background(), "t", []string{"a"})
		if err == nil || errors.Is(err, dedup.ErrThrottled) || !strings.Contains(err.Error(), "tbl") {
			t.Fatalf("Mark on a missing table: %v", err)
		}
	})
}

func TestUnprocessedKeys(t *testing.T) {
	const unprocessed = `{"Responses":{"tbl":[]},"UnprocessedKeys":{"tbl":{"ConsistentRead":true,"Keys":[{"pk":{"S":"t b"}}]}}}`
	t.Run("RequestedAgain", func(t *testing.T) {
		var second string
		c := fakeDynamo(t, func(n int, _ string, body []byte) (int, string) {
			if n == 1 {
				if !strings.Contains(string(body), `"ConsistentRead":true`) {
					t.Errorf("BatchGetItem without ConsistentRead: %s", body)
				}
				return 200, `{"Responses":{"tbl":[{"pk":{"S":"t a"},"expires_at":{"N":"99999999999"}}]},` + unprocessed[len(`{"Responses":{"tbl":[]},`):]
			}
			second = string(body)
			return 200, `{"Responses":{"tbl":[{"pk":{"S":"t b"},"expires_at":{"N":"99999999999"}}]},"UnprocessedKeys":{}}`
		})
		s, _ := dedup.New(c, dedup.Config{Table: "tbl", RetryBase: time.Microsecond})
		seen, err := s.Seen(context.Background(), "t", []string{"a", "b", "c"})
		if err != nil || fmt.Sprint(seen) != "[true true false]" {
			t.Fatalf("seen %v err %v", seen, err)
		}
		if !strings.Contains(second, `"t b"`) || strings.Contains(second, `"t a"`) {
			t.Fatalf("second request should ask for the unprocessed key only: %s", second)
		}
	})
	t.Run("GivesUp", func(t *testing.T) {
		var calls atomic.Int64
		c := fakeDynamo(t, func(int, string, []byte) (int, string) { calls.Add(1); return 200, unprocessed })
		s, _ := dedup.New(c, dedup.Config{Table: "tbl", Attempts: 3, RetryBase: time.Microsecond})
		_, err := s.Seen(context.Background(), "t", []string{"b"})
		if !errors.Is(err, dedup.ErrThrottled) || !strings.Contains(err.Error(), "unprocessed after 3") {
			t.Fatalf("err %v, want ErrThrottled after 3 requests", err)
		}
		if calls.Load() != 3 {
			t.Fatalf("%d requests, want 3", calls.Load())
		}
	})
}
