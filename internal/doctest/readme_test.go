package doctest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// maxReadmeLines keeps the README an entrance (issue 33): detail belongs
// under docs/.
const maxReadmeLines = 300

// TestReadmeStaysShort: README.md has at most maxReadmeLines lines.
func TestReadmeStaysShort(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page under docs/ and link it", n, maxReadmeLines)
	}
}
