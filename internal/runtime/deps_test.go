package runtime_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The core must not depend on AWS, SQL drivers or HTTP clients: bindings
// implement its interfaces, not the other way round (STYLE.md, rule 1).
func TestCoreImportsNoBindings(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/agentslice/agentslice/internal/runtime").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"github.com/aws/", "github.com/jackc/", "net/http", "database/sql",
		"github.com/agentslice/agentslice/internal/local", "github.com/agentslice/agentslice/internal/dsql",
		"go.opentelemetry.io/"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("internal/runtime depends on %s", dep)
			}
		}
	}
}
