package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// AgentsDoc is the JSON document defining a deployment's agents: the file
// deploy/agents.json, and the "agents" and "default_agent" fields of
// `agentslice serve`'s configuration, which have the same shape.
type AgentsDoc struct {
	Agents       []AgentDef `json:"agents"`
	DefaultAgent string     `json:"default_agent,omitempty"`
}

// AgentDef is an Agent whose instructions may instead come from a file
// (InstructionsFile, relative to the document's directory).
type AgentDef struct {
	Agent
	InstructionsFile string `json:"instructions_file,omitempty"`
}

// MaxInstructionsBytes caps an agent's instructions read from a file.
const MaxInstructionsBytes = 1 << 20

// DecodeAgentsDoc parses an agents document strictly (unknown fields and
// trailing data are errors). It does not read instruction files or
// validate: see Resolve.
func DecodeAgentsDoc(b []byte) (*AgentsDoc, error) {
	var d AgentsDoc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
			return nil, &AgentError{Field: strings.Trim(f, `"`), Reason: "unknown field"}
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// AgentDef embeds Agent: its fields appear as "agents.Agent.x".
			field := strings.ReplaceAll(te.Field, ".Agent.", ".")
			return nil, &AgentError{Field: field, Reason: fmt.Sprintf("want %s, got %s", te.Type, te.Value)}
		}
		return nil, &AgentError{Reason: "malformed JSON: " + msg}
	}
	if dec.More() {
		return nil, &AgentError{Reason: "trailing data after the JSON object"}
	}
	return &d, nil
}

// Resolve reads the instruction files (relative paths from dir) with
// readFile and validates the definitions (ValidateAgents). It returns the
// definitions with their instructions inline.
func (d *AgentsDoc) Resolve(dir string, readFile func(string) ([]byte, error)) ([]Agent, error) {
	out := make([]Agent, len(d.Agents))
	for i, ad := range d.Agents {
		a := ad.Agent
		if f := ad.InstructionsFile; f != "" {
			field := fmt.Sprintf("agents[%d].instructions_file", i)
			if a.Instructions != "" {
				return nil, &AgentError{Agent: a.Name, Field: field, Reason: "set together with instructions; use one of them"}
			}
			if !filepath.IsAbs(f) {
				f = filepath.Join(dir, f)
			}
			b, err := readFile(f)
			switch {
			case err != nil:
				return nil, &AgentError{Agent: a.Name, Field: field, Reason: err.Error()}
			case len(b) > MaxInstructionsBytes:
				return nil, &AgentError{Agent: a.Name, Field: field, Reason: fmt.Sprintf("%s is larger than %d bytes", f, MaxInstructionsBytes)}
			}
			a.Instructions = string(b)
		}
		out[i] = a
	}
	if err := ValidateAgents(out, d.DefaultAgent); err != nil {
		return nil, err
	}
	return out, nil
}
