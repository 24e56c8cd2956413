package dedup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/retry"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The live views of the AWS callback receiver (rap.LiveViewStore). A
// view_update of a call that goes on in the background (a build that
// streams its output) is display only: the receiver keeps its latest view
// here and publishes it to the output queue, and enqueues nothing, so it
// costs the thread no slice. The call's last views enter history once,
// right before the callback that ends it. The receiver runs in many
// execution environments, so what one of them kept must be read by the one
// that gets the call's end: the views live in the dedup table, under keys
// no dedup key can take (a word, two spaces, then IDs, which hold no
// spaces), like the ledger's:
//
//	"view  <thread> <call> <h>"  one view: vt (view type), content (B),
//	                             at (arrival, ns), expires_at; h hashes
//	                             the view type, which may hold spaces
//	"views  <thread>"            the thread's index: keys (string set of
//	                             its view items' keys), expires_at
//	"started  <thread> <call>"   the call's result opened a subscription
//
// A view and its index entry are written and removed together
// (TransactWriteItems), so the index names every view there is. Every item
// expires (TTL) after LiveViewsConfig.TTL without an update; an expired
// item is ignored before DynamoDB removes it.

// LiveViewsAPI is the part of *dynamodb.Client the live views use.
type LiveViewsAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// DefaultLiveViewTTL is how long a live view or mark is kept without an
// update: longer than any background call is expected to go quiet.
const DefaultLiveViewTTL = 30 * 24 * time.Hour

// MaxLiveViewBytes is the largest view content kept here (an item is at
// most 400 KB). A larger view goes to history as without live views, where
// the queue's own limit refuses it with a clear 413.
const MaxLiveViewBytes = 300 << 10

// ErrLiveViewTooLarge reports a view over MaxLiveViewBytes.
var ErrLiveViewTooLarge = errors.New("dedup: the view is too large to keep as a live view")

// LiveViewsConfig configures LiveViews.
type LiveViewsConfig struct {
	Table string        // the dedup table; required
	TTL   time.Duration // default DefaultLiveViewTTL
	Now   func() time.Time
}

// LiveViews is the DynamoDB rap.LiveViewStore. It is safe for concurrent
// use, in one process or many.
type LiveViews struct {
	api LiveViewsAPI
	cfg LiveViewsConfig
}

var _ rap.LiveViewStore = (*LiveViews)(nil)

// NewLiveViews returns the live views kept in cfg.Table.
func NewLiveViews(api LiveViewsAPI, cfg LiveViewsConfig) (*LiveViews, error) {
	if api == nil {
		return nil, errors.New("dedup: nil DynamoDB client")
	}
	if cfg.Table == "" {
		return nil, errors.New("dedup: LiveViewsConfig.Table is empty")
	}
	if cfg.TTL < 0 {
		return nil, errors.New("dedup: LiveViewsConfig.TTL must not be negative")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultLiveViewTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &LiveViews{api: api, cfg: cfg}, nil
}

func viewKey(thread, call, viewType string) string {
	h := sha256.Sum256([]byte(viewType))
	return "view" + Separator + Separator + thread + Separator + call + Separator + hex.EncodeToString(h[:12])
}

func viewIndexKey(thread string) string { return "views" + Separator + Separator + thread }

func startedKey(thread, call string) string {
	return "started" + Separator + Separator + thread + Separator + call
}

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyAttr: s(pk)}
}

func (l *LiveViews) expiry() types.AttributeValue { return n(l.cfg.Now().Add(l.cfg.TTL).Unix()) }

func checkCall(thread, call string) error { return checkIDs(thread, []string{call}) }

