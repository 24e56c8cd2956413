package dedup

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The ledger of tree budgets on DynamoDB (runtime.Ledger). It shares the
// dedup table: a tree's account is one item whose key cannot be a dedup
// key ("budget", two spaces, the tree's root: IDs hold no spaces). Items
// have no expiry attribute, so TTL never removes them.
//
// Concurrent slices of one tree update the one item with conditional
// writes and arithmetic in the update, never read-modify-write of the
// whole item:
//
//	room_t, room_u   limit less spent less reserved (tokens, micro-dollars)
//	lim_t, lim_u     the limit; 0 or absent: none
//	spent_t, spent_u what settled completions used
//	res_t, res_u     what is reserved
//	h_<thread>       the thread's reservation {i: ID, t, u, d}; once settled
//	                 {i: ID, t: 0, u: 0, s: true, d}; d lists its latest
//	                 settled completions (runtime.LedgerHold.Done), so that
//	                 a completion done again is neither admitted nor
//	                 settled twice
//	waiting          string set: threads refused since last admitted
//	changes          string set: IDs of the limit changes applied
//
// Reserve reads the thread's hold (a thread runs one completion at a time,
// so it changes only under the thread's own slices), then adds the new
// reservation less the old one in one update, on condition that the hold is
// still the one read and that room covers it (or no limit is set): two
// slices can never both take the last room. A refusal adds the thread to
// waiting on condition that room still does not cover it, so a raise cannot
// slip between the refusal and the record.

// LedgerAPI is the part of *dynamodb.Client the ledger uses.
type LedgerAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Ledger is the DynamoDB runtime.Ledger. It is safe for concurrent use, in
// one process or many.
type Ledger struct {
	api   LedgerAPI
	table string
}

var _ runtime.Ledger = (*Ledger)(nil)

// ledgerAttempts bounds the optimistic retries of one operation (a hold
// or limit changed between the read and the write).
const ledgerAttempts = 16

// NewLedger returns the ledger on table (the dedup table).
func NewLedger(api LedgerAPI, table string) (*Ledger, error) {
	if api == nil {
		return nil, errors.New("dedup: nil DynamoDB client for the ledger")
	}
	if table == "" {
		return nil, errors.New("dedup: the ledger's table name is empty")
	}
	return &Ledger{api: api, table: table}, nil
}

// LedgerKey is the partition key of tree's account.
func LedgerKey(tree string) string { return "budget" + Separator + Separator + tree }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		x, _ := strconv.ParseInt(v.Value, 10, 64)
		return x
	}
	return 0
}

func strs(item map[string]types.AttributeValue, name string) []string {
	if v, ok := item[name].(*types.AttributeValueMemberSS); ok {
		return v.Value
	}
	return nil
}

type ledgerHold struct {
	id      string
	t, u    int64
	settled bool     // the thread's last completion, settled (s: true)
	done    []string // its latest settled completions (d; runtime.LedgerHold.Done)
}

func holdOf(item map[string]types.AttributeValue, thread string) (ledgerHold, bool) {
	m, ok := item[holdAttr(thread)].(*types.AttributeValueMemberM)
	if !ok {
		return ledgerHold{}, false
	}
	h := ledgerHold{t: num(m.Value, "t"), u: num(m.Value, "u")}
	if v, ok := m.Value["i"].(*types.AttributeValueMemberS); ok {
		h.id = v.Value
	}
	if v, ok := m.Value["s"].(*types.AttributeValueMemberBOOL); ok {
		h.settled = v.Value
	}
	if v, ok := m.Value["d"].(*types.AttributeValueMemberL); ok {
		for _, e := range v.Value {
			if id, ok := e.(*types.AttributeValueMemberS); ok {
				h.done = append(h.done, id.Value)
			}
		}
	}
	return h, true
}

