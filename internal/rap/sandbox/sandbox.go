package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// BranchPrefix prefixes the branch of every sandbox: agentslice/<thread>.
const BranchPrefix = "agentslice/"

// baseRefPrefix prefixes the ref that remembers a sandbox's base commit
// (what diff compares against; moved by Apply and Squash).
const baseRefPrefix = "refs/agentslice/base/"

// stackRefPrefix prefixes the ref that remembers the parent's commit a
// stacked sandbox started from (it never moves).
const stackRefPrefix = "refs/agentslice/stack/"

// Config configures a Manager.
type Config struct {
	// Repo is the user's repository (any directory inside its working
	// copy). Required.
	Repo string
	// Name names the repository among the several one server may serve
	// (repos.go). Default: the base name of its top directory.
	Name string
	// Root is the directory the sandboxes' worktrees live in, one
	// directory per thread. Default: <user cache dir>/agentslice/sandboxes/
	// <repo name>-<hash of its path>.
	Root string
	// Env is the environment of run_command's commands (KEY=VALUE, already
	// built by procenv.Build); nil gives them procenv.DefaultPass of this
	// process's environment.
	Env []string
	// Timeout kills a command (its whole process group) that runs longer;
	// a call may ask for less. Default 20 minutes.
	Timeout time.Duration
	// MaxOutput caps the output a run_command result carries (its tail).
	// Default 16 KiB.
	MaxOutput int
	// MaxRead caps the bytes read_file returns per call. Default 64 KiB.
	MaxRead int
	// Batch is how often a running command's new output goes out as a
	// view_update (and, for a watched command, how often it may become an
	// event). Default 5s.
	Batch time.Duration
	// WatchEvery is the shortest time between two output events of a
	// watched command (run_command's watch), so a chatty build does not
	// wake the model at every batch. Default 30s.
	WatchEvery time.Duration
	// MaxBatch caps the output one view_update or output event carries
	// (the newest bytes; the log has all). Default 4 KiB.
	MaxBatch int
	// Jail says whether commands run in a bubblewrap jail (jail.go).
	// Default JailAuto.
	Jail JailMode
	// Network lets jailed commands use the network without asking (every
	// thread's; NetworkFor decides per thread first). Default false: a
	// command that asks for the network asks the person (permission.go).
	Network bool
	// NetworkFor returns the network access of a thread's agent (serve:
	// the agent definition's network field); "" or a nil NetworkFor
	// leaves it to Network.
	NetworkFor func(ctx context.Context, thread string) (Access, error)
	// MaxNetwork, when set, is the most network access a thread gets (the
	// standalone server's -network): an invocation's agent policy (its
	// x-agentslice-agent field, sent by agentslice's runtime) applies
	// within it, and a thread whose invocation names none gets MaxNetwork.
	// The order is deny < ask < allow.
	MaxNetwork Access
	// Logger hears of what goes wrong outside a call (an unreadable
	// command record, an interrupted command that cannot be reported);
	// default: NewServer's logger.
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultTimeout    = 20 * time.Minute
	DefaultMaxOutput  = 16 << 10
	DefaultMaxRead    = 64 << 10
	DefaultBatch      = 5 * time.Second
	DefaultWatchEvery = 30 * time.Second
	DefaultMaxBatch   = 4 << 10
)

// WithDefaults returns a copy of c with the defaults filled in (Root is
// derived from the repository by NewManager).
func (c Config) WithDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.MaxRead <= 0 {
		c.MaxRead = DefaultMaxRead
	}
	if c.Batch <= 0 {
		c.Batch = DefaultBatch
	}
	if c.WatchEvery <= 0 {
		c.WatchEvery = DefaultWatchEvery
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.Jail == "" {
		c.Jail = JailAuto
	}
	return c
}

// Manager owns the sandboxes of one repository.
type Manager struct {
	cfg      Config
	repo     string // the top of the user's working copy
	mu       sync.Mutex
	creating sync.Mutex // git worktree add takes repository-wide locks
	boxes    map[string]*Sandbox
	// bwrap is the jail's bwrap, "" when commands run unjailed;
	// jailProblem says why not (JailAuto and a failed probe).
	bwrap, jailProblem string
	// rg is ripgrep's path, the search tool's backend when set (search.go).
	rg       string
	stopping atomic.Bool // the toolset server is stopping (Server.Stop)
	// publicURL is the toolset server's base URL (permission questions'
	// response_url), set by NewServer; asks the questions waiting.
	publicURL string
	asks      asks
	// gitDir is the repository's git directory when it is under /tmp
	// (the jail binds it back over its private /tmp), else "".
	gitDir string
	// commonDir is the repository's git directory (absolute); a jailed
	// command's commit writes parts of it (gitjail.go).
	commonDir string
}

