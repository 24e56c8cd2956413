package rap

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParseKeyringSecret(t *testing.T) {
	t.Parallel()
	// 64 letters and digits, as the stack's Secrets Manager generator makes them.
	const alnum = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijklmnopqrstuvwxyzAB"
	const b64 = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldC0xMjM0NTY3ODkw" // 45 bytes
	tests := []struct {
		name, value string
		wantID      string
		verifies    []string // key IDs that must verify
		wantErr     string   // substring; "" = success
	}{
		{name: "generated", value: `{"id":"k1","secret":"` + alnum + `"}`, wantID: "k1", verifies: []string{"k1"}},
		{name: "rotated", value: `{"id":"k2","secret":"` + b64 + `","older":"k1:` + alnum + `"}`, wantID: "k2", verifies: []string{"k1", "k2"}},
		{name: "spec", value: "k3:" + b64 + ",k1:" + alnum, wantID: "k3", verifies: []string{"k1", "k3"}},
		{name: "spaces", value: "\n " + `{"id":"k1","secret":"` + alnum + `"}` + "\n", wantID: "k1", verifies: []string{"k1"}},
		{name: "no id", value: `{"secret":"` + alnum + `"}`, wantErr: "field id is missing"},
		{name: "no secret", value: `{"id":"k1"}`, wantErr: "field secret is missing"},
		{name: "short", value: `{"id":"k1","secret":"c2hvcnQ"}`, wantErr: "need at least"},
		{name: "not base64", value: `{"id":"k1","secret":"` + alnum + `!!"}`, wantErr: "field secret is not base64"},
		{name: "unknown field", value: `{"id":"k1","secret":"` + alnum + `","extra":1}`, wantErr: `unknown field "extra"`},
		{name: "bad older", value: `{"id":"k1","secret":"` + alnum + `","older":"nocolon"}`, wantErr: "field older"},
		{name: "bad json", value: `{"id":"k1","secret":"` + alnum, wantErr: "malformed JSON"},
		{name: "wrong type", value: `{"id":1,"secret":"x"}`, wantErr: "field id has the wrong type"},
		{name: "duplicate id", value: `{"id":"k1","secret":"` + alnum + `","older":"k1:` + b64 + `"}`, wantErr: "appears twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kr, err := ParseKeyringSecret(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseKeyringSecret() error = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), alnum[:16]) || strings.Contains(err.Error(), b64[:16]) {
					t.Fatalf("error %q quotes key material", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKeyringSecret() error = %v", err)
			}
			if kr.CurrentID() != tt.wantID {
				t.Errorf("CurrentID() = %q, want %q", kr.CurrentID(), tt.wantID)
			}
			now := time.Unix(1_700_000_000, 0)
			for _, id := range tt.verifies {
				// Sign with a keyring whose current key is id, verify with kr.
				signer, err := NewKeyring(Key{ID: id, Secret: kr.load().keys[id]})
				if err != nil {
					t.Fatalf("key %s not in keyring: %v", id, err)
				}
				s := &Signer{Keys: signer, BaseURL: "https://cb.example/rap/callback", Now: func() time.Time { return now }}
				raw, err := s.CallbackURL("thread-1", "call-1")
				if err != nil {
					t.Fatalf("CallbackURL: %v", err)
				}
				u, _ := url.Parse(raw)
				if _, err := kr.Verify(u.Query(), now); err != nil {
					t.Errorf("key %s: Verify() = %v", id, err)
				}
			}
		})
	}
}
