package rapkit

import (
	"encoding/json"
	"fmt"
	"net/url"
	"unicode/utf8"
)

// ReservedToolName is the name under which a runtime records synthetic
// events in history; no toolset may offer a tool of that name.
const ReservedToolName = "receive_event__injected"

// DecodeToolset parses and validates a toolset document. Any problem rejects
// the whole toolset with a *FieldError naming the field (for example
// "tools[3].inputSchema"). It also compiles every inputSchema.
func DecodeToolset(b []byte) (*Toolset, []*Schema, error) {
	if len(b) > MaxToolsetBytes {
		return nil, nil, fieldErr("", "document is %d bytes, more than the limit of %d", len(b), MaxToolsetBytes)
	}
	var raw struct {
		Name           *string           `json:"name"`
		Description    *string           `json:"description"`
		Endpoint       *string           `json:"endpoint"`
		Tools          []json.RawMessage `json:"tools"`
		NeedsMigration *bool             `json:"needsMigration"`
	}
	if err := decodeStrict(b, &raw); err != nil {
		return nil, nil, err
	}
	ts := &Toolset{}
	switch {
	case raw.Name == nil:
		return nil, nil, fieldErr("name", "missing")
	case !validText(*raw.Name, 1, MaxNameLen):
		return nil, nil, fieldErr("name", "must be 1..%d characters of printable UTF-8", MaxNameLen)
	}
	ts.Name = *raw.Name
	if raw.Description != nil {
		ts.Description = *raw.Description
	}
	if raw.Endpoint == nil || *raw.Endpoint == "" {
		return nil, nil, fieldErr("endpoint", "missing")
	}
	if err := checkEndpoint(*raw.Endpoint); err != nil {
		return nil, nil, err
	}
	ts.Endpoint = *raw.Endpoint
	if raw.NeedsMigration != nil {
		ts.NeedsMigration = *raw.NeedsMigration
	}
	if len(raw.Tools) == 0 {
		return nil, nil, fieldErr("tools", "missing or empty (a toolset must offer at least one tool)")
	}
	schemas := make([]*Schema, 0, len(raw.Tools))
	seen := map[string]int{}
	for i, rt := range raw.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		td, sch, err := decodeToolDef(rt, field)
		if err != nil {
			return nil, nil, err
		}
		if j, dup := seen[td.Name]; dup {
			return nil, nil, fieldErr(field+".name", "%q is also the name of tools[%d]", td.Name, j)
		}
		seen[td.Name] = i
		ts.Tools = append(ts.Tools, *td)
		schemas = append(schemas, sch)
	}
	return ts, schemas, nil
}

func decodeToolDef(b json.RawMessage, field string) (*ToolDef, *Schema, error) {
	var raw struct {
		Name          *string         `json:"name"`
		Description   *string         `json:"description"`
		InputSchema   json.RawMessage `json:"inputSchema"`
		Annotations   json.RawMessage `json:"annotations"`
		DisplayScript *string         `json:"displayScript"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		fe := jsonFieldErr(err).(*FieldError)
		fe.Field = joinField(field, fe.Field)
		return nil, nil, fe
	}
	td := &ToolDef{}
	switch {
	case raw.Name == nil:
		return nil, nil, fieldErr(field+".name", "missing")
	case !ValidName(*raw.Name):
		return nil, nil, fieldErr(field+".name", "%.140q must be 1..%d characters of [A-Za-z0-9_-]", *raw.Name, MaxNameLen)
	case *raw.Name == ReservedToolName:
		return nil, nil, fieldErr(field+".name", "%q is reserved by the runtime", *raw.Name)
	}
	td.Name = *raw.Name
	field = fmt.Sprintf("%s(%s)", field, td.Name)
	if raw.Description == nil {
		return nil, nil, fieldErr(field+".description", "missing")
	}
	td.Description = *raw.Description
	if len(raw.InputSchema) == 0 || string(raw.InputSchema) == "null" {
		return nil, nil, fieldErr(field+".inputSchema", "missing")
	}
	sch, err := CompileSchema(raw.InputSchema)
	if err != nil {
		return nil, nil, fieldErr(field+".inputSchema", "%v", err)
	}
	td.InputSchema = append(json.RawMessage(nil), raw.InputSchema...)
	if len(raw.Annotations) > 0 && string(raw.Annotations) != "null" {
		td.Annotations = new(Annotations)
		if err := json.Unmarshal(raw.Annotations, td.Annotations); err != nil {
			fe, ok := err.(*FieldError)
			if !ok {
				return nil, nil, fieldErr(field+".annotations", "%v", err)
			}
			return nil, nil, fieldErr(joinField(field+".annotations", fe.Field), "%s", fe.Reason)
		}
	}
	if raw.DisplayScript != nil {
		td.DisplayScript = *raw.DisplayScript
	}
	return td, sch, nil
}

func joinField(prefix, field string) string {
	if field == "" {
		return prefix
	}
	return prefix + "." + field
}

func validText(s string, min, max int) bool {
	n := utf8.RuneCountInString(s)
	if n < min || n > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// checkEndpoint accepts an absolute http(s) URL or a relative reference
// (resolved against the server's base URL by the Loader).
func checkEndpoint(s string) error {
	if len(s) > maxURLLen {
		return fieldErr("endpoint", "longer than %d bytes", maxURLLen)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fieldErr("endpoint", "not a URL: %v", err)
	}
	if u.IsAbs() && ((u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return fieldErr("endpoint", "must be an http(s) URL or a path relative to the server's base URL")
	}
	return nil
}
