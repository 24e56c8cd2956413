package dedup

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/agentslice/agentslice/internal/retry"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Attribute names of the table layout.
const (
	KeyAttr    = "pk"
	ExpiryAttr = "expires_at"
	// Separator joins thread ID and message ID in the partition key.
	Separator = " "
)

// Defaults for Config.
const (
	DefaultTTL      = 15 * 24 * time.Hour // SQS keeps a message at most 14 days
	DefaultParallel = 8
	DefaultAttempts = 6
)

// maxBatchGet is DynamoDB's limit of keys per BatchGetItem request.
const maxBatchGet = 100

// ErrThrottled reports that DynamoDB refused work for lack of capacity. It is
// retryable.
var ErrThrottled = errors.New("dedup: DynamoDB throttled the request; retry later")

// ErrInvalidID reports a thread or message ID that cannot form a key.
var ErrInvalidID = errors.New("dedup: invalid ID")

// API is the part of *dynamodb.Client the store uses.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Config configures a Store.
type Config struct {
	// Table is the table's name. Required.
	Table string
	// TTL is how long a mark lives. Default DefaultTTL; it must outlive the
	// input queue's retention period, after which no redelivery can happen.
	TTL time.Duration
	// Parallel caps the PutItem requests of one Mark in flight at once.
	// Default DefaultParallel.
	Parallel int
	// Attempts caps the BatchGetItem requests for one chunk of keys while
	// DynamoDB leaves keys unprocessed. Default DefaultAttempts.
	Attempts int
	// RetryBase is the first backoff before requesting unprocessed keys
	// again; it doubles per attempt, with full jitter. Default 50ms.
	RetryBase time.Duration
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// Store is the DynamoDB runtime.DedupStore. It is safe for concurrent use.
type Store struct {
	api API
	cfg Config
}

var _ runtime.DedupStore = (*Store)(nil)

// New returns a store on the table cfg.Table, using an already built client.
func New(api API, cfg Config) (*Store, error) {
	if api == nil {
		return nil, errors.New("dedup: nil DynamoDB client")
	}
	if cfg.Table == "" {
		return nil, errors.New("dedup: Config.Table is empty")
	}
	if cfg.TTL < 0 || cfg.Parallel < 0 || cfg.Attempts < 0 || cfg.RetryBase < 0 {
		return nil, errors.New("dedup: Config.TTL, Parallel, Attempts and RetryBase must not be negative")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.Attempts == 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = 50 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{api: api, cfg: cfg}, nil
}

// Key returns the partition key of (threadID, id).
func Key(threadID, id string) string { return threadID + Separator + id }

func checkIDs(threadID string, ids []string) error {
	if threadID == "" || strings.Contains(threadID, Separator) {
		return fmt.Errorf("%w: thread ID %q is empty or contains a space", ErrInvalidID, threadID)
	}
	for i, id := range ids {
		if id == "" || strings.Contains(id, Separator) {
			return fmt.Errorf("%w: message ID %d (%q) of thread %s is empty or contains a space", ErrInvalidID, i, id, threadID)
		}
	}
	return nil
}

// Mark records the IDs as processed by the thread. Marking an ID again is
// not an error and does not extend its expiry.
func (s *Store) Mark(ctx context.Context, threadID string, ids []string) error {
	if err := checkIDs(threadID, ids); err != nil {
		return err
	}
	ids = unique(ids)
	if len(ids) == 0 {
		return nil
	}
	now := s.cfg.Now()
	expires := strconv.FormatInt(now.Add(s.cfg.TTL).Unix(), 10)
	nowN := strconv.FormatInt(now.Unix(), 10)

	if len(ids) == 1 {
		if err := s.put(ctx, threadID, ids[0], expires, nowN); err != nil {
			return fmt.Errorf("dedup: marking 1 ID of thread %s in table %s: %w", threadID, s.cfg.Table, err)
		}
		return nil
	}
	errs := make([]error, len(ids))
	sem := make(chan struct{}, s.cfg.Parallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = s.put(ctx, threadID, id, expires, nowN)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dedup: marking %d IDs of thread %s in table %s: %w", len(ids), threadID, s.cfg.Table, err)
	}
	return nil
}

func (s *Store) put(ctx context.Context, threadID, id, expires, now string) error {
	_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.cfg.Table),
		Item: map[string]types.AttributeValue{
			KeyAttr:    &types.AttributeValueMemberS{Value: Key(threadID, id)},
			ExpiryAttr: &types.AttributeValueMemberN{Value: expires},
		},
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #exp <= :now"),
		ExpressionAttributeNames:  map[string]string{"#pk": KeyAttr, "#exp": ExpiryAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": &types.AttributeValueMemberN{Value: now}},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // already marked
	}
	if err != nil {
		return fmt.Errorf("putting %s: %w", id, classify(err))
	}
	return nil
}

// Seen reports, for each ID, whether the thread marked it and the mark has
// not expired. Reads are strongly consistent.
func (s *Store) Seen(ctx context.Context, threadID string, ids []string) ([]bool, error) {
	if err := checkIDs(threadID, ids); err != nil {
		return nil, err
	}
	out := make([]bool, len(ids))
	keys := unique(ids)
	now := s.cfg.Now().Unix()
	marked := make(map[string]bool, len(keys))
	for start := 0; start < len(keys); start += maxBatchGet {
		chunk := keys[start:min(start+maxBatchGet, len(keys))]
		if err := s.get(ctx, threadID, chunk, now, marked); err != nil {
			return nil, fmt.Errorf("dedup: reading %d IDs of thread %s from table %s: %w", len(keys), threadID, s.cfg.Table, err)
		}
	}
	for i, id := range ids {
		out[i] = marked[Key(threadID, id)]
	}
	return out, nil
}

// get reads one chunk of at most maxBatchGet distinct IDs into marked.
func (s *Store) get(ctx context.Context, threadID string, ids []string, now int64, marked map[string]bool) error {
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = map[string]types.AttributeValue{KeyAttr: &types.AttributeValueMemberS{Value: Key(threadID, id)}}
	}
	req := map[string]types.KeysAndAttributes{s.cfg.Table: {
		Keys:                     keys,
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#pk, #exp"),
		ExpressionAttributeNames: map[string]string{"#pk": KeyAttr, "#exp": ExpiryAttr},
	}}
	for attempt := 1; ; attempt++ {
		resp, err := s.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return classify(err)
		}
		for _, item := range resp.Responses[s.cfg.Table] {
			pk, ok := item[KeyAttr].(*types.AttributeValueMemberS)
			if !ok {
				continue
			}
			marked[pk.Value] = live(item[ExpiryAttr], now)
		}
		left, ok := resp.UnprocessedKeys[s.cfg.Table]
		if !ok || len(left.Keys) == 0 {
			return nil
		}
		if attempt >= s.cfg.Attempts {
			return fmt.Errorf("%w: %d of %d keys still unprocessed after %d BatchGetItem requests",
				ErrThrottled, len(left.Keys), len(ids), attempt)
		}
		req = map[string]types.KeysAndAttributes{s.cfg.Table: left}
		if err := (retry.Backoff{Base: s.cfg.RetryBase}).Wait(ctx, attempt); err != nil {
			return err
		}
	}
}

// live reports whether an expires_at value is still in the future. A record
// without a readable expiry counts as live: better a needless history check
// than a duplicate turn.
func live(v types.AttributeValue, now int64) bool {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return true
	}
	exp, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return true
	}
	return exp > now
}

// throttleCodes are the error codes DynamoDB uses for capacity refusals.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
}

// classify marks throttling errors with ErrThrottled, keeping the original.
func classify(err error) error {
	var api smithy.APIError
	if errors.As(err, &api) && throttleCodes[api.ErrorCode()] {
		return fmt.Errorf("%w: %w", ErrThrottled, err)
	}
	return err
}

func unique(ids []string) []string {
	if len(ids) < 2 {
		return ids
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
