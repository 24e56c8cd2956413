package rap

import (
	"encoding/json"
	"fmt"
	"strings"
)

// KeyringSecret is the JSON form of a keyring as a deployment stores it (the
// AWS stack keeps it in Secrets Manager and generates the first key):
//
//	{"id": "k1", "secret": "<base64>"}
//	{"id": "k2", "secret": "<base64>", "older": "k1:<base64>"}   after a rotation
//
// ID and Secret are the current (signing) key; Older is an optional
// ParseKeyring spec of keys that still verify. The stack generates Secret as
// 64 letters and digits, which read as base64 give 48 random bytes.
type KeyringSecret struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
	Older  string `json:"older,omitempty"`
}

// ParseKeyringSecret reads a keyring from a secret's value: either the JSON
// of KeyringSecret (a value starting with '{') or a ParseKeyring spec
// ("id:base64secret[,id:base64secret...]"). Errors name the field at fault
// and never contain key material.
func ParseKeyringSecret(value string) (*Keyring, error) {
	value = strings.TrimSpace(value)
	if !strings.HasPrefix(value, "{") {
		return ParseKeyring(value)
	}
	var ks KeyringSecret
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ks); err != nil {
		return nil, fmt.Errorf("rap: keyring secret is not the JSON of {id, secret, older}: %w", redactJSONError(err))
	}
	if ks.ID == "" {
		return nil, fmt.Errorf("rap: keyring secret: field id is missing")
	}
	if ks.Secret == "" {
		return nil, fmt.Errorf("rap: keyring secret: field secret is missing")
	}
	current, err := decodeB64(ks.Secret)
	if err != nil {
		return nil, fmt.Errorf("rap: keyring secret: field secret is not base64")
	}
	var older []Key
	if ks.Older != "" {
		kr, err := ParseKeyring(ks.Older)
		if err != nil {
			return nil, fmt.Errorf("rap: keyring secret: field older: %w", err)
		}
		for id, secret := range kr.load().keys {
			older = append(older, Key{ID: id, Secret: secret})
		}
	}
	return NewKeyring(Key{ID: ks.ID, Secret: current}, older...)
}

// redactJSONError keeps the kind of a JSON decoding error and drops anything
// that could quote the secret's value.
func redactJSONError(err error) error {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Errorf("syntax error at offset %d", e.Offset)
	case *json.UnmarshalTypeError:
		return fmt.Errorf("field %s has the wrong type", e.Field)
	default:
		msg := err.Error()
		if strings.HasPrefix(msg, "json: unknown field ") {
			return fmt.Errorf("%s", msg)
		}
		return fmt.Errorf("malformed JSON")
	}
}
