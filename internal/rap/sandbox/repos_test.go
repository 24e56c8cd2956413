package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
)

// TestReposRouteEachThreadToItsRepository: with two repositories, a
// bound thread's sandbox comes from its repository, its child's is
// stacked on it there (found through the ancestors), a thread bound to
// nothing is told the names, and a binding cannot move or name what is
// not configured; the bindings survive a new Repos over the same roots.
func TestReposRouteEachThreadToItsRepository(t *testing.T) {
	t.Parallel()
	newRepos := func(rootA, rootB, repoA, repoB string) *Repos {
		var ms []*Manager
		for _, c := range []Config{{Name: "a", Repo: repoA, Root: rootA, Jail: JailOff}, {Name: "b", Repo: repoB, Root: rootB, Jail: JailOff}} {
			m, err := NewManager(c)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
		r, err := NewRepos(ms...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	repoA, repoB, rootA, rootB := testRepo(t), testRepo(t), t.TempDir(), t.TempDir()
	repos := newRepos(rootA, rootB, repoA, repoB)
	srv, err := NewReposServer(repos, rap.ServerConfig{Retry: raptest.FastRetry(5), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{Rig: raptest.NewRig(t), m: repos.Get("b"), srv: srv}
	r.base = raptest.StartServer(t, srv)

	ctx := context.Background()
	if err := repos.Bind(ctx, "thr_p", "b"); err != nil {
		t.Fatal(err)
	}
	r.call(t, "thr_p", nil, "write_file", map[string]any{"path": "parent.txt", "content": "p\n"})
	r.call(t, "thr_c", []string{"thr_p"}, "write_file", map[string]any{"path": "child.txt", "content": "c\n"})
	for _, th := range []string{"thr_p", "thr_c"} {
		m, sb, err := repos.Lookup(ctx, th)
		if err != nil || sb == nil || m.Name() != "b" || filepath.Dir(sb.Dir) != rootB {
			t.Fatalf("%s: repository %v, sandbox %+v, %v; want one in b", th, m, sb, err)
		}
	}
	// The child is stacked on the parent: the parent's file is there.
	_, child, _ := repos.Lookup(ctx, "thr_c")
	if _, err := os.Stat(filepath.Join(child.Dir, "parent.txt")); err != nil {
		t.Fatalf("the child's sandbox is not stacked on its parent's: %v", err)
	}
	res := r.call(t, "thr_n", nil, "read_file", map[string]any{"path": "README.md"})
	mustContain(t, "a thread bound to nothing", res.Text, "error: this thread names no repository", "(a, b)")
	if _, sb, _ := repos.Lookup(ctx, "thr_n"); sb != nil {
		t.Fatal("a thread bound to nothing got a sandbox")
	}

	var bc *BindConflictError
	if err := repos.Bind(ctx, "thr_p", "a"); !errors.As(err, &bc) || bc.Repo != "b" {
		t.Fatalf("moving thr_p to a: %v", err)
	}
	if err := repos.Bind(ctx, "thr_p", "b"); err != nil {
		t.Fatalf("binding thr_p to b again: %v", err)
	}
	if err := repos.Bind(ctx, "thr_q", "z"); !errors.Is(err, ErrUnknownRepo) {
		t.Fatalf("an unknown name: %v", err)
	}
	// A restart: bindings and sandboxes are found on disk.
	if err := repos.Bind(ctx, "thr_later", "a"); err != nil {
		t.Fatal(err)
	}
	again := newRepos(rootA, rootB, repoA, repoB)
	for th, want := range map[string]string{"thr_p": "b", "thr_c": "b", "thr_later": "a"} {
		if m, err := again.For(ctx, th, nil); err != nil || m.Name() != want {
			t.Fatalf("after a restart %s works in %v (%v), want %s", th, m, err, want)
		}
	}
	if _, err := NewRepos(repos.Get("a"), repos.Get("a")); err == nil {
		t.Fatal("two repositories of one name were taken")
	}
}
