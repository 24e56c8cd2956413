package doctest

import (
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the module's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestDocsLinks: every link of README.md and docs/*.md resolves (file and
// anchor), and none is an external URL written as a link.
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	rel := []string{"README.md"}
	for _, p := range pages {
		r, _ := filepath.Rel(root, p)
		rel = append(rel, filepath.ToSlash(r))
	}
	if len(rel) < 5 {
		t.Fatalf("found only %v", rel)
	}
	probs, err := CheckLinks(root, rel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
}

// TestCheckLinksFindsBrokenLinks: a missing file, a missing anchor (on
// another page and on the same page) and an external link are each
// reported; a good link, an anchor of a repeated heading, an explicit id,
// links in code and a directory are not.
func TestCheckLinksFindsBrokenLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "a.md", "# A\n\n## Same\n\n## Same\n\n<a id=\"here\"></a>\n\n"+
		"[ok](b.md#the-b-page-api) [dup](#same-1) [id](#here) [dir](sub) `[code](nope.md)`\n\n"+
		"```\n[fenced](nope.md)\n```\n\n[gone](missing.md) [noanchor](b.md#nope) [self](#nowhere) [ext](https://example.com)\n")
	write(t, dir, "b.md", "# The B page: `API`!\n")
	write(t, dir, "sub/x.txt", "")
	probs, err := CheckLinks(dir, []string{"a.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.Target+": "+p.Reason)
	}
	want := []string{
		"missing.md: missing.md does not exist",
		"b.md#nope: b.md has no heading with the anchor #nope",
		"#nowhere: a.md has no heading with the anchor #nowhere",
		"https://example.com: an external URL as a link; write it as plain text",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
