package chaos

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// GoldenDir holds one golden snapshot per scenario (<name>.json), relative
// to this package's directory (where `go test` runs): the crash-free run's
// end state, reviewed and committed. A bug every run shares, the reference
// included, shows up as a difference from it.
const GoldenDir = "testdata/golden"

// UpdateGoldenEnv, set to 1, makes Golden write the snapshots instead of
// comparing with them (review the diff before committing).
const UpdateGoldenEnv = "AGENTSLICE_CHAOS_UPDATE_GOLDEN"

// Golden compares the crash-free snapshot of sc with its golden file and
// returns the differences (a missing file is one).
func Golden(sc *Scenario, snap *Snapshot) []string {
	path := filepath.Join(GoldenDir, sc.Name+".json")
	got := snap.String() + "\n"
	if os.Getenv(UpdateGoldenEnv) == "1" {
		if err := os.MkdirAll(GoldenDir, 0o755); err != nil {
			return []string{fmt.Sprintf("writing the golden snapshot: %v", err)}
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			return []string{fmt.Sprintf("writing the golden snapshot: %v", err)}
		}
		return nil
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return []string{fmt.Sprintf("no golden snapshot %s: run the tests with %s=1 and review it", path, UpdateGoldenEnv)}
	}
	if err != nil {
		return []string{fmt.Sprintf("reading the golden snapshot: %v", err)}
	}
	if string(want) != got {
		return []string{"the crash-free run differs from the golden snapshot " + path + ":\n" + lineDiff(string(want), got)}
	}
	return nil
}
