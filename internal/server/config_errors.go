package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ConfigError reports a configuration that cannot work. Field is the JSON
// path at fault ("mcp_servers[1].command"), "" for the document as a whole.
type ConfigError struct {
	Source string // the file, "" when not from a file
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.Source != "" {
		fmt.Fprintf(&b, " %s", e.Source)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// jsonError turns an encoding/json error into a *ConfigError naming the
// field or the position.
func jsonError(b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := position(b, se.Offset)
		return &ConfigError{Reason: fmt.Sprintf("malformed JSON at line %d, column %d: %v", line, col, se)}
	case errors.As(err, &te):
		field := strings.ReplaceAll(te.Field, ".Agent.", ".") // AgentConfig embeds runtime.Agent
		if field == "" {
			return &ConfigError{Reason: fmt.Sprintf("want a JSON object, got %s", te.Value)}
		}
		return &ConfigError{Field: locate(b, strings.Split(field, "."), te.Value), Reason: fmt.Sprintf("want %s, got %s", typeName(te.Type.String()), te.Value)}
	case errors.Is(err, io.EOF):
		return &ConfigError{Reason: "empty document (want a JSON object)"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &ConfigError{Reason: "malformed JSON: unexpected end of the document"}
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		key := strings.Trim(f, `"`)
		return &ConfigError{Field: locateKey(b, key), Reason: "unknown field (check the spelling against the documented fields)"}
	}
	return &ConfigError{Reason: msg}
}

// locate turns the dotted field of a JSON type error ("mcp_servers.command")
// into the full path of the offending value ("mcp_servers[1].command", or
// "mcp_servers[1].command[0]" for an element), the first value along that
// path whose JSON type is jsonType. It returns the dotted field when it
// finds none.
func locate(b []byte, segs []string, jsonType string) string {
	var root any
	if json.Unmarshal(b, &root) != nil {
		return strings.Join(segs, ".")
	}
	// The value itself first; elements of an array value only if no value
	// matches (a wrong element type).
	deep := false
	var walk func(v any, i int, path string) (string, bool)
	walk = func(v any, i int, path string) (string, bool) {
		if i == len(segs) && jsonTypeOf(v) == jsonType {
			return path, true
		}
		if arr, ok := v.([]any); ok && (i < len(segs) || deep) {
			for k, e := range arr {
				if p, ok := walk(e, i, fmt.Sprintf("%s[%d]", path, k)); ok {
					return p, true
				}
			}
			return "", false
		}
		obj, ok := v.(map[string]any)
		if !ok || i == len(segs) {
			return "", false
		}
		child, ok := obj[segs[i]]
		if !ok {
			return "", false
		}
		next := segs[i]
		if path != "" {
			next = path + "." + segs[i]
		}
		return walk(child, i+1, next)
	}
	if p, ok := walk(root, 0, ""); ok {
		return p
	}
	deep = true
	if p, ok := walk(root, 0, ""); ok {
		return p
	}
	return strings.Join(segs, ".")
}

// locateKey returns the full path of the first object key named key
// (an unknown field), or key when it finds none.
func locateKey(b []byte, key string) string {
	var root any
	if json.Unmarshal(b, &root) != nil {
		return key
	}
	var walk func(v any, path string) (string, bool)
	walk = func(v any, path string) (string, bool) {
		switch t := v.(type) {
		case map[string]any:
			if _, ok := t[key]; ok {
				if path == "" {
					return key, true
				}
				return path + "." + key, true
			}
			names := make([]string, 0, len(t))
			for k := range t {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				next := k
				if path != "" {
					next = path + "." + k
				}
				if p, ok := walk(t[k], next); ok {
					return p, true
				}
			}
		case []any:
			for i, e := range t {
				if p, ok := walk(e, fmt.Sprintf("%s[%d]", path, i)); ok {
					return p, true
				}
			}
		}
		return "", false
	}
	if p, ok := walk(root, ""); ok {
		return p
	}
	return key
}

func jsonTypeOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

func position(b []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := 0; i < int(off) && i < len(b); i++ {
		if b[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func typeName(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string", strings.HasSuffix(t, ".Provider"):
		return "a string"
	case t == "bool":
		return "true or false"
	}
	return "an object"
}
