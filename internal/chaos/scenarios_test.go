package chaos_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentslice/agentslice/internal/chaos"
)

// TestScenarioRegistry checks what every scenario, built in or registered,
// must declare: a unique name, an expected end state, the crash points it
// must reach (known ones), and a golden snapshot.
func TestScenarioRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range chaos.Scenarios() {
		if seen[sc.Name] {
			t.Errorf("two scenarios are called %q", sc.Name)
		}
		seen[sc.Name] = true
		if sc.End.Threads == 0 {
			t.Errorf("%s: no expected end state (End.Threads is 0)", sc.Name)
		}
		if len(sc.Reach) == 0 {
			t.Errorf("%s: declares no crash point to reach", sc.Name)
		}
		for _, p := range sc.Reach {
			if !slices.Contains(chaos.Points, p) {
				t.Errorf("%s: declares unknown crash point %q", sc.Name, p)
			}
		}
		if _, err := os.Stat(filepath.Join(chaos.GoldenDir, sc.Name+".json")); err != nil {
			t.Errorf("%s: %v (run the tests with %s=1 and review the file)", sc.Name, err, chaos.UpdateGoldenEnv)
		}
	}
}
