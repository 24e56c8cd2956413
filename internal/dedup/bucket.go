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
// spaces, the model's name) holding the tokens left ("tokens") and when
// they were last refilled ("at", Unix milliseconds). Off by default (the
// slice function's AGENTSLICE_SHARED_TPM).
//
// Takers do not conflict: a take is one update that subtracts in the
// update on condition that the tokens cover it, so any number of slices
// take from one bucket at once without reading again, and a Give adds.
// Only the refill (the rate times the time since at, up to one minute's
// tokens) is guarded by at, and it runs when the tokens are short of a
// take that the refill covers, or at least BucketRefillEvery after the
// last refill: one refill wins, and the others go on to their take. A
// take the refill would not cover waits without a write. (A first version guarded every take with a
// version attribute: under 256 concurrent slices on DynamoDB Local most
// takes lost 16 races in a row and called the model unmetered;
// loadtest/sharedtpm measures both.)
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

// BucketRefillEvery is how stale a bucket's refill may be before a taker
// refills it even though it is not short; it bounds what a lazy refill
// may grant beyond the rate (the rate times this) and how often takers
// contend for the refill.
const BucketRefillEvery = time.Second

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
		if _, ok := out.Item["tokens"]; !ok {
			// A new bucket is full: create it with want taken.
			_, err = b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(b.table), Key: key,
				UpdateExpression:          aws.String("SET tokens = :left, #at = :now"),
				ConditionExpression:       aws.String("attribute_not_exists(tokens)"),
				ExpressionAttributeNames:  map[string]string{"#at": "at"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":left": n(b.perMin - want), ":now": n(now)},
			})
			if err == nil {
				return 0, nil
			}
			if !conditionFailed(err) {
				return 0, fmt.Errorf("dedup: creating the token bucket of %s: %w", model, classify(err))
			}
			continue // another taker created it
		}
		have, at := num(out.Item, "tokens"), num(out.Item, "at")
		el := now - at
		refill := max(min(b.perMin-have, el*b.perMin/60000), 0)
		if have+refill < want { // short even after the refill due: wait, write nothing
			return time.Duration((want-have-refill)*60000/b.perMin+1) * time.Millisecond, nil
		}
		if refill > 0 && (have < want || el >= BucketRefillEvery.Milliseconds()) {
			_, err = b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(b.table), Key: key,
				UpdateExpression:          aws.String("SET #at = :now ADD tokens :refill"),
				ConditionExpression:       aws.String("#at = :at"), // one refill per interval
				ExpressionAttributeNames:  map[string]string{"#at": "at"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":now": n(now), ":at": n(at), ":refill": n(refill)},
			})
			// Lost: another taker refilled since the read; the take
			// below finds what it left.
			if err != nil && !conditionFailed(err) {
				return 0, fmt.Errorf("dedup: refilling the token bucket of %s: %w", model, classify(err))
			}
		}
		_, err = b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(b.table), Key: key,
			UpdateExpression:          aws.String("ADD tokens :neg"),
			ConditionExpression:       aws.String("tokens >= :want"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":neg": n(-want), ":want": n(want)},
		})
		if err == nil {
			return 0, nil
		}
		if !conditionFailed(err) {
			return 0, fmt.Errorf("dedup: taking from the token bucket of %s: %w", model, classify(err))
		}
		// Others took the tokens since the read: read again (a refill
		// may be due, or the wait).
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
		UpdateExpression:          aws.String("ADD tokens :n"),
		ConditionExpression:       aws.String("attribute_exists(tokens)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": n(tokens)},
	})
	if err != nil && !conditionFailed(err) {
		return fmt.Errorf("dedup: giving back to the token bucket of %s: %w", model, classify(err))
	}
	return nil
}
