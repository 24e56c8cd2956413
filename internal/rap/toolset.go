package rap

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentslice/agentslice/internal/runtime"
)

// ToolsetError reports a toolset that could not be loaded or was rejected
// whole, with the server it came from.
type ToolsetError struct {
	Server string // the configured base URL
	// Transient is true for failures a later fetch may fix (transport errors,
	// 5xx); false for a toolset that is invalid.
	Transient bool
	Err       error
}

func (e *ToolsetError) Error() string {
	return fmt.Sprintf("rap: toolset of %s: %v", e.Server, e.Err)
}

func (e *ToolsetError) Unwrap() error { return e.Err }

// DuplicateToolError reports a tool name offered by more than one toolset
// (or by a toolset and a built-in tool). No RAP toolset's tool of that name
// is offered; a built-in of that name is kept.
type DuplicateToolError struct {
	Name    string
	Sources []string // "toolset NAME (BASE)" or "built-in"
}

func (e *DuplicateToolError) Error() string {
	return fmt.Sprintf("rap: tool name %q is offered by %s; the RAP tools of that name are disabled",
		e.Name, strings.Join(e.Sources, " and "))
}

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
	case !validName(*raw.Name):
		return nil, nil, fieldErr(field+".name", "%.140q must be 1..%d characters of [A-Za-z0-9_-]", *raw.Name, MaxNameLen)
	case *raw.Name == runtime.InjectedToolName:
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

// loadedToolset is a validated toolset from one server, with its compiled
// schemas and resolved endpoint. It is immutable once built and may be
// shared by the toolsets of many root threads.
type loadedToolset struct {
	base     string // configured base URL, without a trailing slash
	endpoint string // absolute
	doc      *Toolset
	schemas  []*Schema
	deadline time.Duration // per-server call deadline override; 0: the engine's default
}

func newLoadedToolset(base string, doc *Toolset, schemas []*Schema) (*loadedToolset, error) {
	bu, err := url.Parse(base + "/")
	if err != nil {
		return nil, fmt.Errorf("parsing base URL: %w", err)
	}
	ep, err := bu.Parse(doc.Endpoint)
	if err != nil {
		return nil, fieldErr("endpoint", "cannot be resolved against %s: %v", base, err)
	}
	return &loadedToolset{base: base, endpoint: ep.String(), doc: doc, schemas: schemas}, nil
}

func (l *loadedToolset) source() string {
	return fmt.Sprintf("toolset %q (%s)", l.doc.Name, l.base)
}

// Set is the tools offered to one root thread: the base toolbox's tools and
// every valid RAP toolset's tools whose names are unique. It implements
// runtime.Toolset and is immutable.
type Set struct {
	entries  map[string]runtime.ToolEntry
	specs    []runtime.ToolSpec
	problems []error
	// incomplete is set when a server could not be reached or served an
	// invalid toolset; the Loader fetches again later, with backoff.
	incomplete bool
}

var _ runtime.Toolset = (*Set)(nil)

// Lookup returns the tool registered under name.
func (s *Set) Lookup(name string) (runtime.ToolEntry, bool) {
	e, ok := s.entries[name]
	return e, ok
}

// Specs returns the offered tools' specs sorted by name.
func (s *Set) Specs() []runtime.ToolSpec { return s.specs }

// Problems returns why toolsets or tools were left out: *ToolsetError,
// *DuplicateToolError and *LongToolNameError values.
func (s *Set) Problems() []error { return s.problems }

// buildSet merges base and the loaded toolsets. A name offered twice disables
// every RAP tool of that name (a built-in keeps it).
//
// servers are every configured server's base URL: a cancellation goes to
// all of them (the spec's SHOULD), not only to the server of the tool.
func buildSet(base runtime.Toolset, d *Dispatcher, servers []string, sets []*loadedToolset, problems []error) *Set {
	s := &Set{entries: map[string]runtime.ToolEntry{}, problems: problems}
	owners := map[string][]string{}
	builtin := map[string]bool{}
	if base != nil {
		for _, sp := range base.Specs() {
			builtin[sp.Name] = true
			owners[sp.Name] = append(owners[sp.Name], "built-in")
		}
	}
	long := map[string]bool{}
	for _, ls := range sets {
		for _, td := range ls.doc.Tools {
			if len(td.Name) > MaxModelToolNameLen {
				if !long[td.Name] {
					s.problems = append(s.problems, &LongToolNameError{Name: td.Name, Source: ls.source()})
				}
				long[td.Name] = true
				continue
			}
			owners[td.Name] = append(owners[td.Name], ls.source())
		}
	}
	dup := map[string]bool{}
	var names []string
	for name, o := range owners {
		if len(o) > 1 {
			dup[name] = true
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		s.problems = append(s.problems, &DuplicateToolError{Name: name, Sources: owners[name]})
	}
	if base != nil {
		for _, sp := range base.Specs() {
			if e, ok := base.Lookup(sp.Name); ok {
				s.entries[sp.Name] = e
				s.specs = append(s.specs, e.Spec)
			}
		}
	}
	for _, ls := range sets {
		for i := range ls.doc.Tools {
			td := &ls.doc.Tools[i]
			if dup[td.Name] || long[td.Name] {
				continue
			}
			spec := runtime.ToolSpec{Name: td.Name, Description: td.Description, InputSchema: td.InputSchema}
			s.entries[td.Name] = runtime.ToolEntry{Spec: spec, Toolset: ls.doc.Name, Async: &remoteTool{d: d, set: ls, def: td, schema: ls.schemas[i], servers: servers}}
			s.specs = append(s.specs, spec)
		}
	}
	slices.SortFunc(s.specs, func(a, b runtime.ToolSpec) int { return strings.Compare(a.Name, b.Name) })
	return s
}