// holdValue is a hold's item value: {i, t, u, s?, d?}.
func holdValue(id string, sp runtime.Spend, settled bool, done []string) types.AttributeValue {
	m := map[string]types.AttributeValue{"i": s(id), "t": n(sp.Tokens), "u": n(sp.Micros)}
	if settled {
		m["s"] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if len(done) > 0 {
		l := make([]types.AttributeValue, len(done))
		for i, d := range done {
			l[i] = s(d)
		}
		m["d"] = &types.AttributeValueMemberL{Value: l}
	}
	return &types.AttributeValueMemberM{Value: m}
}

func holdAttr(thread string) string { return "h_" + thread }

func (l *Ledger) key(tree string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{KeyAttr: s(LedgerKey(tree))}
}

func (l *Ledger) get(ctx context.Context, tree string) (map[string]types.AttributeValue, error) {
	out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.table), Key: l.key(tree), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, classify(err)
	}
	return out.Item, nil
}

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// roomCond is the condition that room covers :nt and :nu, or that no
// limit is set on the measure.
const roomCond = "(attribute_not_exists(lim_t) OR lim_t = :zero OR room_t >= :nt) AND " +
	"(attribute_not_exists(lim_u) OR lim_u = :zero OR room_u >= :nu)"

// Reserve implements runtime.Ledger.
func (l *Ledger) Reserve(ctx context.Context, r runtime.Reservation) (bool, error) {
	for range ledgerAttempts {
		item, err := l.get(ctx, r.Tree)
		if err != nil {
			return false, fmt.Errorf("dedup: reading the budget of tree %s: %w", r.Tree, err)
		}
		if item == nil {
			return true, nil // no limit was ever set: nothing to keep
		}
		old, held := holdOf(item, r.Thread)
		if held && (old.id == r.ID || slices.Contains(old.done, r.ID)) {
			return true, nil // reserved already, or done and settled
		}
		nt, nu := r.Amount.Tokens-old.t, r.Amount.Micros-old.u
		names := map[string]string{"#h": holdAttr(r.Thread)}
		vals := map[string]types.AttributeValue{
			":zero": n(0), ":nt": n(nt), ":nu": n(nu),
			":h":  holdValue(r.ID, r.Amount, false, old.done),
			":me": &types.AttributeValueMemberSS{Value: []string{r.Thread}},
		}
		holdCond := "attribute_not_exists(#h)"
		if held {
			holdCond = "#h.i = :old"
			vals[":old"] = s(old.id)
		}
		_, err = l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(l.table), Key: l.key(r.Tree),
			UpdateExpression: aws.String("SET #h = :h, room_t = if_not_exists(room_t, :zero) - :nt, room_u = if_not_exists(room_u, :zero) - :nu, " +
				"res_t = if_not_exists(res_t, :zero) + :nt, res_u = if_not_exists(res_u, :zero) + :nu DELETE waiting :me"),
			ConditionExpression:      aws.String(holdCond + " AND " + roomCond),
			ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
		})
		if err == nil {
			return true, nil
		}
		if !conditionFailed(err) {
			return false, fmt.Errorf("dedup: reserving budget in tree %s: %w", r.Tree, classify(err))
		}
		// The hold changed (a zombie slice of the thread) or there is no
		// room: record the refusal if there still is none, else try again.
		_, err = l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(l.table), Key: l.key(r.Tree),
			UpdateExpression:          aws.String("ADD waiting :me"),
			ConditionExpression:       aws.String("NOT (" + roomCond + ")"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":zero": n(0), ":nt": n(nt), ":nu": n(nu), ":me": vals[":me"]},
		})
		if err == nil {
			return false, nil
		}
		if !conditionFailed(err) {
			return false, fmt.Errorf("dedup: recording a refusal in tree %s: %w", r.Tree, classify(err))
		}
	}
	return false, fmt.Errorf("dedup: reserving budget in tree %s: still contended after %d attempts", r.Tree, ledgerAttempts)
}

