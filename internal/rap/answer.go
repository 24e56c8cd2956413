package rap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Answering a user_choice is the same wherever the thread runs: the
// choice is read from the thread's history (the marker its notice left,
// runtime.PendingChoice), the person's answer goes to the tool's
// response_url ({id, selected}), then a KindAnswer message records it in
// the thread, so the choice is no longer pending there. serve does it
// behind POST /threads/{id}/choices/{call} (internal/server/hitl.go); a
// deployment on AWS through AnswerChoice (`agentslice choose -queue-url`).

// PendingChoiceOf returns the user_choice that call, th's pending call,
// waits on for an answer, read from th's history; ok is false when the
// thread does not wait on call or no choice of it is pending.
func PendingChoiceOf(th *runtime.Thread, call string) (c *UserChoice, ok bool) {
	p := th.State.Pending
	if b := th.State.Budget; p == nil && b != nil && b.Wait != nil && b.Wait.Call == call {
		// A budget pause (runtime/budget.go): no tool asked, no
		// response_url; the answer message alone raises or stops.
		args, ok := runtime.PendingChoice(th.Items, call)
		var u UserChoice
		if !ok || json.Unmarshal([]byte(args), &u) != nil || len(u.Choices) == 0 {
			return nil, false
		}
		u.ResponseURL = ""
		return &u, true
	}
	if p == nil || p.ID != call {
		return nil, false
	}
	args, ok := runtime.PendingChoice(th.Items, call)
	if !ok {
		return nil, false
	}
	var u UserChoice
	if err := json.Unmarshal([]byte(args), &u); err != nil || len(u.Choices) == 0 {
		return nil, false // the receiver validated it; a bad one is no choice to offer
	}
	return &u, true
}

// AnswerMessage is the message that records in thread th that a person
// chose option n of c, the choice on call. Its ID is derived from the
// thread and the call, so a choice is answered once however often the
// answer is sent; it goes to the thread's class's queue.
func AnswerMessage(th *runtime.Thread, call string, c *UserChoice, n int) runtime.Message {
	answer, _ := json.Marshal(ChoiceResponse{ID: c.ID, Selected: n}) // a string and an int: cannot fail
	text := fmt.Sprintf("the user chose %d", n)
	if n >= 0 && n < len(c.Choices) {
		text += ": " + c.Choices[n]
	}
	return runtime.Message{V: runtime.MessageVersion, ID: runtime.DeriveID("answer_", th.ID, call), ThreadID: th.ID,
		Kind: runtime.KindAnswer, ToolCallID: call, Choice: string(answer), Class: th.State.Class, Text: text}
}

// AnswerError is a choice that cannot be answered as asked: Field names
// what is wrong ("thread_id", "call" or "selected").
type AnswerError struct {
	Field  string
	Reason string
}

func (e *AnswerError) Error() string { return "rap: answering a choice: " + e.Field + ": " + e.Reason }

// ChoiceThreads loads a thread's history (a runtime.HistoryStore).
type ChoiceThreads interface {
	Load(ctx context.Context, threadID string) (*runtime.Thread, error)
}

// AnswerChoice answers the choice thread waits on: call is its pending
// call ("" for whichever call the thread waits on), selected the index of
// the chosen option. It POSTs {id, selected} to the choice's response_url
// (retrying per policy), then sends the answer message (AnswerMessage) to
// queue, and returns the choice. An *AnswerError says the thread waits on
// no such choice or selected is not one of its options; then nothing is
// sent. If the tool took the answer but the message could not be sent,
// the error says so: answering again sends the same message (the tool may
// hear the answer twice).
func AnswerChoice(ctx context.Context, client *http.Client, threads ChoiceThreads, queue runtime.Queue, thread, call string,
	selected int, policy RetryPolicy) (*UserChoice, error) {
	th, err := threads.Load(ctx, thread)
	if err != nil {
		return nil, fmt.Errorf("rap: loading thread %s: %w", thread, err)
	}
	return AnswerLoaded(ctx, client, th, queue, call, selected, policy)
}

// AnswerLoaded is AnswerChoice for a thread the caller has loaded already
// (it reads the same history to show the choice first), so the thread is
// not loaded twice.
func AnswerLoaded(ctx context.Context, client *http.Client, th *runtime.Thread, queue runtime.Queue, call string,
	selected int, policy RetryPolicy) (*UserChoice, error) {
	thread := th.ID
	if th.State.Version == 0 {
		return nil, &AnswerError{Field: "thread_id", Reason: fmt.Sprintf("thread %s has no history", thread)}
	}
	if call == "" && th.State.Pending != nil {
		call = th.State.Pending.ID
	}
	if b := th.State.Budget; call == "" && b != nil && b.Wait != nil {
		call = b.Wait.Call
	}
	c, ok := PendingChoiceOf(th, call)
	if !ok {
		return nil, &AnswerError{Field: "call", Reason: fmt.Sprintf(
			"no choice is waiting for an answer on call %q of thread %s (answered already, or never asked)", call, thread)}
	}
	if selected < 0 || selected >= len(c.Choices) {
		return nil, &AnswerError{Field: "selected", Reason: fmt.Sprintf("%d is not one of the choices (0 to %d)", selected, len(c.Choices)-1)}
	}
	if c.ResponseURL == "" {
		// A budget pause's choice: nothing to tell a tool.
	} else if err := PostChoice(ctx, client, c.ResponseURL, c.ID, selected, policy); err != nil {
		return nil, fmt.Errorf("rap: the tool did not take the answer to call %s of thread %s: %w", call, thread, err)
	}
	if err := queue.Send(ctx, AnswerMessage(th, call, c, selected)); err != nil {
		return c, fmt.Errorf("rap: the tool has the answer to call %s of thread %s, but recording it failed (answer again to record it): %w",
			call, thread, err)
	}
	return c, nil
}

// IsAnswerError reports whether err is an *AnswerError.
func IsAnswerError(err error) bool {
	var ae *AnswerError
	return errors.As(err, &ae)
}
