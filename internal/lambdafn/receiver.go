package lambdafn

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// ReceiverConfig is the callback receiver's configuration.
type ReceiverConfig struct {
	InputQueueURL string
	// BackgroundQueueURL is the background threads' input queue ("": one
	// queue for both classes).
	BackgroundQueueURL string
	// Classes is where the class of a thread whose callback URL does not
	// carry it is looked up (optional; see ClassDB).
	Classes  ClassDB
	Keys     KeySource
	LogLevel slog.Level
	// LiveViewsTable (AGENTSLICE_DEDUP_TABLE, the stack's dedup table)
	// makes the views of a call that goes on in the background display
	// only (WithLiveViews): they cost the thread no slice. "": every view
	// is a message, and so a slice.
	LiveViewsTable string
	// OutputQueueURL (AGENTSLICE_OUTPUT_QUEUE_URL) is where live views are
	// published for people to see; "": they are only kept for the call's
	// end.
	OutputQueueURL string
}

// LoadReceiverConfig reads the callback receiver's configuration.
func LoadReceiverConfig(getenv func(string) string) (ReceiverConfig, error) {
	r := &Reader{Get: getenv}
	c := ReceiverConfig{
		InputQueueURL:      r.QueueURL(EnvInputQueueURL, "the FIFO input queue URL", true),
		BackgroundQueueURL: r.BackgroundQueueURL(),
		Classes:            r.ClassDB(),
		Keys:               r.Keys(),
		LogLevel:           r.LogLevel(),
		LiveViewsTable:     r.Opt(EnvDedupTable),
	}
	if r.Opt(EnvOutputQueueURL) != "" {
		c.OutputQueueURL = r.QueueURL(EnvOutputQueueURL, "the standard output queue URL", false)
	}
	if err := r.Err(); err != nil {
		return ReceiverConfig{}, err
	}
	return c, nil
}

// BuildReceiver builds the callback receiver: a rap.Receiver that enqueues
// accepted callbacks on the thread's class's FIFO input queue, and the
// logger to give FunctionURLHandler. Its configuration is ReceiverFor's.
//
// The returned Accepter re-reads the keyring secret once its TTL has passed
// (KeyringCache), so a rotated key reaches warm environments too. With a
// class database (cfg.Classes) and a background queue, a callback whose URL
// carries no class is routed by its thread's class, looked up and cached
// (sqsq.Router.WithClassLookup); a failed lookup answers 503, so the tool
// retries. The Accepter is an io.Closer that closes that database's pool.
func BuildReceiver(ctx context.Context, cfg ReceiverConfig, opts Options) (Accepter, *slog.Logger, error) {
	opts.Defaults(cfg.LogLevel)
	awsCfg, err := opts.AWSConfig(ctx)
	if err != nil {
		return nil, nil, err
	}
	keys, err := NewKeyringCache(ctx, cfg.Keys, secretsmanager.NewFromConfig(awsCfg), opts.KeyringTTL, opts.Now, opts.Logger)
	if err != nil {
		return nil, nil, err
	}
	queue, err := sqsq.NewClassQueues(sqs.NewFromConfig(awsCfg), sqsq.QueueConfig{URL: cfg.InputQueueURL}, cfg.BackgroundQueueURL)
	if err != nil {
		return nil, nil, err
	}
	var closeDB func()
	if cfg.Classes.Set() && cfg.BackgroundQueueURL != "" {
		lookup, done, err := NewClassLookup(ctx, cfg.Classes, awsCfg)
		if err != nil {
			return nil, nil, err
		}
		queue.WithClassLookup(lookup, 0)
		closeDB = done
	}
	rcfg := ReceiverFor(keys.Keys, queue, opts)
	if cfg.LiveViewsTable != "" {
		store, err := dedup.NewLiveViews(dynamodb.NewFromConfig(awsCfg), dedup.LiveViewsConfig{Table: cfg.LiveViewsTable, Now: opts.Now})
		if err != nil {
			return nil, nil, err
		}
		var out runtime.Output // nil: live views are only kept for the call's end
		if cfg.OutputQueueURL != "" {
			o, err := sqsq.NewOutput(sqs.NewFromConfig(awsCfg), sqsq.OutputConfig{URL: cfg.OutputQueueURL})
			if err != nil {
				return nil, nil, err
			}
			out = o
		}
		rcfg = WithLiveViews(rcfg, store, out)
	}
	rc, err := rap.NewReceiver(rcfg)
	if err != nil {
		if closeDB != nil {
			closeDB()
		}
		return nil, nil, err
	}
	return refreshingAccepter{rc: rc, keys: keys, close: closeDB}, opts.Logger, nil
}

// ReceiverFor is the AWS receiver's rap.ReceiverConfig. view_update and
// user_choice are kept in the thread's history, as in serve
// (rap.ReceiverConfig.HistoryViews, runtime/human.go): the receiver
// enqueues a view as a KindView message and a choice as a notice carrying
// it (Message.Choice), routed like results by the class the callback URL
// was signed with, and the slice function commits them to DSQL. Nothing
// lives in one execution environment's memory, so every environment, the
// next cold start and `agentslice choose` read the same pending choice.
//
// With opts.Tracing, each message passed on with a trace context gets a
// span of its own (SpanCallback, trace.go), a child of the trace context
// the callback URL was signed with, and carries the span's context on.
func ReceiverFor(keys *rap.Keyring, queue runtime.Queue, opts Options) rap.ReceiverConfig {
	return rap.ReceiverConfig{Keys: keys, Queue: traceQueue(queue, opts.Tracing, SpanCallback), Now: opts.Now, Logger: opts.Logger,
		HistoryViews: true, Choices: HistoryChoices}
}