// PutView implements rap.LiveViewStore: the view and its index entry in
// one transaction, on condition that no view of the same call and type
// that arrived later is kept (then nothing changes).
func (l *LiveViews) PutView(ctx context.Context, thread string, v rap.LiveView) error {
	if err := checkCall(thread, v.CallID); err != nil {
		return err
	}
	if len(v.Content) > MaxLiveViewBytes {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrLiveViewTooLarge, len(v.Content), MaxLiveViewBytes)
	}
	pk, exp := viewKey(thread, v.CallID, v.ViewType), l.expiry()
	_, err := l.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                 aws.String(l.cfg.Table),
			Key:                       key(viewIndexKey(thread)),
			UpdateExpression:          aws.String("ADD #keys :k SET " + ExpiryAttr + " = :exp"),
			ExpressionAttributeNames:  map[string]string{"#keys": "keys"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberSS{Value: []string{pk}}, ":exp": exp},
		}},
		{Put: &types.Put{
			TableName: aws.String(l.cfg.Table),
			Item: map[string]types.AttributeValue{KeyAttr: s(pk), "vt": s(v.ViewType), "call": s(v.CallID),
				"content": &types.AttributeValueMemberB{Value: v.Content}, "at": n(int64(v.At)), ExpiryAttr: exp},
			ConditionExpression:       aws.String("attribute_not_exists(" + KeyAttr + ") OR #at <= :at OR " + ExpiryAttr + " < :now"),
			ExpressionAttributeNames:  map[string]string{"#at": "at"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":at": n(int64(v.At)), ":now": n(l.cfg.Now().Unix())},
		}},
	}})
	if cancelledByCondition(err) {
		return nil // a later view of the call and type is kept
	}
	if err != nil {
		return fmt.Errorf("dedup: keeping live view %s of call %s of thread %s: %w", v.ViewType, v.CallID, thread, classify(err))
	}
	return nil
}

// cancelledByCondition reports a transaction cancelled only because a
// condition did not hold.
func cancelledByCondition(err error) bool {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return false
	}
	found := false
	for _, r := range tc.CancellationReasons {
		switch c := aws.ToString(r.Code); c {
		case "ConditionalCheckFailed":
			found = true
		case "", "None":
		default:
			return false
		}
	}
	return found
}

// Views implements rap.LiveViewStore: the index, then its views, both read
// consistently.
func (l *LiveViews) Views(ctx context.Context, thread string) ([]rap.LiveView, error) {
	if err := checkIDs(thread, nil); err != nil {
		return nil, err
	}
	now := l.cfg.Now().Unix()
	idx, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.cfg.Table), Key: key(viewIndexKey(thread)),
		ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("dedup: reading the live views of thread %s: %w", thread, classify(err))
	}
	if idx.Item == nil || !live(idx.Item[ExpiryAttr], now) {
		return nil, nil
	}
	keys, _ := idx.Item["keys"].(*types.AttributeValueMemberSS)
	if keys == nil {
		return nil, nil
	}
	var out []rap.LiveView
	pending := append([]string(nil), keys.Value...)
	// Chunks of maxBatchGet keys; keys DynamoDB leaves unprocessed are
	// asked again after a backoff, at most DefaultAttempts times in all.
	for retries := 0; len(pending) > 0; {
		chunk := pending[:min(len(pending), maxBatchGet)]
		pending = pending[len(chunk):]
		ks := make([]map[string]types.AttributeValue, len(chunk))
		for i, k := range chunk {
			ks[i] = key(k)
		}
		res, err := l.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			l.cfg.Table: {Keys: ks, ConsistentRead: aws.Bool(true)}}})
		if err != nil {
			return nil, fmt.Errorf("dedup: reading the live views of thread %s: %w", thread, classify(err))
		}
		for _, item := range res.Responses[l.cfg.Table] {
			if v, ok := liveViewOf(item, now); ok {
				out = append(out, v)
			}
		}
		left := res.UnprocessedKeys[l.cfg.Table].Keys
		if len(left) == 0 {
			continue
		}
		if retries++; retries >= DefaultAttempts {
			return nil, fmt.Errorf("%w: %d live views of thread %s left unread", ErrThrottled, len(left)+len(pending), thread)
		}
		for _, k := range left {
			if pk, ok := k[KeyAttr].(*types.AttributeValueMemberS); ok {
				pending = append(pending, pk.Value)
			}
		}
		if err := (retry.Backoff{Base: 50 * time.Millisecond}).Wait(ctx, retries); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func liveViewOf(item map[string]types.AttributeValue, now int64) (rap.LiveView, bool) {
	if !live(item[ExpiryAttr], now) {
		return rap.LiveView{}, false
	}
	vt, _ := item["vt"].(*types.AttributeValueMemberS)
	call, _ := item["call"].(*types.AttributeValueMemberS)
	content, _ := item["content"].(*types.AttributeValueMemberB)
	if vt == nil || call == nil || content == nil {
		return rap.LiveView{}, false
	}
	return rap.LiveView{ViewType: vt.Value, CallID: call.Value, Content: content.Value, At: runtime.Stamp(num(item, "at"))}, true
}

