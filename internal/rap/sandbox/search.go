package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentslice/agentslice/internal/rap"
)

// Caps of a search result.
const (
	maxMatches   = 200
	maxMatchLine = 300 // bytes of one matching line shown
)

// The search tool runs Debian's ripgrep (rg) when it is on PATH, and a Go
// search otherwise; both answer the same lines for the same files:
//   - the files: the sandbox's tracked and new files without what
//     .gitignore (and git's global excludes) ignores, hidden ones included,
//     git's own .git entry and symlinks left out, binary files (a NUL
//     byte) skipped;
//   - the pattern: Go's regexp syntax (RE2), which ripgrep's Rust regex
//     syntax matches for everything but the rarest classes;
//   - the glob: matched against a file's name, or, when it holds a /,
//     against its path from the repository's top; * and ? stop at /, **
//     crosses directories;
//   - the order: by path, directory by directory (a/x before a-b/y), then
//     by line.
//
// The Go search lists the files with git (git ls-files, as list_files)
// and reads them itself. TestSearchBackendsAgree runs both on one
// repository and compares.

// findRipgrep returns rg's path, or "" when it is not on PATH.
func findRipgrep() string {
	p, err := exec.LookPath("rg")
	if err != nil {
		return ""
	}
	return p
}

// searchTool is the search tool.
func (m *Manager) searchTool() rap.Tool {
	return rap.Tool{
		Name: "search",
		Description: "Searches the files of your sandbox (tracked and new, without what .gitignore ignores) for a regular expression (RE2 syntax, as ripgrep's). " +
			"Answers path:line:text per match, at most 200.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"pattern":{"type":"string","minLength":1,"description":"the regular expression"},
			"path":{"type":"string","description":"directory or file to search, relative to the repository's top; default the top"},
			"glob":{"type":"string","minLength":1,"description":"only files whose name matches this glob, e.g. *.go, or whose path from the top does when it has a /, e.g. cmd/**/*.go"},
			"ignore_case":{"type":"boolean"}},
			"required":["pattern"],"additionalProperties":false}`),
		Annotations: &rap.Annotations{ReadOnly: true, Idempotent: true},
		Run:         m.handler(m.search),
	}
}

// match is one matching line.
type match struct {
	path string
	line int
	text string
}

// searchArgs are the search tool's arguments, checked.
type searchArgs struct {
	pattern    string
	spec       string // the path from the top, "" for the whole sandbox
	glob       string
	ignoreCase bool
}

func (m *Manager) search(ctx context.Context, sb *Sandbox, c *rap.Call) (string, error) {
	var a struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path"`
		Glob       string `json:"glob"`
		IgnoreCase bool   `json:"ignore_case"`
	}
	if err := c.Args(&a); err != nil {
		return "", err
	}
	full, err := sb.resolve(a.Path)
	if err != nil {
		return "", err
	}
	rel, _ := filepath.Rel(sb.Dir, full)
	s := searchArgs{pattern: a.Pattern, spec: filepath.ToSlash(rel), glob: a.Glob, ignoreCase: a.IgnoreCase}
	if s.spec == "." {
		s.spec = ""
	}
	if _, err := globRegexp(s.glob); err != nil {
		return "", err
	}
	// Both backends take the same syntax: Go's check gives one message.
	if _, err := regexp.Compile(s.pattern); err != nil {
		return "", fmt.Errorf("searching for %q: %v", s.pattern, err)
	}
	var found []match
	var total int
	if m.rg != "" {
		found, total, err = ripgrep(ctx, m.rg, sb.Dir, s)
	} else {
		found, total, err = goSearch(ctx, sb.Dir, s)
	}
	if err != nil {
		return "", fmt.Errorf("searching for %q: %v", s.pattern, err)
	}
	return renderMatches(found, total), nil
}

func renderMatches(found []match, total int) string {
	if total == 0 {
		return "no matches"
	}
	var b strings.Builder
	for _, f := range found {
		text := f.text
		if len(text) > maxMatchLine {
			cut := maxMatchLine
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut] + " [line cut]"
		}
		fmt.Fprintf(&b, "%s:%d:%s\n", f.path, f.line, text)
	}
	if total > maxMatches {
		fmt.Fprintf(&b, "[%d matches; the first %d shown: narrow with path or glob]\n", total, maxMatches)
	}
	return b.String()
}

// ripgrep searches with rg in dir: the first maxMatches matches and the
// count of all.
func ripgrep(ctx context.Context, rg, dir string, s searchArgs) ([]match, int, error) {
	args := []string{"--line-number", "--no-heading", "--with-filename", "--null", "--color", "never",
		"--sort", "path", "--hidden", "--no-ignore-dot", "--no-ignore-parent", "--no-require-git",
		"--no-config", "--glob", "!.git"}
	if s.ignoreCase {
		args = append(args, "--ignore-case")
	} else {
		args = append(args, "--case-sensitive")
	}
	if s.glob != "" {
		g := s.glob
		if strings.Contains(g, "/") && !strings.HasPrefix(g, "/") {
			g = "/" + g // anchored at the top, as the Go search matches it
		}
		args = append(args, "--glob", g)
	}
	args = append(args, "--regexp", s.pattern, "--")
	if s.spec != "" {
		args = append(args, s.spec)
	}
	cmd := exec.CommandContext(ctx, rg, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RIPGREP_CONFIG_PATH=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return nil, 0, nil
	case err != nil:
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, 0, errors.New(msg)
	}
	var found []match
	total := 0
	for line := range strings.SplitSeq(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		// --null: path NUL line:text. A line without NUL is rg's
		// "binary file matches" notice: binary files are skipped.
		p, rest, ok := strings.Cut(line, "\x00")
		if !ok {
			continue
		}
		num, text, ok := strings.Cut(rest, ":")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			continue
		}
		total++
		if len(found) < maxMatches {
			found = append(found, match{path: strings.TrimPrefix(p, "./"), line: n, text: text})
		}
	}
	return found, total, nil
}

