package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Git in the jail. A jailed command sees the user's repository read-only,
// so a `git commit` in its sandbox (the model's own commits, a tool that
// commits) would fail on the object store. What a commit on the sandbox's
// own branch writes is opened, and nothing else of the user's git
// directory:
//   - new objects go to the sandbox's own object store
//     (ROOT/.agentslice/objects/NAME, GIT_OBJECT_DIRECTORY in the jail),
//     which borrows the repository's objects read-only
//     (GIT_ALTERNATE_OBJECT_DIRECTORIES); the repository's object store
//     stays read-only, so a command cannot delete or overwrite the user's
//     objects;
//   - the worktree's own git directory (.git/worktrees/NAME: its HEAD,
//     index and reflog) is writable;
//   - so are the directories of the sandboxes' branches and their reflogs
//     (.git/refs/heads/agentslice and .git/logs/refs/heads/agentslice): a
//     commit moves refs/heads/agentslice/NAME. (A command could move
//     another sandbox's branch there, never one of the user's branches,
//     tags, HEAD, index or working copy.)
//
// The objects a command wrote are brought into the repository's store
// (importStore: git reads them and writes them again, so a forged file
// cannot corrupt the store) when the command ends, when a restarted server
// reports a command that died with it, and before the tools read the
// sandbox (snapshot, Diff, Files). Until then the sandbox's branch may
// name a commit that only the sandbox's store holds.

// storeDir is the sandbox's own object store.
func (m *Manager) storeDir(name string) string {
	return filepath.Join(m.metaDir(), "objects", name)
}

// jailGit is what a jailed command of one sandbox gets of git's: its
// object store and alternates (the jail's environment) and the
// directories a commit on its branch writes (writable binds).
type jailGit struct {
	Store, Objects string
	Write          []string
}

// env returns the jailed command's git variables.
func (g jailGit) env() []string {
	if g.Store == "" {
		return nil
	}
	return []string{"GIT_OBJECT_DIRECTORY=" + g.Store, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + g.Objects}
}

// jailGitFor prepares a jailed command's git of sb: its store and the
// directories of its branch's ref and reflog exist, and its worktree's git
// directory is found. A repository whose git directory is not the plain
// files layout (no refs/heads directory) gets nothing: git in the jail
// reads, as before, and a commit fails.
func (m *Manager) jailGitFor(ctx context.Context, sb *Sandbox) (jailGit, error) {
	if m.commonDir == "" {
		return jailGit{}, nil
	}
	if _, err := os.Stat(filepath.Join(m.commonDir, "refs", "heads")); err != nil {
		return jailGit{}, nil
	}
	wt, err := git(ctx, sb.Dir, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return jailGit{}, fmt.Errorf("finding the git directory of thread %s's worktree: %w", sb.Thread, err)
	}
	prefix := filepath.FromSlash(strings.TrimSuffix(BranchPrefix, "/"))
	g := jailGit{Store: m.storeDir(sb.Name), Objects: filepath.Join(m.commonDir, "objects"),
		Write: []string{filepath.Clean(strings.TrimSpace(wt)),
			filepath.Join(m.commonDir, "refs", "heads", prefix), filepath.Join(m.commonDir, "logs", "refs", "heads", prefix)}}
	for _, d := range append([]string{g.Store}, g.Write[1:]...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return jailGit{}, fmt.Errorf("preparing git for the jail: %v", err)
		}
	}
	return g, nil
}

// importStore brings the objects in sb's own store (written by jailed
// commands) into the repository's store and removes the loose ones it
// brought. The caller holds sb.mu (two imports at once could see each
// other's removals and fail).
func (sb *Sandbox) importStore(ctx context.Context) error {
	if sb.store == "" || !hasFiles(sb.store) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	only := append(gitEnv(), "GIT_OBJECT_DIRECTORY="+sb.store, "GIT_ALTERNATE_OBJECT_DIRECTORIES=")
	list := exec.CommandContext(ctx, "git", "-C", sb.Dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
	list.Env = only
	var ids, stderr bytes.Buffer
	list.Stdout, list.Stderr = &ids, &stderr
	if err := list.Run(); err != nil {
		return fmt.Errorf("sandbox: listing the objects thread %s's commands wrote: %s: %w", sb.Thread, strings.TrimSpace(stderr.String()), err)
	}
	if ids.Len() == 0 {
		return nil
	}
	pack := exec.CommandContext(ctx, "git", "-C", sb.Dir, "pack-objects", "--stdout", "-q")
	pack.Env, pack.Stdin = only, bytes.NewReader(ids.Bytes())
	unpack := exec.CommandContext(ctx, "git", "-C", sb.Dir, "unpack-objects", "-q")
	unpack.Env = gitEnv()
	pipe, err := pack.StdoutPipe()
	if err != nil {
		return err
	}
	unpack.Stdin = pipe
	var packErr, unpackErr bytes.Buffer
	pack.Stderr, unpack.Stderr = &packErr, &unpackErr
	if err := pack.Start(); err != nil {
		return err
	}
	uerr := unpack.Run()
	perr := pack.Wait()
	if err := errors.Join(perr, uerr); err != nil {
		return fmt.Errorf("sandbox: bringing the objects thread %s's commands wrote into the repository: %s %s: %w",
			sb.Thread, strings.TrimSpace(packErr.String()), strings.TrimSpace(unpackErr.String()), err)
	}
	for _, id := range strings.Fields(ids.String()) {
		if len(id) > 2 {
			_ = os.Remove(filepath.Join(sb.store, id[:2], id[2:]))
		}
	}
	return nil
}

// hasFiles says whether dir holds a regular file anywhere below it.
func hasFiles(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found
}
