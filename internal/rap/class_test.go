package rap

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Every callback URL carries its thread's class, signed: the receiver
// stamps it on the message (so the result reaches the class's queue), and a
// URL whose class was added, removed or changed is refused. A URL minted
// before every URL carried the class (p only for background threads) still
// verifies, with no class: the receiver's class lookup routes it.
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
	if plain, _ := rig.signer.CallbackURL("thr_1", "call_1"); !strings.Contains(in, "p=interactive") || !strings.Contains(bg, "p=background") ||
		len(plain) != len(in) {
		t.Fatalf("interactive URLs carry p=interactive, background ones p=background:\n%s\n%s", in, bg)
	}
	legacy := legacyURL(t, rig.signer, in)
	body := string(readTestdata(t, "callbacks", "tool_result_text.json"))
	for u, want := range map[string]runtime.Class{bg: runtime.ClassBackground, in: runtime.ClassInteractive, legacy: ""} {
		if status, msg := post(t, u, body); status != http.StatusOK {
			t.Fatalf("status %d (%s)", status, msg)
		}
		if m := rig.q.next(t); m.Class != want {
			t.Fatalf("message for %s has class %q, want %q", u, m.Class, want)
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
		"class added":    tamper(legacy, func(q url.Values) { q.Set(paramClass, "background") }),
		"class changed":  tamper(bg, func(q url.Values) { q.Set(paramClass, "interactive") }),
		"class repeated": tamper(bg, func(q url.Values) { q.Add(paramClass, "background") }),
	} {
		if _, err := rig.signer.Keys.Verify(q, time.Now()); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, err)
		}
	}
}

// legacyURL re-signs u as URLs were minted for interactive threads before
// every URL carried the class: without p.
func legacyURL(t *testing.T, s *Signer, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := pu.Query()
	q.Del(paramClass)
	cur := s.Keys.load().current
	q.Set(paramSig, base64.RawURLEncoding.EncodeToString(mac(cur.Secret, q.Get(paramKey), q.Get(paramThread), q.Get(paramCall), q.Get(paramExpires), "", "", "")))
	pu.RawQuery = q.Encode()
	return pu.String()
}
