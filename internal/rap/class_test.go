package rap

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A background thread's callback URL carries its class, signed: the
// receiver stamps it on the message (so the result reaches the background
// queue), and a URL whose class was added, removed or changed is refused.
func TestCallbackURLCarriesTheClass(t *testing.T) {
	t.Parallel()
	rig := newCallbackRig(t, nil)
	bg, err := rig.signer.ClassCallbackURL("thr_1", "call_1", runtime.ClassBackground)
	if err != nil {
		t.Fatal(err)
	}
	in, err := rig.signer.ClassCallbackURL("thr_1", "call_1", runtime.ClassInteractive)
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := rig.signer.CallbackURL("thr_1", "call_1"); strings.Contains(in, "p=") || !strings.Contains(bg, "p=background") ||
		len(plain) != len(in) {
		t.Fatalf("interactive URLs must stay as they were; background ones carry p=background:\n%s\n%s", in, bg)
	}
	body := string(readTestdata(t, "callbacks", "tool_result_text.json"))
	for u, want := range map[string]runtime.Class{bg: runtime.ClassBackground, in: ""} {
		if status, msg := post(t, u, body); status != http.StatusOK {
			t.Fatalf("status %d (%s)", status, msg)
		}
		if m := rig.q.next(t); m.Class != want {
			t.Fatalf("message for %s has class %q, want %q", m.ThreadID, m.Class, want)
		}
	}
	tamper := func(raw string, f func(q url.Values)) url.Values {
		u, _ := url.Parse(raw)
		q := u.Query()
		f(q)
		return q
	}
	for name, q := range map[string]url.Values{
		"class removed":  tamper(bg, func(q url.Values) { q.Del(paramClass) }),
		"class added":    tamper(in, func(q url.Values) { q.Set(paramClass, "background") }),
		"class changed":  tamper(bg, func(q url.Values) { q.Set(paramClass, "interactive") }),
		"class repeated": tamper(bg, func(q url.Values) { q.Add(paramClass, "background") }),
	} {
		if _, err := rig.signer.Keys.Verify(q, time.Now()); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, err)
		}
	}
}
