package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentslice/agentslice/internal/rap"
)

// ToolsetName is the name the sandbox toolset announces.
const ToolsetName = "sandbox"

// DefaultMaxRunning is the sandbox server's default bound on concurrent
// calls (rap.ServerConfig.MaxRunning): a running command is a call until
// it ends, so it is larger than the kit's.
const DefaultMaxRunning = 1024

// NewServer returns the server offering the manager's tools. cfg's Name
// and Tools are set by it; MaxRunning defaults to DefaultMaxRunning.
func NewServer(m *Manager, cfg rap.ServerConfig) (*Server, error) {
	r, err := NewRepos(m)
	if err != nil {
		return nil, err
	}
	return NewReposServer(r, cfg)
}

// NewReposServer returns the server offering the tools of several
// repositories (repos.go): each thread's calls work in its repository.
func NewReposServer(r *Repos, cfg rap.ServerConfig) (*Server, error) {
	cfg.Name = ToolsetName
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = DefaultMaxRunning
	}
	var dirs []string
	for _, m := range r.list {
		if m.cfg.Logger == nil {
			m.cfg.Logger = cfg.Logger
		}
		m.publicURL = cfg.PublicURL
		dirs = append(dirs, m.repo)
	}
	if cfg.Description == "" {
		cfg.Description = "a git worktree per thread of " + strings.Join(dirs, ", ") + ": read, change, run and diff without touching the user's working copy"
	}
	cfg.Tools = r.tools()
	srv, err := rap.NewServer(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: building the toolset: %w", err)
	}
	return &Server{Server: srv, repos: r}, nil
}

