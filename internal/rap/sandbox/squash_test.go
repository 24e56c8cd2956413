package sandbox

import "testing"

// TestSquashChild: a parent squashes its stacked child's work into its own
// sandbox as one commit; a conflict names the files and leaves both
// sandboxes' files as they were; a sandbox not stacked on the caller is
// refused.
func TestSquashChild(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	before := fingerprint(t, repo)
	r := newRig(t, repo, Config{})
	kids := []string{"thr_root", "thr_par"}
	r.call(t, "thr_par", nil, "edit_file", map[string]any{"path": "calc/calc.go", "old": "a - b", "new": "a + b"})
	r.call(t, "thr_kid", kids, "write_file", map[string]any{"path": "kid.txt", "content": "from the child\n"})
	r.call(t, "thr_kid", kids, "edit_file", map[string]any{"path": "calc/notes.txt", "old": "two", "new": "2"})
	r.call(t, "thr_par", nil, "write_file", map[string]any{"path": "README.md", "content": "# parent, after the spawn\n"})

	m := r.call(t, "thr_par", nil, "squash_child", map[string]any{"thread": "thr_kid"})
	mustContain(t, "squash", m.Text, "squashed thread thr_kid into your sandbox as commit ", "calc/notes.txt, kid.txt")
	d := r.call(t, "thr_par", nil, "diff", map[string]any{}).Text
	mustContain(t, "parent diff after squash", d, "4 files changed", "README.md, calc/calc.go, calc/notes.txt, kid.txt")
	if got := gitOut(t, repo, "log", "-1", "--format=%s", "agentslice/thr_par"); got != "agentslice: squash thr_kid into thr_par" {
		t.Fatalf("the parent's last commit: %q", got)
	}
	mustContain(t, "second squash", r.call(t, "thr_par", nil, "squash_child", map[string]any{"thread": "thr_kid"}).Text, "no changes to squash")

	// A conflict: both change the same line after the (first) squash.
	r.call(t, "thr_kid", kids, "edit_file", map[string]any{"path": "README.md", "old": "# demo", "new": "# child's title"})
	r.call(t, "thr_par", nil, "write_file", map[string]any{"path": "README.md", "content": "# parent's title\n"})
	m = r.call(t, "thr_par", nil, "squash_child", map[string]any{"thread": "thr_kid"})
	mustContain(t, "conflict", m.Text, "error: ", "conflict", "README.md")
	if got := r.call(t, "thr_par", nil, "read_file", map[string]any{"path": "README.md"}).Text; got != "     1\t# parent's title\n" {
		t.Fatalf("the parent's README after a conflict: %q", got)
	}
	if st := gitOut(t, r.mustBox(t, "thr_par").Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("the parent's sandbox after a conflict:\n%s", st)
	}
	if got := r.call(t, "thr_kid", kids, "read_file", map[string]any{"path": "README.md"}).Text; got != "     1\t# child's title\n" {
		t.Fatalf("the child's README after a conflict: %q", got)
	}

	r.call(t, "thr_other", nil, "write_file", map[string]any{"path": "x.txt", "content": "x\n"})
	r.call(t, "thr_par", nil, "write_file", map[string]any{"path": "y.txt", "content": "y\n"})
	mustContain(t, "not stacked", r.call(t, "thr_par", nil, "squash_child", map[string]any{"thread": "thr_other"}).Text, "error: ", "not stacked on thr_par")
	mustContain(t, "unknown child", r.call(t, "thr_par", nil, "squash_child", map[string]any{"thread": "thr_none"}).Text, "error: ", "thr_none has no sandbox yet")
	if fingerprint(t, repo) != before {
		t.Fatal("squashing wrote the user's working copy, index or HEAD")
	}
}