// Sandbox is one thread's worktree.
type Sandbox struct {
	Thread string
	Name   string // see Name
	Branch string
	Dir    string
	// base is the commit diff compares against: where the sandbox started,
	// moved by Apply and Squash (under Manager.creating and mu).
	base string
	// store is the sandbox's own object store, where jailed commands
	// write objects (gitjail.go).
	store string
	// mu serializes the git commands run inside the sandbox (they share
	// its index).
	mu sync.Mutex
}

// NewManager checks that cfg.Repo is a git working copy with a commit and
// returns its Manager.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Repo == "" {
		return nil, errors.New("sandbox: repo: missing (the repository the sandboxes are made from)")
	}
	cfg = cfg.WithDefaults()
	abs, err := filepath.Abs(cfg.Repo)
	if err != nil {
		return nil, fmt.Errorf("sandbox: repo %q: %w", cfg.Repo, err)
	}
	top, err := git(context.Background(), abs, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("sandbox: repo %q is not a git working copy: %w", cfg.Repo, err)
	}
	top = strings.TrimSpace(top)
	if _, err := git(context.Background(), top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return nil, fmt.Errorf("sandbox: repo %q has no commit yet (sandboxes start from HEAD): %w", cfg.Repo, err)
	}
	if cfg.Root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("sandbox: root: no user cache directory, set it explicitly: %w", err)
		}
		sum := sha256.Sum256([]byte(top))
		cfg.Root = filepath.Join(cache, "agentslice", "sandboxes", filepath.Base(top)+"-"+hex.EncodeToString(sum[:4]))
	}
	if cfg.Root, err = filepath.Abs(cfg.Root); err != nil {
		return nil, fmt.Errorf("sandbox: root %q: %w", cfg.Root, err)
	}
	if err := os.MkdirAll(cfg.Root, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: creating root %s: %w", cfg.Root, err)
	}
	if cfg.Name == "" {
		cfg.Name = filepath.Base(top)
	}
	m := &Manager{cfg: cfg, repo: top, boxes: map[string]*Sandbox{}, rg: findRipgrep()}
	if gd, err := git(context.Background(), top, "rev-parse", "--path-format=absolute", "--git-common-dir"); err == nil {
		gd = filepath.Clean(strings.TrimSpace(gd))
		m.commonDir = gd
		if gd == "/tmp" || strings.HasPrefix(gd, "/tmp/") {
			m.gitDir = gd
		}
	}
	switch cfg.Jail {
	case JailOff:
	case JailOn, JailAuto:
		bwrap, err := ProbeJail(context.Background())
		switch {
		case err == nil:
			m.bwrap = bwrap
		case cfg.Jail == JailOn:
			return nil, fmt.Errorf("sandbox: jail: on, but %w", err)
		default:
			m.jailProblem = err.Error()
		}
	default:
		return nil, fmt.Errorf("sandbox: jail: %q is not one of auto, on, off", cfg.Jail)
	}
	return m, nil
}

// Jailed says whether commands run in the bubblewrap jail, and when not,
// why (empty when the jail was turned off).
func (m *Manager) Jailed() (bool, string) {
	if m.bwrap != "" {
		return true, ""
	}
	return false, m.jailProblem
}

// Name returns the repository's name (Config.Name).
func (m *Manager) Name() string { return m.cfg.Name }

// Repo returns the top of the user's working copy.
func (m *Manager) Repo() string { return m.repo }

// Root returns the directory the sandboxes live in.
func (m *Manager) Root() string { return m.cfg.Root }

