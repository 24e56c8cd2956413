package stack

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentsFile: agents that fit stay in the slice function's environment
// and its asset is the bare bootstrap directory; agents that do not fit
// ship as AgentsFileName in the asset, next to the bootstrap, and
// AGENTSLICE_AGENTS_FILE names it.
func TestAgentsFile(t *testing.T) {
	f := setup(t)
	asset := func(tj map[string]any, s *Stack) string {
		t.Helper()
		code, _ := propsOf(t, tj, s.Resolve(s.Slice.FunctionArn()))["Code"].(obj)
		key, _ := code["S3Key"].(string)
		if !strings.HasSuffix(key, ".zip") {
			t.Fatalf("slice function S3Key = %s, want <hash>.zip", js(code["S3Key"]))
		}
		return filepath.Join(f.dir, "cdk.out", "asset."+strings.TrimSuffix(key, ".zip"))
	}

	// Inline (the full stack's small agents; TestEnvironment checks the value).
	full := envOf(t, f.fullJSON, f.full.Resolve(f.full.Slice.FunctionArn()))
	if _, ok := full[EnvAgentsFile]; ok || full[EnvAgents] == "" {
		t.Errorf("small agents: %s = %s, %s = %s; want them inline", EnvAgents, js(full[EnvAgents]), EnvAgentsFile, js(full[EnvAgentsFile]))
	}
	if _, err := os.Stat(filepath.Join(asset(f.fullJSON, f.full), AgentsFileName)); err == nil {
		t.Error("small agents: the asset holds an agents file too")
	}

	// As a file (the public stack's bigAgents).
	env := envOf(t, f.publicJSON, f.public.Resolve(f.public.Slice.FunctionArn()))
	if _, ok := env[EnvAgents]; ok || env[EnvAgentsFile] != AgentsFileName {
		t.Fatalf("big agents: %s = %.60s..., %s = %s; want only the file", EnvAgents, js(env[EnvAgents]), EnvAgentsFile, js(env[EnvAgentsFile]))
	}
	dir := asset(f.publicJSON, f.public)
	got, err := os.ReadFile(filepath.Join(dir, AgentsFileName))
	if err != nil {
		t.Fatalf("big agents: %v", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(bigAgents)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, compact.Bytes()) {
		t.Errorf("big agents: %s holds %.80s..., want the compacted document", AgentsFileName, got)
	}
	want, _ := os.ReadFile(filepath.Join(f.dir, "bin", FnSlice, "bootstrap"))
	bin, err := os.ReadFile(filepath.Join(dir, "bootstrap"))
	if st, serr := os.Stat(filepath.Join(dir, "bootstrap")); err != nil || serr != nil || !bytes.Equal(bin, want) || st.Mode().Perm()&0o111 == 0 {
		t.Errorf("big agents: the asset's bootstrap is not the prebuilt one, executable (%v)", err)
	}
	// Still within the environment's budget without them.
	size := 0
	for k, v := range env {
		if s, ok := v.(string); ok {
			size += len(k) + len(s)
		}
	}
	if size > lambdaEnvBytes {
		t.Errorf("big agents: the literal environment is %d bytes, over %d", size, lambdaEnvBytes)
	}
}

// TestAgentsBundle: the local bundling writes the bootstrap and the agents
// file, and a failure is kept for New (TryBundle still reports success, so
// the CDK does not fall back to a Docker build that would hide it).
func TestAgentsBundle(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bootstrap.src")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	b := &agentsBundle{bootstrap: bin, agents: []byte(`{"agents":[]}`)}
	if ok := b.TryBundle(&out, nil); !*ok || b.err != nil {
		t.Fatalf("TryBundle = %v, err %v", *ok, b.err)
	}
	if got, _ := os.ReadFile(filepath.Join(out, AgentsFileName)); string(got) != `{"agents":[]}` {
		t.Errorf("%s = %q", AgentsFileName, got)
	}
	missing := &agentsBundle{bootstrap: filepath.Join(dir, "nope"), agents: []byte("{}")}
	if ok := missing.TryBundle(&out, nil); !*ok || missing.err == nil {
		t.Fatalf("TryBundle without a bootstrap = %v, err %v; want true and the error kept", *ok, missing.err)
	}
	var pe *PropsError
	if err := bundleError(missing); !errors.As(err, &pe) || pe.Field != "Agents" || !strings.Contains(err.Error(), AgentsFileName) {
		t.Errorf("bundleError = %v, want a PropsError for Agents naming %s", err, AgentsFileName)
	}
}
