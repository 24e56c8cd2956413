package rap

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

type incarnationsFunc func(thread string) string

func (f incarnationsFunc) Incarnation(_ context.Context, thread string) (string, error) {
	return f(thread), nil
}

// TestCallbackURLBindsTheIncarnation: a callback URL signed for a thread's
// incarnation carries it signed (changed or dropped, the signature fails),
// and a Receiver told the thread's current incarnation refuses a URL of an
// earlier one with 403 and enqueues nothing.
func TestCallbackURLBindsTheIncarnation(t *testing.T) {
	t.Parallel()
	current := "inc-2"
	rig := newCallbackRig(t, func(c *ReceiverConfig) {
		c.Incarnations = incarnationsFunc(func(string) string { return current })
	})
	sign := func(inc string) string {
		u, err := rig.signer.InvocationCallbackURL(runtime.Invocation{ThreadID: "demo", CallID: "call_1", Incarnation: inc})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	body := `{"type":"tool_result","group_id":"demo","id":"call_1","text":"x"}`
	tamper := func(u string, f func(q url.Values)) string {
		p, _ := url.Parse(u)
		q := p.Query()
		f(q)
		p.RawQuery = q.Encode()
		return p.String()
	}
	for name, tc := range map[string]struct {
		url  string
		want string
	}{
		"earlier incarnation": {sign("inc-1"), "earlier thread of this ID"},
		"no incarnation":      {sign(""), "earlier thread of this ID"},
		"incarnation changed": {tamper(sign("inc-1"), func(q url.Values) { q.Set("i", "inc-2") }), "signature"},
		"incarnation dropped": {tamper(sign("inc-2"), func(q url.Values) { q.Del("i") }), "signature"},
	} {
		if status, msg := post(t, tc.url, body); status != http.StatusForbidden || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %s, want 403 (%s)", name, status, msg, tc.want)
		}
	}
	if n := rig.q.count(); n != 0 {
		t.Fatalf("%d messages enqueued from refused callbacks", n)
	}
	if status, msg := post(t, sign("inc-2"), body); status != http.StatusOK {
		t.Fatalf("the current incarnation's URL: %d %s", status, msg)
	}
	if m := rig.q.next(t); m.ToolCallID != "call_1" || m.Text != "x" {
		t.Fatalf("message %+v", m)
	}
}
