// Package testenv decides whether a test that needs a local service runs.
//
// Tests that talk to a real protocol server (PostgreSQL, DynamoDB Local,
// fauxqs) read its address from an environment variable that the service
// scripts print (scripts/services/NAME.sh env). When the variable is unset the
// test is skipped with a message saying how to start the service, unless
// AGENTSLICE_REQUIRE_SERVICES=1, in which case it fails: `make test` and CI
// set that, so a missing service can never pass as a green run.
//
// The package must not start services or import anything beyond the
// standard library; that is the scripts' job.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireVar is the variable that turns a missing service into a failure.
const RequireVar = "AGENTSLICE_REQUIRE_SERVICES"

// scripts names the service script that provides each known variable, for
// the skip message.
var scripts = map[string]string{
	"AGENTSLICE_TEST_PG_DSN":            "scripts/services/postgres.sh",
	"AGENTSLICE_TEST_DYNAMODB_ENDPOINT": "scripts/services/dynamodb.sh",
	"AGENTSLICE_TEST_SQS_ENDPOINT":      "scripts/services/fauxqs.sh",
}

// Need returns the value of envVar. When it is unset or blank, the test is
// skipped, or fails when AGENTSLICE_REQUIRE_SERVICES=1.
func Need(t testing.TB, envVar string) string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(envVar))
	if v != "" {
		return v
	}
	how := "start the service and export its variables"
	if s, ok := scripts[envVar]; ok {
		how = "run `" + s + " start` and `eval \"$(" + s + " env)\"`"
	}
	if os.Getenv(RequireVar) == "1" {
		t.Fatalf("%s is not set and %s=1: %s", envVar, RequireVar, how)
		return ""
	}
	t.Skipf("%s is not set: %s (set %s=1 to fail instead of skipping)", envVar, how, RequireVar)
	return ""
}

// Node returns the path of the node binary for tests that run a Node
// script of their own. When node is missing the test is skipped, or fails
// when AGENTSLICE_REQUIRE_SERVICES=1.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		msg := "node is not on PATH (install Node.js 20 or later)"
		if os.Getenv(RequireVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// NodeModule returns the path of a file installed by npm at the repository
// root (node_modules/<rel>), for tests that run a real Node server. When
// node or the file is missing the test is skipped, or fails when
// AGENTSLICE_REQUIRE_SERVICES=1.
func NodeModule(t testing.TB, rel string) string {
	t.Helper()
	need := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + " (run scripts/npm-deps.sh or `npm ci` at the repository root)"
		if os.Getenv(RequireVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		need("node is not on PATH")
	}
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			need("repository root not found")
		}
		dir = parent
	}
	p := filepath.Join(dir, "node_modules", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		need("%s is not installed", p)
	}
	return p
}

// ChromiumVar names a Chromium binary to use instead of the one on PATH.
const ChromiumVar = "AGENTSLICE_CHROMIUM"

// Chromium returns the path of a headless-capable Chromium for browser
// tests: $AGENTSLICE_CHROMIUM, else chromium or chromium-browser on PATH.
// When there is none the test is skipped, or fails when
// AGENTSLICE_REQUIRE_SERVICES=1.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := strings.TrimSpace(os.Getenv(ChromiumVar)); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed (run scripts/chromium.sh, or set " + ChromiumVar + ")"
	if os.Getenv(RequireVar) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