// Tools returns the sandbox tools.
func (m *Manager) Tools() []rap.Tool {
	return []rap.Tool{
		{
			Name:        "read_file",
			Description: "Reads a text file of your sandbox (a git worktree of the repository), with line numbers. Use offset and limit (lines) for a part of a long file.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
				"path":{"type":"string","minLength":1,"description":"path relative to the repository's top"},
				"offset":{"type":"integer","minimum":1,"description":"first line to read (1-based); default 1"},
				"limit":{"type":"integer","minimum":1,"description":"number of lines; default: up to the size cap"}},
				"required":["path"],"additionalProperties":false}`),
			Annotations: &rap.Annotations{ReadOnly: true, Idempotent: true},
			Run:         m.handler(m.readFile),
		},
		{
			Name:        "list_files",
			Description: "Lists the files of your sandbox (tracked and new, without what .gitignore ignores), under path, optionally filtered by a glob pattern matched against each file's name or path (e.g. *.go or internal/*/doc.go).",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
				"path":{"type":"string","description":"directory relative to the repository's top; default the top"},
				"pattern":{"type":"string","minLength":1,"description":"glob pattern (path.Match syntax)"}},
				"additionalProperties":false}`),
			Annotations: &rap.Annotations{ReadOnly: true, Idempotent: true},
			Run:         m.handler(m.listFiles),
		},
		{
			Name:        "write_file",
			Description: "Creates or replaces a file of your sandbox with content (parent directories are created). The user's working copy is not touched.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
				"path":{"type":"string","minLength":1,"description":"path relative to the repository's top"},
				"content":{"type":"string","description":"the file's whole new content"}},
				"required":["path","content"],"additionalProperties":false}`),
			Annotations: &rap.Annotations{Idempotent: true},
			Run:         m.handler(m.writeFile),
		},
		{
			Name:        "edit_file",
			Description: "Replaces the text old with new in a file of your sandbox. old must occur exactly once unless replace_all is true.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
				"path":{"type":"string","minLength":1},
				"old":{"type":"string","minLength":1,"description":"the exact text to replace"},
				"new":{"type":"string","description":"its replacement"},
				"replace_all":{"type":"boolean","description":"replace every occurrence"}},
				"required":["path","old","new"],"additionalProperties":false}`),
			Run: m.handler(m.editFile),
		},
		{
			Name:        "diff",
			Description: "Shows your sandbox's changes against the commit it started from, as a unified diff.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
			Annotations: &rap.Annotations{ReadOnly: true, Idempotent: true},
			Run:         m.runDiff,
		},
		{
			Name: "run_command",
			Description: "Starts a shell command (sh -c) in your sandbox's directory, in the background, and answers at once with its command ID. " +
				"You are woken by one event when it ends, with the exit status, the duration, the output's tail and the path of the full log (read_file reads it); " +
				"until then do other work or end your turn. With watch you are also woken by its output now and then. " +
				"cancel_subscription (tool_call_id: this call's ID) kills it; timeout_s bounds it. " +
				"It has no network and writes only your sandbox and /tmp unless you ask for more (network, write_outside): then the person is asked first, and a refusal is the result.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
				"command":{"type":"string","minLength":1,"description":"the command line, run by sh -c"},
				"timeout_s":{"type":"integer","minimum":1,"description":"kill the command after this many seconds; default and maximum: the server's limit"},
				"watch":{"type":"boolean","description":"also wake me with its output while it runs (batched)"},
				"network":{"type":"boolean","description":"the command needs the network (a download, a registry): the jail cuts it otherwise. The person is asked first unless your agent may use the network"},
				"write_outside":{"type":"array","items":{"type":"string","minLength":1},"maxItems":8,"description":"absolute paths of existing directories outside your sandbox the command must write (a tool's cache, say): only your sandbox and /tmp are writable otherwise. The person is asked first"}},
				"required":["command"],"additionalProperties":false}`),
			// Long-running: the call becomes a subscription that lasts
			// the command's life.
			Annotations: &rap.Annotations{Destructive: true, LongRunning: true},
			Run:         m.runCommand,
		},
		m.searchTool(),
		m.squashTool(),
	}
}

// handler adapts a function computing a text answer to a kit tool: the
// sandbox is made ready first, and an error becomes an "error: ..." result
// the model reads.
func (m *Manager) handler(f func(ctx context.Context, sb *Sandbox, c *rap.Call) (string, error)) func(context.Context, *rap.Call) error {
	return func(ctx context.Context, c *rap.Call) error {
		sb, err := m.Ensure(ctx, c.GroupID, c.ThreadAncestors)
		if err != nil {
			return c.Result(ctx, "error: "+err.Error())
		}
		text, err := f(ctx, sb, c)
		if err != nil {
			return c.Result(ctx, "error: "+err.Error())
		}
		return c.Result(ctx, text)
	}
}

// resolve maps a path the model gave to a file inside the sandbox. It
// refuses absolute paths, paths that climb out, the .git entry, and paths
// whose existing part is a symlink leading outside.
func (sb *Sandbox) resolve(p string) (string, error) {
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is absolute: give a path relative to the repository's top", p)
	}
	clean := filepath.Clean(filepath.FromSlash(p))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q leaves the sandbox: give a path inside the repository", p)
	}
	if first, _, _ := strings.Cut(filepath.ToSlash(clean), "/"); first == ".git" {
		return "", fmt.Errorf("path %q is git's own data, which the tools do not touch", p)
	}
	full := filepath.Join(sb.Dir, clean)
	// The longest existing prefix must resolve inside the sandbox.
	existing := full
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("path %q: %v", p, err)
	}
	root, err := filepath.EvalSymlinks(sb.Dir)
	if err != nil {
		return "", fmt.Errorf("the sandbox directory: %v", err)
	}
	if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q leads outside the sandbox through a symlink", p)
	}
	return full, nil
}

func (m *Manager) readFile(_ context.Context, sb *Sandbox, c *rap.Call) (string, error) {
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := c.Args(&a); err != nil {
		return "", err
	}
	full, isLog := m.isLog(sb, a.Path)
	if !isLog {
		var err error
		if full, err = sb.resolve(a.Path); err != nil {
			return "", err
		}
	}
	if fi, err := os.Stat(full); err == nil && fi.IsDir() {
		return "", fmt.Errorf("%s is a directory (use list_files)", a.Path)
	}
	b, err := os.ReadFile(full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s does not exist (list_files shows what does)", a.Path)
	case err != nil:
		return "", fmt.Errorf("reading %s: %v", a.Path, err)
	}
	return numberLines(a.Path, string(b), a.Offset, a.Limit, m.cfg.MaxRead), nil
}

// numberLines renders lines offset.. (1-based) of text with their numbers,
// at most limit lines and about max bytes, with a note saying how to read
// on when it stops early.
func numberLines(name, text string, offset, limit, max int) string {
	if offset < 1 {
		offset = 1
	}
	lines := strings.SplitAfter(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	if len(lines) == 0 {
		return name + " is empty"
	}
	if offset > len(lines) {
		return fmt.Sprintf("%s has %d lines; offset %d is past its end", name, len(lines), offset)
	}
	var b strings.Builder
	last := offset - 1
	for i := offset - 1; i < len(lines); i++ {
		if limit > 0 && i-(offset-1) >= limit {
			break
		}
		line := fmt.Sprintf("%6d\t%s", i+1, lines[i])
		if b.Len()+len(line) > max && b.Len() > 0 {
			break
		}
		b.WriteString(line)
		last = i + 1
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	if last < len(lines) {
		fmt.Fprintf(&b, "[%s has %d lines; shown %d-%d; read on with offset %d]\n", name, len(lines), offset, last, last+1)
	}
	return b.String()
}

func (m *Manager) listFiles(ctx context.Context, sb *Sandbox, c *rap.Call) (string, error) {
	var a struct {
		Path    string `json:"path"`
		Pattern string `json:"pattern"`
	}
	if err := c.Args(&a); err != nil {
		return "", err
	}
	if a.Pattern != "" {
		if _, err := path.Match(a.Pattern, ""); err != nil {
			return "", fmt.Errorf("pattern %q is not a valid glob: %v", a.Pattern, err)
		}
	}
	full, err := sb.resolve(a.Path)
	if err != nil {
		return "", err
	}
	rel, _ := filepath.Rel(sb.Dir, full)
	out, err := git(ctx, sb.Dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate", "--", filepath.ToSlash(rel))
	if err != nil {
		return "", fmt.Errorf("listing files: %v", err)
	}
	var files []string
	for f := range strings.SplitSeq(strings.TrimSuffix(out, "\x00"), "\x00") {
		if f == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(sb.Dir, filepath.FromSlash(f))); err != nil {
			continue // deleted in the sandbox, still in its index
		}
		if a.Pattern != "" {
			okBase, _ := path.Match(a.Pattern, path.Base(f))
			okPath, _ := path.Match(a.Pattern, f)
			if !okBase && !okPath {
				continue
			}
		}
		files = append(files, f)
	}
	slices.Sort(files)
	if len(files) == 0 {
		return "no files match", nil
	}
	const maxList = 2000
	note := ""
	if len(files) > maxList {
		note = fmt.Sprintf("\n[%d files; the first %d shown: narrow with path or pattern]", len(files), maxList)
		files = files[:maxList]
	}
	return strings.Join(files, "\n") + note, nil
}

func (m *Manager) writeFile(_ context.Context, sb *Sandbox, c *rap.Call) (string, error) {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := c.Args(&a); err != nil {
		return "", err
	}
	full, err := sb.resolve(a.Path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(full); err == nil && fi.IsDir() {
		return "", fmt.Errorf("%s is a directory", a.Path)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return "", fmt.Errorf("creating the directory of %s: %v", a.Path, err)
	}
	if err := os.WriteFile(full, []byte(a.Content), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %v", a.Path, err)
	}
	return fmt.Sprintf("wrote %s (%d bytes)", a.Path, len(a.Content)), nil
}

func (m *Manager) editFile(_ context.Context, sb *Sandbox, c *rap.Call) (string, error) {
	var a struct {
		Path       string `json:"path"`
		Old        string `json:"old"`
		New        string `json:"new"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if err := c.Args(&a); err != nil {
		return "", err
	}
	full, err := sb.resolve(a.Path)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(full)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s does not exist (write_file creates a file)", a.Path)
	} else if err != nil {
		return "", fmt.Errorf("reading %s: %v", a.Path, err)
	}
	n := strings.Count(string(b), a.Old)
	switch {
	case n == 0:
		return "", fmt.Errorf("old text not found in %s (0 matches): read_file it and copy the text exactly", a.Path)
	case n > 1 && !a.ReplaceAll:
		return "", fmt.Errorf("old text occurs %d times in %s: give more context to make it unique, or set replace_all", n, a.Path)
	}
	fi, err := os.Stat(full)
	if err != nil {
		return "", fmt.Errorf("reading %s: %v", a.Path, err)
	}
	if err := os.WriteFile(full, []byte(strings.ReplaceAll(string(b), a.Old, a.New)), fi.Mode().Perm()); err != nil {
		return "", fmt.Errorf("writing %s: %v", a.Path, err)
	}
	return fmt.Sprintf("edited %s (%d replacement%s)", a.Path, n, plural(n)), nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// runDiff answers diff: the unified diff for the model (capped), and a
