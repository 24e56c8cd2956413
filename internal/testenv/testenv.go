// Package testenv tells tests where the local service stand-ins run
// (PostgreSQL for DSQL, DynamoDB Local, fauxqs for SQS).
//
// The scripts under scripts/services start the servers and print the
// variables; a test asks for its variable with Need. When the variable is
// unset the test is skipped, unless AGENTSLICE_REQUIRE_SERVICES=1 (as in
// `make test` and CI), where a missing service is a failure.
//
// The package only reads the environment: it must not start servers or
// touch any state.
package testenv

import (
	"os"
	"testing"
)

// RequireVar names the variable that turns a missing service into a failure.
const RequireVar = "AGENTSLICE_REQUIRE_SERVICES"

// Need returns the value of envVar, skipping the test when it is unset
// (failing it instead when AGENTSLICE_REQUIRE_SERVICES=1).
func Need(t testing.TB, envVar string) string {
	t.Helper()
	if v := os.Getenv(envVar); v != "" {
		return v
	}
	if os.Getenv(RequireVar) == "1" {
		t.Fatalf("%s is not set and %s=1: start the service with scripts/services/NAME.sh start and load its variables with eval \"$(scripts/services/NAME.sh env)\"", envVar, RequireVar)
	}
	t.Skipf("%s is not set: skipping (start the service with scripts/services/NAME.sh start; eval \"$(scripts/services/NAME.sh env)\")", envVar)
	return ""
}