// Settle implements runtime.Ledger.
func (l *Ledger) Settle(ctx context.Context, tree, thread, id string, used runtime.Spend) error {
	item, err := l.get(ctx, tree)
	if err != nil {
		return fmt.Errorf("dedup: reading the budget of tree %s: %w", tree, err)
	}
	h, held := holdOf(item, thread)
	if !held || h.id != id || h.settled {
		return nil
	}
	// The hold stays, emptied and marked settled: the same completion done
	// again (its slice died before its commit) is admitted and settled no
	// second time.
	done := holdValue(id, runtime.Spend{}, true, runtime.DoneAfter(h.done, id))
	_, err = l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.table), Key: l.key(tree),
		UpdateExpression: aws.String("SET #h = :done, res_t = res_t - :ht, res_u = res_u - :hu, spent_t = if_not_exists(spent_t, :zero) + :ut, " +
			"spent_u = if_not_exists(spent_u, :zero) + :uu, room_t = room_t + :dt, room_u = room_u + :du"),
		ConditionExpression:      aws.String("#h.i = :id AND attribute_not_exists(#h.s)"),
		ExpressionAttributeNames: map[string]string{"#h": holdAttr(thread)},
		ExpressionAttributeValues: map[string]types.AttributeValue{":zero": n(0), ":id": s(id), ":done": done, ":ht": n(h.t), ":hu": n(h.u),
			":ut": n(used.Tokens), ":uu": n(used.Micros), ":dt": n(h.t - used.Tokens), ":du": n(h.u - used.Micros)},
	})
	if err != nil && !conditionFailed(err) { // a failed condition: settled meanwhile
		return fmt.Errorf("dedup: settling budget in tree %s: %w", tree, classify(err))
	}
	return nil
}

func micros(usd float64) int64 { return int64(math.Round(usd * 1e6)) }

// Change implements runtime.Ledger.
func (l *Ledger) Change(ctx context.Context, tree, id string, c runtime.BudgetChange) ([]string, error) {
	for range ledgerAttempts {
		item, err := l.get(ctx, tree)
		if err != nil {
			return nil, fmt.Errorf("dedup: reading the budget of tree %s: %w", tree, err)
		}
		if slices.Contains(strs(item, "changes"), id) {
			return sorted(strs(item, "waiting")), nil
		}
		ot, ou := num(item, "lim_t"), num(item, "lim_u")
		nl := c.Apply(runtime.Budget{Tokens: ot, USD: float64(ou) / 1e6})
		nt, nu := nl.Tokens, micros(nl.USD)
		limCond := func(attr, v string, old int64) string {
			if old == 0 {
				return "(attribute_not_exists(" + attr + ") OR " + attr + " = " + v + ")"
			}
			return attr + " = " + v
		}
		out, err := l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(l.table), Key: l.key(tree),
			UpdateExpression: aws.String("SET lim_t = :nt, lim_u = :nu, room_t = if_not_exists(room_t, :zero) + :dt, " +
				"room_u = if_not_exists(room_u, :zero) + :du ADD changes :id"),
			ConditionExpression: aws.String(limCond("lim_t", ":ot", ot) + " AND " + limCond("lim_u", ":ou", ou) +
				" AND NOT contains(changes, :idv)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":zero": n(0), ":nt": n(nt), ":nu": n(nu),
				":ot": n(ot), ":ou": n(ou), ":dt": n(nt - ot), ":du": n(nu - ou),
				":id": &types.AttributeValueMemberSS{Value: []string{id}}, ":idv": s(id)},
			ReturnValues: types.ReturnValueAllNew,
		})
		if err == nil {
			return sorted(strs(out.Attributes, "waiting")), nil
		}
		if !conditionFailed(err) {
			return nil, fmt.Errorf("dedup: changing the budget of tree %s: %w", tree, classify(err))
		}
	}
	return nil, fmt.Errorf("dedup: changing the budget of tree %s: still contended after %d attempts", tree, ledgerAttempts)
}

func sorted(v []string) []string {
	v = slices.Clone(v)
	sort.Strings(v)
	return v
}

// Account returns the tree's account.
func (l *Ledger) Account(ctx context.Context, tree string) (runtime.Account, error) {
	item, err := l.get(ctx, tree)
	if err != nil {
		return runtime.Account{}, fmt.Errorf("dedup: reading the budget of tree %s: %w", tree, err)
	}
	return runtime.Account{
		Limit:    runtime.Budget{Tokens: num(item, "lim_t"), USD: float64(num(item, "lim_u")) / 1e6},
		Spent:    runtime.Spend{Tokens: num(item, "spent_t"), Micros: num(item, "spent_u")},
		Reserved: runtime.Spend{Tokens: num(item, "res_t"), Micros: num(item, "res_u")},
		Waiting:  sorted(strs(item, "waiting")),
	}, nil
}
