package dedup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TokenBucket is a token bucket per model shared by every slice function
// of a deployment (the provider's tokens-per-minute quota is one for all
// of them), kept in the dedup table: one item per model ("bucket", two
// spaces, the model's name) holding the tokens left and when they were
// counted. Take refills the bucket at the rate, up to one minute's
// tokens, and takes them on condition that nobody took or gave in
// between (a version attribute v; a lost race reads again). Off by default (the slice
// function's AGENTSLICE_SHARED_TPM).
type TokenBucket struct {
	api    LedgerAPI
	table  string
	perMin int64
	now    func() time.Time
}

// NewTokenBucket returns the bucket of perMinute tokens a minute on table.
func NewTokenBucket(api LedgerAPI, table string, perMinute int64, now func() time.Time) (*TokenBucket, error) {
	if api == nil || table == "" {
		return nil, errors.New("dedup: the token bucket needs a client and a table")
	}
	if perMinute <= 0 {
		return nil, fmt.Errorf("dedup: the token bucket's rate %d is not a positive number of tokens a minute", perMinute)
	}
	if now == nil {
		now = time.Now
	}
	return &TokenBucket{api: api, table: table, perMin: perMinute, now: now}, nil
}

// BucketKey is the partition key of model's bucket.
func BucketKey(model string) string { return "bucket" + Separator + Separator + model }

// Take takes want tokens of model's bucket. It returns 0 when they were
// taken, else how long until the bucket holds want (nothing is taken then).
func (b *TokenBucket) Take(ctx context.Context, model string, want int64) (time.Duration, error) {
	key := map[string]types.AttributeValue{KeyAttr: s(BucketKey(model))}
	want = min(want, b.perMin) // a request larger than the bucket waits for a full one
	for range ledgerAttempts {
		out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return 0, fmt.Errorf("dedup: reading the token bucket of %s: %w", model, classify(err))
		}
		now := b.now().UnixMilli()
		have, at := b.perMin, now
		cond := "attribute_not_exists(v)"
		vals := map[string]types.AttributeValue{":one": n(1)}
		if _, ok := out.Item["v"]; ok {
			have, at = num(out.Item, "tokens"), num(out.Item, "at")
			cond = "v = :v" // nobody took or gave since the read
			vals[":v"] = n(num(out.Item, "v"))
		}
		if el := now - at; el > 0 {
			have = min(b.perMin, have+el*b.perMin/60000)
		}
		if have < want {
			return time.Duration((want-have)*60000/b.perMin+1) * time.Millisecond, nil
		}
		vals[":left"], vals[":now"] = n(have-want), n(max(now, at))
		_, err = b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(b.table), Key: key,
			UpdateExpression:          aws.String("SET tokens = :left, #at = :now ADD v :one"),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  map[string]string{"#at": "at"},
			ExpressionAttributeValues: vals,
		})
		if err == nil {
			return 0, nil
		}
		if !conditionFailed(err) {
			return 0, fmt.Errorf("dedup: taking from the token bucket of %s: %w", model, classify(err))
		}
	}
	return 0, fmt.Errorf("dedup: the token bucket of %s stayed contended after %d attempts", model, ledgerAttempts)
}

// Give puts back tokens taken but not used (a negative count takes more
// than was taken: a completion used more than its estimate).
func (b *TokenBucket) Give(ctx context.Context, model string, tokens int64) error {
	if tokens == 0 {
		return nil
	}
	_, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(b.table), Key: map[string]types.AttributeValue{KeyAttr: s(BucketKey(model))},
		UpdateExpression:          aws.String("ADD tokens :n, v :one"),
		ConditionExpression:       aws.String("attribute_exists(tokens)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": n(tokens), ":one": n(1)},
	})
	if err != nil && !conditionFailed(err) {
		return fmt.Errorf("dedup: giving back to the token bucket of %s: %w", model, classify(err))
	}
	return nil
}