// display_as diff segment of the whole diff for UIs.
func (m *Manager) runDiff(ctx context.Context, c *rap.Call) error {
	sb, err := m.Ensure(ctx, c.GroupID, c.ThreadAncestors)
	if err != nil {
		return c.Result(ctx, "error: "+err.Error())
	}
	d, base, err := sb.Diff(ctx)
	if err != nil {
		return c.Result(ctx, "error: "+err.Error())
	}
	if d == "" {
		return c.Result(ctx, fmt.Sprintf("no changes against the base %s", short(base)))
	}
	files := SplitDiff(d)
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, f.Path)
	}
	// display_as holds alternatives (a UI renders the first it supports),
	// so the whole diff is one segment; a UI splits it per file (SplitDiff).
	patch := d
	if max := 4 * m.cfg.MaxRead; len(patch) > max {
		patch = strings.ToValidUTF8(patch[:max], "")
	}
	seg := rap.DiffSegment(strings.Join(names, ", "), patch)
	text := fmt.Sprintf("%d file%s changed against the base %s: %s\n\n%s", len(files), plural(len(files)), short(base), strings.Join(names, ", "), d)
	if max := m.cfg.MaxRead; len(text) > max {
		text = strings.ToValidUTF8(text[:max], "") + fmt.Sprintf("\n[diff cut at %d bytes; read the files for the rest]", max)
	}
	return c.ResultDisplay(ctx, text, seg)
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// FileDiff is one file's part of a unified diff.
type FileDiff struct {
	Path  string
	Patch string
}

// SplitDiff cuts a git diff into its files (at each "diff --git" line).
func SplitDiff(d string) []FileDiff {
	var out []FileDiff
	for _, part := range strings.SplitAfter(d, "\n") {
		if strings.HasPrefix(part, "diff --git ") {
			out = append(out, FileDiff{Path: diffPath(part)})
		}
		if len(out) == 0 {
			continue
		}
		out[len(out)-1].Patch += part
	}
	return out
}

// diffPath reads the new path from a "diff --git a/X b/X" line.
func diffPath(line string) string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "diff --git "), "\n")
	if i := strings.LastIndex(line, " b/"); i >= 0 {
		return strings.Trim(line[i+3:], `"`)
	}
	return line
}