// remove deletes one view item and its index entry in one transaction; at
// >= 0 makes it conditional on the view being the one that arrived then.
func (l *LiveViews) remove(ctx context.Context, thread, pk string, at int64) error {
	del := &types.Delete{TableName: aws.String(l.cfg.Table), Key: key(pk)}
	if at >= 0 {
		del.ConditionExpression = aws.String("#at = :at")
		del.ExpressionAttributeNames = map[string]string{"#at": "at"}
		del.ExpressionAttributeValues = map[string]types.AttributeValue{":at": n(at)}
	}
	_, err := l.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: del},
		{Update: &types.Update{
			TableName:                 aws.String(l.cfg.Table),
			Key:                       key(viewIndexKey(thread)),
			UpdateExpression:          aws.String("DELETE #keys :k"),
			ExpressionAttributeNames:  map[string]string{"#keys": "keys"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberSS{Value: []string{pk}}},
		}},
	}})
	if cancelledByCondition(err) {
		return nil // replaced by a later view: kept
	}
	if err != nil {
		return fmt.Errorf("dedup: removing live view %s of thread %s: %w", pk, thread, classify(err))
	}
	return nil
}

// ForgetCall implements rap.LiveViewStore.
func (l *LiveViews) ForgetCall(ctx context.Context, thread, call string) error {
	if err := checkCall(thread, call); err != nil {
		return err
	}
	views, err := l.Views(ctx, thread)
	if err != nil {
		return err
	}
	for _, v := range views {
		if v.CallID == call {
			if err := l.remove(ctx, thread, viewKey(thread, call, v.ViewType), -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// DropViews implements rap.LiveViewStore.
func (l *LiveViews) DropViews(ctx context.Context, thread string, sent []rap.LiveView) error {
	for _, v := range sent {
		if err := checkCall(thread, v.CallID); err != nil {
			return err
		}
		if err := l.remove(ctx, thread, viewKey(thread, v.CallID, v.ViewType), int64(v.At)); err != nil {
			return err
		}
	}
	return nil
}

// MarkStarted implements rap.LiveViewStore.
func (l *LiveViews) MarkStarted(ctx context.Context, thread, call string) error {
	if err := checkCall(thread, call); err != nil {
		return err
	}
	_, err := l.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.cfg.Table),
		Item: map[string]types.AttributeValue{KeyAttr: s(startedKey(thread, call)), ExpiryAttr: l.expiry()}})
	if err != nil {
		return fmt.Errorf("dedup: marking call %s of thread %s started: %w", call, thread, classify(err))
	}
	return nil
}

// Started implements rap.LiveViewStore.
func (l *LiveViews) Started(ctx context.Context, thread, call string) (bool, error) {
	if err := checkCall(thread, call); err != nil {
		return false, err
	}
	out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.cfg.Table), Key: key(startedKey(thread, call)),
		ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("dedup: reading the started mark of call %s of thread %s: %w", call, thread, classify(err))
	}
	return out.Item != nil && live(out.Item[ExpiryAttr], l.cfg.Now().Unix()), nil
}

// ClearStarted implements rap.LiveViewStore.
func (l *LiveViews) ClearStarted(ctx context.Context, thread, call string) error {
	if err := checkCall(thread, call); err != nil {
		return err
	}
	_, err := l.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(l.cfg.Table), Key: key(startedKey(thread, call))})
	if err != nil {
		return fmt.Errorf("dedup: clearing the started mark of call %s of thread %s: %w", call, thread, classify(err))
	}
	return nil
}
