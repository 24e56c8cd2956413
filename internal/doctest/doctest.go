// Package doctest keeps the documentation honest: it extracts the shell
// blocks of a Markdown page so a test can run them in order against a real
// build (the newcomer's path in docs/getting-started.md runs end to end in
// `go test ./...`), and it checks that the links between pages resolve:
// every relative link names a file that exists and every #anchor a heading
// (or an explicit id) of its page.
//
// A fenced block whose info string starts with sh, bash or shell runs;
// one marked as needing an AWS account (info "sh aws", or an
// "<!-- aws -->" comment on the line before the fence) is skipped, and so
// is one marked "<!-- doctest: skip (why) -->". Other blocks (```text,
// ```json, output samples) are never run. The package's tests hold every
// page to that: each shell block of the README and of docs/ is run by a
// test or marked, with a reason (TestEveryShellBlockRunsOrSaysWhy).
//
// The package must not run anything itself: the tests decide where and
// with what environment.
package doctest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Block is one fenced shell block of a page.
type Block struct {
	Line int    // the line of its opening fence, 1-based
	Text string // its content
	// Skip is why it must not run ("" when it runs): it needs an AWS
	// account, or is marked to be skipped.
	Skip string
	// Why is the reason a "doctest: skip" mark gives, the text after
	// "skip" ("<!-- doctest: skip (opens a browser) -->": "opens a
	// browser"); "" when it gives none.
	Why string
}

// ShellBlocks returns the page's fenced shell blocks in order.
func ShellBlocks(md []byte) []Block {
	var out []Block
	var cur *Block
	var body strings.Builder
	fence, prev := "", ""
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		switch {
		case fence == "" && (strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~")):
			fence = trim[:3]
			info := strings.Fields(strings.TrimLeft(trim, "`~"))
			if len(info) > 0 && (info[0] == "sh" || info[0] == "bash" || info[0] == "shell") {
				cur = &Block{Line: n}
				body.Reset()
				switch {
				case contains(info[1:], "aws") || strings.HasPrefix(prev, "<!-- aws"):
					cur.Skip = "needs an AWS account"
				case strings.HasPrefix(prev, "<!-- doctest: skip"):
					cur.Skip = "marked doctest: skip"
					why := strings.TrimSuffix(strings.TrimPrefix(prev, "<!-- doctest: skip"), "-->")
					cur.Why = strings.Trim(strings.TrimSpace(why), "():; ")
				}
			}
		case fence != "" && strings.HasPrefix(trim, fence):
			fence = ""
			if cur != nil {
				cur.Text = body.String()
				out = append(out, *cur)
				cur = nil
			}
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		}
		if trim != "" {
			prev = trim
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Script joins a page's runnable blocks into one bash script: each block
// announces itself on stderr (page:line) before it runs, so a failure
// names the block; set -e stops at the first failing command, and the
// processes a block started in the background are killed when the script
// ends.
func Script(page string, blocks []Block) string {
	var b strings.Builder
	b.WriteString("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n")
	for _, bl := range blocks {
		if bl.Skip != "" {
			fmt.Fprintf(&b, "echo '### %s:%d skipped (%s)' >&2\n", page, bl.Line, bl.Skip)
			continue
		}
		fmt.Fprintf(&b, "echo '### %s:%d' >&2\n%s", page, bl.Line, bl.Text)
	}
	return b.String()
}

// LinkProblem is a link that does not resolve.
type LinkProblem struct {
	Page, Target, Reason string
	Line                 int
}

func (p LinkProblem) String() string {
	return fmt.Sprintf("%s:%d: link %q: %s", p.Page, p.Line, p.Target, p.Reason)
}

var (
	linkRE   = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRE   = regexp.MustCompile("`[^`]*`")
	idRE     = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	headerRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// CheckLinks checks the links of the Markdown files given (paths relative
// to root): a relative link must name an existing file or directory, and
// an anchor (on its own or after a .md file) a heading of that page. A link
// to an http(s) URL is a problem too: the house style writes external URLs
// as plain text. Links inside code (fenced blocks, `spans`) are not links.
func CheckLinks(root string, pages []string) ([]LinkProblem, error) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		a := Anchors(b)
		anchors[rel] = a
		return a, nil
	}
	var probs []LinkProblem
	for _, page := range pages {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			return nil, err
		}
		for _, l := range links(b) {
			bad := func(format string, args ...any) {
				probs = append(probs, LinkProblem{Page: page, Target: l.target, Line: l.line, Reason: fmt.Sprintf(format, args...)})
			}
			t := l.target
			if strings.HasPrefix(t, "http://") || strings.HasPrefix(t, "https://") {
				bad("an external URL as a link; write it as plain text")
				continue
			}
			if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(t, "#")
			target := page
			if file != "" {
				target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
				if strings.HasPrefix(target, "../") {
					bad("points outside the repository")
					continue
				}
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					bad("%s does not exist", target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				return nil, err
			}
			if !a[frag] {
				bad("%s has no heading with the anchor #%s", target, frag)
			}
		}
	}
	return probs, nil
}

type link struct {
	target string
	line   int
}

// proseLines returns the page's lines outside fenced code blocks, with
// their 1-based numbers.
func proseLines(md []byte) (lines []string, numbers []int) {
	inFence := ""
	for n, line := range strings.Split(string(md), "\n") {
		trim := strings.TrimSpace(line)
		switch {
		case inFence == "" && (strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~")):
			inFence = trim[:3]
		case inFence != "":
			if strings.HasPrefix(trim, inFence) {
				inFence = ""
			}
		default:
			lines, numbers = append(lines, line), append(numbers, n+1)
		}
	}
	return lines, numbers
}

// links returns the Markdown links of a page outside code.
func links(md []byte) []link {
	var out []link
	lines, numbers := proseLines(md)
	for i, line := range lines {
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
			out = append(out, link{target: m[1], line: numbers[i]})
		}
	}
	return out
}

// Anchors returns the anchors a page's headings get on GitHub (lower case;
// punctuation other than - and _ dropped; spaces become -; a repeated
// heading gets -1, -2...) and its explicit <a id="..."> anchors.
func Anchors(md []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := proseLines(md)
	for _, line := range lines {
		for _, m := range idRE.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := headerRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[1])
		if k := seen[slug]; k > 0 {
			out[fmt.Sprintf("%s-%d", slug, k)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

var mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// Slug is GitHub's anchor for a heading's text.
func Slug(heading string) string {
	heading = mdLinkText.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