// WithLiveViews makes the views of a call that goes on in the background
// display only (rap.ReceiverConfig.LiveViews): kept in store, shared by
// every execution environment (dedup.LiveViews), published to out, and
// enqueued once, right before the callback that ends the call, so that a
// build streaming its output costs its thread no slice per view. The
// receiver cannot read threads, so a call counts as going on from the
// accepted result that opened its subscription (the store's started mark)
// until its final event; a subscription the thread cancels keeps its mark
// until the store's expiry, and any view it still sends is display only.
func WithLiveViews(cfg rap.ReceiverConfig, store rap.LiveViewStore, out runtime.Output) rap.ReceiverConfig {
	cfg.LiveViews, cfg.LiveStore, cfg.ViewOutput = markedCalls{}, store, out
	return cfg
}

// markedCalls is the AWS receiver's rap.LiveCalls: it knows no thread, so
// only the started marks say a call goes on.
type markedCalls struct{}

func (markedCalls) Live(context.Context, string, string) (bool, error) { return false, nil }

// HistoryChoices is the AWS receiver's choice store: it keeps nothing,
// because the notice message carries the choice into the thread's history.
var HistoryChoices rap.ChoiceStore = historyChoices{}

type historyChoices struct{}

func (historyChoices) PutChoice(context.Context, string, rap.UserChoice) error { return nil }

// Accepter is what FunctionURLHandler needs of a *rap.Receiver.
type Accepter interface {
	Accept(ctx context.Context, query map[string][]string, body []byte) error
}

// FunctionURLHandler returns the Lambda handler behind the callback
// receiver's Function URL. Each request is a RAP callback POSTed to a signed
// callback URL: the query carries the capability, the body the callback.
// It answers 200 {"status":"accepted"} once the message is enqueued, a 4xx
// {"error":..., "field":...} for anything rejected (bad or expired
// signature, malformed body, wrong method, too large), and 503 when
// enqueueing failed, so the tool retries. It never returns a Go error, which
// Lambda would turn into a bare 502.
func FunctionURLHandler(rc Accepter, log *slog.Logger) func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		if m := req.RequestContext.HTTP.Method; m != http.MethodPost {
			resp := urlError(&rap.CallbackError{Status: http.StatusMethodNotAllowed, Err: fmt.Errorf("callbacks are POSTed, not %s", m)})
			resp.Headers["Allow"] = http.MethodPost
			return resp, nil
		}
		body := []byte(req.Body)
		if req.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(req.Body)
			if err != nil {
				return urlError(&rap.CallbackError{Status: http.StatusBadRequest, Err: errors.New("the body is marked base64 but does not decode")}), nil
			}
			body = b
		}
		// A body over rap.MaxCallbackBody is left to Accept: when its
		// signature is valid, the thread gets an error result for the call
		// besides the 413, so the model goes on (a Function URL request is
		// at most 6 MB anyway, so the body is already bounded here).
		query, err := url.ParseQuery(req.RawQueryString)
		if err != nil {
			return urlError(&rap.CallbackError{Status: http.StatusBadRequest, Err: errors.New("the query string does not parse")}), nil
		}
		if err := rc.Accept(ctx, query, body); err != nil {
			var ce *rap.CallbackError
			var tooLarge *sqsq.TooLargeError
			switch {
			case errors.As(err, &ce):
			case errors.As(err, &tooLarge):
				// The callback can never fit a queue message: retrying
				// cannot help, so never answer it as retryable.
				ce = &rap.CallbackError{Status: http.StatusRequestEntityTooLarge, Err: fmt.Errorf(
					"the callback becomes a %d-byte queue message, more than the limit of %d", tooLarge.Size, tooLarge.Limit)}
			case runtime.IsPermanent(err):
				ce = &rap.CallbackError{Status: http.StatusBadRequest, Err: err}
			}
			if ce == nil {
				log.WarnContext(ctx, "callback not enqueued; the tool should retry", "error", err.Error())
				return urlError(&rap.CallbackError{Status: http.StatusServiceUnavailable, Err: errors.New("the callback could not be enqueued; retry later")}), nil
			}
			log.InfoContext(ctx, "callback rejected", "status", ce.Status, "error", err.Error())
			return urlError(ce), nil
		}
		log.DebugContext(ctx, "callback accepted", "thread", query.Get("t"), "call", query.Get("c"))
		return events.LambdaFunctionURLResponse{StatusCode: http.StatusOK, Headers: jsonHeaders(),
			Body: `{"status":"accepted"}` + "\n"}, nil
	}
}

func jsonHeaders() map[string]string { return map[string]string{"Content-Type": "application/json"} }

func urlError(ce *rap.CallbackError) events.LambdaFunctionURLResponse {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Field string `json:"field,omitempty"`
	}{ce.Error(), ce.Field})
	return events.LambdaFunctionURLResponse{StatusCode: ce.Status, Headers: jsonHeaders(), Body: string(b) + "\n"}
}
