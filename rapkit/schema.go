package rapkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// msgPrinter renders validation messages; it is never modified.
var msgPrinter = message.NewPrinter(language.English)

// Schema is a compiled tool inputSchema. Schemas without "$schema" are read
// as JSON Schema draft 2020-12; other drafts the library knows (4, 6, 7,
// 2019-09) are honoured when declared. References are resolved only inside
// the document: a schema that refers to another URL (a file, the network) is
// rejected, so a tool server can make the runtime read nothing else.
type Schema struct {
	compiled *jsonschema.Schema
}

const schemaURL = "urn:agentslice:rap:input-schema"

// noLoader refuses every URL the schema refers to outside itself.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema refers to %q; only references inside the schema are allowed", url)
}

// CompileSchema compiles a tool's inputSchema. It must be a JSON object (tool
// arguments are always an object, so "type", when given, must be "object").
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("missing")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("must be a JSON object")
	}
	if t, isStr := obj["type"].(string); isStr && t != "object" {
		return nil, fmt.Errorf(`"type" must be "object" (tool arguments are an object), got %q`, t)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("adding schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %s", oneLine(err.Error()))
	}
	return &Schema{compiled: sch}, nil
}

// Validate checks JSON arguments against the schema. The error says which
// argument is wrong and why, in words a model can act on.
func (s *Schema) Validate(args []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("arguments must be a JSON object")
	}
	if err := s.compiled.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errors.New(describeValidation(ve))
		}
		return err
	}
	return nil
}

// describeValidation flattens the library's error tree into "at /path: why"
// lines, dropping the schema URL noise.
func describeValidation(ve *jsonschema.ValidationError) string {
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			lines = append(lines, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(msgPrinter)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(lines) > 8 {
		lines = append(lines[:8], fmt.Sprintf("(%d more)", len(lines)-8))
	}
	return strings.Join(lines, "; ")
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}
