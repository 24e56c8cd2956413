package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// FuzzResolve: whatever path the model gives, resolve either refuses it or
// returns a path inside the sandbox that does not go through .git or a
// symlink that leaves it.
func FuzzResolve(f *testing.F) {
	root := f.TempDir()
	outside := f.TempDir()
	dir := filepath.Join(root, "box")
	for _, d := range []string{dir, filepath.Join(dir, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "in")); err != nil {
		f.Fatal(err)
	}
	sb := &Sandbox{Thread: "t", Dir: dir}
	for _, s := range []string{"a.go", "sub/../a", "../box/a", "/etc/passwd", "out/x", "in/x", ".git/config", "./.git", "sub/../../x", "", "..", "a/./b//c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := sb.resolve(p)
		if err != nil {
			return
		}
		rel, rerr := filepath.Rel(dir, got)
		if rerr != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			t.Fatalf("resolve(%q) = %s, outside the sandbox", p, got)
		}
		if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); first == ".git" || first == "out" {
			t.Fatalf("resolve(%q) = %s, through .git or the symlink out", p, got)
		}
	})
}
