package runtime

import (
	"encoding/json"
	"strings"
	"testing"
)

// stdJSONObject is jsonObject with encoding/json, the reference.
func stdJSONObject(s string) bool {
	t := strings.TrimLeft(s, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid([]byte(s))
}

var jsonObjectCases = []string{
	``, ` `, `{}`, ` {} `, "\t{\n}\r\n", `{`, `}`, `[]`, `"x"`, `1`, `null`, `{} {}`, `{}x`,
	`{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{'a':1}`, `{"a":01}`, `{"a":-0}`, `{"a":1e5}`, `{"a":1E+5}`,
	`{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":[1,2,{"b":null}]}`, `{"a":[1,2,]}`, `{"a":tru}`,
	`{"a":true,"b":false,"c":null}`, `{"a":"\u00e9\n\t\"\\\/"}`, `{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}",
	"{\"a\":\"\xff\"}", `{"a":"é"}`, `{"a":{"b":{"c":{}}}}`, `{"a":1}}`, `{"command": "cargo test --workspace"}`,
	`{"a":NaN}`, `{"a":Infinity}`, `{"a":+1}`, "{\"a\":1}\x00", `{"a":"\ud800"}`, "\u00a0{}", `{"":""}`,
}

func TestJSONObjectAgreesWithStd(t *testing.T) {
	for _, c := range jsonObjectCases {
		if got, want := jsonObject(c), stdJSONObject(c); got != want {
			t.Errorf("jsonObject(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

func FuzzJSONObjectAgreesWithStd(f *testing.F) {
	for _, c := range jsonObjectCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := jsonObject(s), stdJSONObject(s); got != want {
			t.Fatalf("jsonObject(%q) = %v, encoding/json says %v", s, got, want)
		}
	})
}