// plainName is a thread ID that names a branch and a directory as it is.
var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`)

// Name returns the name of a thread's sandbox: its branch is
// BranchPrefix+Name, its directory Root/Name. A thread ID of letters,
// digits, _ and - (starting with a letter or digit, at most 100 bytes) is
// its own name; any other ID has every other character replaced by -, is
// cut to 80 bytes and gets 8 hex digits of its SHA-256, so distinct IDs
// keep distinct names and every name is a valid ref.
func Name(thread string) string {
	if plainName.MatchString(thread) {
		return thread
	}
	var b strings.Builder
	for _, r := range thread {
		if r < 0x80 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
		if b.Len() >= 80 {
			break
		}
	}
	sum := sha256.Sum256([]byte(thread))
	return "x" + b.String() + "-" + hex.EncodeToString(sum[:4])
}

// Lookup returns the thread's sandbox if it exists (made by this process
// or found on disk from an earlier one), else nil.
func (m *Manager) Lookup(ctx context.Context, thread string) (*Sandbox, error) {
	if thread == "" {
		return nil, errors.New("sandbox: thread: missing")
	}
	name := Name(thread)
	m.mu.Lock()
	sb := m.boxes[thread]
	m.mu.Unlock()
	if sb != nil {
		return sb, nil
	}
	dir := filepath.Join(m.cfg.Root, name)
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return nil, nil
	}
	base, err := git(ctx, m.repo, "rev-parse", "--verify", "--quiet", baseRefPrefix+name)
	if err != nil {
		return nil, fmt.Errorf("sandbox: the worktree of thread %s at %s has no base ref %s%s: %w", thread, dir, baseRefPrefix, name, err)
	}
	sb = &Sandbox{Thread: thread, Name: name, Branch: BranchPrefix + name, Dir: dir, base: strings.TrimSpace(base), store: m.storeDir(name)}
	m.mu.Lock()
	if prev := m.boxes[thread]; prev != nil {
		sb = prev
	} else {
		m.boxes[thread] = sb
	}
	m.mu.Unlock()
	return sb, nil
}

// Ensure returns the thread's sandbox, creating it on first use: stacked
// on the sandbox of the thread's parent (the last of ancestors) when that
// has one, else from the user's HEAD.
func (m *Manager) Ensure(ctx context.Context, thread string, ancestors []string) (*Sandbox, error) {
	if sb, err := m.Lookup(ctx, thread); sb != nil || err != nil {
		return sb, err
	}
	m.creating.Lock()
	defer m.creating.Unlock()
	if sb, err := m.Lookup(ctx, thread); sb != nil || err != nil {
		return sb, err
	}
	name := Name(thread)
	dir := filepath.Join(m.cfg.Root, name)
	branch := BranchPrefix + name
	// A directory left by a removed worktree would make add fail; prune
	// forgets worktrees whose directory is gone.
	if _, err := git(ctx, m.repo, "worktree", "prune"); err != nil {
		return nil, fmt.Errorf("sandbox: pruning worktrees for thread %s: %w", thread, err)
	}
	if _, err := git(ctx, m.repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		return m.reattach(ctx, thread, name, dir, branch)
	}
	var base string
	var parent *Sandbox
	if len(ancestors) > 0 {
		p, err := m.Lookup(ctx, ancestors[len(ancestors)-1])
		if err != nil {
			return nil, err
		}
		parent = p
	}
	if parent != nil {
		commit, err := parent.snapshot(ctx, "agentslice: snapshot of "+parent.Thread+" for its child "+thread)
		if err != nil {
			return nil, err
		}
		base = commit
	} else {
		head, err := git(ctx, m.repo, "rev-parse", "--verify", "HEAD^{commit}")
		if err != nil {
			return nil, fmt.Errorf("sandbox: reading the user's HEAD for thread %s: %w", thread, err)
		}
		base = strings.TrimSpace(head)
	}
	if _, err := git(ctx, m.repo, "worktree", "add", "--quiet", "-b", branch, dir, base); err != nil {
		return nil, fmt.Errorf("sandbox: creating the worktree of thread %s on %s: %w", thread, branch, err)
	}
	if _, err := git(ctx, m.repo, "update-ref", baseRefPrefix+name, base); err != nil {
		return nil, fmt.Errorf("sandbox: recording the base of thread %s: %w", thread, err)
	}
	if parent != nil {
		if _, err := git(ctx, m.repo, "update-ref", stackRefPrefix+name, base); err != nil {
			return nil, fmt.Errorf("sandbox: recording the stack point of thread %s: %w", thread, err)
		}
	}
	sb := &Sandbox{Thread: thread, Name: name, Branch: branch, Dir: dir, base: base, store: m.storeDir(name)}
	m.mu.Lock()
	m.boxes[thread] = sb
	m.mu.Unlock()
	return sb, nil
}

// reattach makes a worktree again for a thread whose branch and base ref
// outlived its worktree directory (removed by hand, or a crash): the
// committed work is back, what was uncommitted in the lost directory is
// not.
func (m *Manager) reattach(ctx context.Context, thread, name, dir, branch string) (*Sandbox, error) {
	base, err := git(ctx, m.repo, "rev-parse", "--verify", "--quiet", baseRefPrefix+name)
	if err != nil {
		return nil, fmt.Errorf("sandbox: branch %s of thread %s exists without its base ref %s%s (delete the branch with git branch -D %s to start afresh): %w",
			branch, thread, baseRefPrefix, name, branch, err)
	}
	if _, err := git(ctx, m.repo, "worktree", "add", "--quiet", dir, branch); err != nil {
		return nil, fmt.Errorf("sandbox: making the worktree of thread %s again on %s: %w", thread, branch, err)
	}
	sb := &Sandbox{Thread: thread, Name: name, Branch: branch, Dir: dir, base: strings.TrimSpace(base), store: m.storeDir(name)}
	m.mu.Lock()
	m.boxes[thread] = sb
	m.mu.Unlock()
	return sb, nil
}

// snapshot commits the sandbox's uncommitted changes (new files included)
// to its branch and returns the branch's commit.
func (sb *Sandbox) snapshot(ctx context.Context, message string) (string, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if err := sb.importStore(ctx); err != nil {
		return "", err
	}
	if _, err := git(ctx, sb.Dir, "add", "-A"); err != nil {
		return "", fmt.Errorf("sandbox: staging the changes of thread %s: %w", sb.Thread, err)
	}
	if _, err := git(ctx, sb.Dir, "diff", "--cached", "--quiet"); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			return "", fmt.Errorf("sandbox: checking the changes of thread %s: %w", sb.Thread, err)
		}
		if _, err := git(ctx, sb.Dir, "-c", "user.name=agentslice", "-c", "user.email=agentslice@localhost",
			"commit", "--quiet", "--no-verify", "-m", message); err != nil {
			return "", fmt.Errorf("sandbox: committing the changes of thread %s: %w", sb.Thread, err)
		}
	}
	head, err := git(ctx, sb.Dir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", fmt.Errorf("sandbox: reading the commit of thread %s: %w", sb.Thread, err)
	}
	return strings.TrimSpace(head), nil
}

// Diff returns the sandbox's changes against its base (committed and
// uncommitted, new files included) as a unified diff, and the base.
func (sb *Sandbox) Diff(ctx context.Context) (diff, base string, err error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if err := sb.importStore(ctx); err != nil {
		return "", "", err
	}
	if _, err := git(ctx, sb.Dir, "add", "-A"); err != nil {
		return "", "", fmt.Errorf("sandbox: staging the changes of thread %s: %w", sb.Thread, err)
	}
	out, err := git(ctx, sb.Dir, "diff", "--cached", "--no-color", "--no-ext-diff", "--binary", sb.base)
	if err != nil {
		return "", "", fmt.Errorf("sandbox: diffing thread %s against %s: %w", sb.Thread, sb.base, err)
	}
	return out, sb.base, nil
}

// Files returns the files the sandbox changed against its base (committed
// and uncommitted, new files included), sorted, and the base.
func (sb *Sandbox) Files(ctx context.Context) (files []string, base string, err error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if err := sb.importStore(ctx); err != nil {
		return nil, "", err
	}
	if _, err := git(ctx, sb.Dir, "add", "-A"); err != nil {
		return nil, "", fmt.Errorf("sandbox: staging the changes of thread %s: %w", sb.Thread, err)
	}
	out, err := git(ctx, sb.Dir, "diff", "--cached", "--name-only", "--no-renames", "-z", sb.base)
	if err != nil {
		return nil, "", fmt.Errorf("sandbox: listing the changes of thread %s: %w", sb.Thread, err)
	}
	return splitZ(out), sb.base, nil
}

// git runs git in dir with a fixed, minimal environment (no user hooks or
// pagers, no prompts) and returns its stdout; the error carries stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = gitEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return stdout.String(), fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return stdout.String(), fmt.Errorf("git %s: %s: %w", strings.Join(args, " "), msg, err)
	}
	return stdout.String(), nil
}

// gitEnv is the environment of the package's git commands: no prompts or
// pagers, plain messages, no optional locks.
func gitEnv() []string {
	return append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
}