// goSearch is the search without ripgrep: git lists the files, Go reads
// and matches them.
func goSearch(ctx context.Context, dir string, s searchArgs) ([]match, int, error) {
	pattern := s.pattern
	if s.ignoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, 0, err
	}
	glob, _ := globRegexp(s.glob)
	files, err := searchFiles(ctx, dir, s.spec)
	if err != nil {
		return nil, 0, err
	}
	var found []match
	total := 0
	for _, f := range files {
		if glob != nil {
			subject := f
			if !strings.Contains(s.glob, "/") {
				subject = f[strings.LastIndexByte(f, '/')+1:]
			}
			if !glob.MatchString(subject) {
				continue
			}
		}
		p := filepath.Join(dir, filepath.FromSlash(f))
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the sandbox but still in its index, a symlink, ...
		}
		b, err := os.ReadFile(p)
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			continue // unreadable, or binary
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			if !re.Match(line) {
				continue
			}
			total++
			if len(found) < maxMatches {
				found = append(found, match{path: f, line: i + 1, text: string(line)})
			}
		}
	}
	return found, total, nil
}

// searchFiles lists the files under spec as ripgrep walks them: tracked
// and new, without what the ignore rules ignore (a tracked file they
// match included), sorted directory by directory.
func searchFiles(ctx context.Context, dir, spec string) ([]string, error) {
	list := func(args ...string) (map[string]bool, error) {
		out, err := git(ctx, dir, append(append([]string{"ls-files", "-z"}, args...), "--", ":(top)"+spec)...)
		if err != nil {
			return nil, err
		}
		set := map[string]bool{}
		for f := range strings.SplitSeq(strings.TrimSuffix(out, "\x00"), "\x00") {
			if f != "" {
				set[f] = true
			}
		}
		return set, nil
	}
	all, err := list("--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	ignored, err := list("--cached", "--ignored", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	files := make([]string, 0, len(all))
	for f := range all {
		if !ignored[f] {
			files = append(files, f)
		}
	}
	slices.SortFunc(files, comparePaths)
	return files, nil
}

// comparePaths orders paths directory by directory (a/x before a-b/y), as
// a walk of the tree that sorts each directory's entries by name does.
func comparePaths(a, b string) int {
	for {
		ea, ra, moreA := strings.Cut(a, "/")
		eb, rb, moreB := strings.Cut(b, "/")
		if c := strings.Compare(ea, eb); c != 0 {
			return c
		}
		if !moreA || !moreB {
			switch {
			case moreA == moreB:
				return 0
			case moreA:
				return 1
			default:
				return -1
			}
		}
		a, b = ra, rb
	}
}

// globRegexp compiles a search glob: * and ? do not cross /, ** does,
// [...] is a class; nil for "". A glob with a / matches the whole path
// from the top (a leading / is allowed), else the file's name.
func globRegexp(glob string) (*regexp.Regexp, error) {
	if glob == "" {
		return nil, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("glob %q: %s (give a plain pattern such as *.go or cmd/**/*.go)", glob, why)
	}
	switch {
	case strings.HasPrefix(glob, "!"):
		return nil, bad("a negated glob is not taken")
	case strings.Contains(glob, ".."):
		return nil, bad("it climbs out with ..")
	case strings.HasPrefix(glob, ":"):
		return nil, bad("git pathspec magic is not taken")
	}
	g := strings.TrimPrefix(glob, "/")
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		switch c := g[i]; c {
		case '*':
			if strings.HasPrefix(g[i:], "**/") {
				b.WriteString("(?:.*/)?")
				i += 2
			} else if strings.HasPrefix(g[i:], "**") {
				b.WriteString(".*")
				i++
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			end := strings.IndexByte(g[i+1:], ']')
			if end < 0 {
				return nil, bad("an unclosed [")
			}
			class := g[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, bad(err.Error())
	}
	return re, nil
}

// SearchDir runs the search tool's search for pattern over a sandbox
// directory (or any git working copy), with ripgrep at rg, or the Go
// search when rg is "", and answers as the tool does; FindRipgrep says
// where rg is. loadtest/sandbox times both.
func SearchDir(ctx context.Context, rg, dir, pattern string) (string, error) {
	s := searchArgs{pattern: pattern}
	var found []match
	var total int
	var err error
	if rg != "" {
		found, total, err = ripgrep(ctx, rg, dir, s)
	} else {
		found, total, err = goSearch(ctx, dir, s)
	}
	if err != nil {
		return "", err
	}
	return renderMatches(found, total), nil
}

// FindRipgrep returns rg's path, or "" when it is not on PATH.
func FindRipgrep() string { return findRipgrep() }
