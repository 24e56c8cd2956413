package tui

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentslice/agentslice/client"
)

// The screen, top to bottom: a header line, the conversation (or a
// picker, a pager), a pending choice, the status line, the input line and
// a line for notices. Colours come from lipgloss, which reads the
// terminal's profile (and NO_COLOR) and drops what the terminal lacks.

var (
	styleHeader   = lipgloss.NewStyle().Bold(true).Reverse(true)
	styleUser     = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	styleDim      = lipgloss.NewStyle().Faint(true)
	styleError    = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	styleSelected = lipgloss.NewStyle().Reverse(true)
	styleChoice   = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11"))
	styleStatus   = map[string]lipgloss.Style{
		"running": lipgloss.NewStyle().Foreground(lipgloss.Color("11")),
		"waiting": lipgloss.NewStyle().Foreground(lipgloss.Color("13")),
		"done":    lipgloss.NewStyle().Foreground(lipgloss.Color("10")),
		"failed":  lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
	}
)

// maxExpandedLines bounds the lines an expanded tool call shows of its
// result and of its output.
const maxExpandedLines = 40

// layout sizes the parts after a resize or a change of what is shown.
func (m *Model) layout() {
	w := max(m.width, 20)
	h := m.height - 4 - m.choiceLines()
	m.vp.Width, m.vp.Height = w, max(h, 1)
	m.pager.Width, m.pager.Height = w, max(m.height-4, 1)
	m.input.Width = max(w-len(m.input.Prompt)-1, 1)
	m.render()
}

func (m *Model) choiceLines() int {
	if m.choice == nil || m.choiceHidden || m.mode != modeChat {
		return 0
	}
	return 1 + len(m.choice.Choices)
}

// render lays out the conversation into the viewport, keeping it at the
// bottom while it follows.
func (m *Model) render() {
	content, _ := m.conversation(m.vp.Width)
	m.vp.SetContent(content)
	if m.follow {
		m.vp.GotoBottom()
	}
}

// scrollTo shows entry i.
func (m *Model) scrollTo(i int) {
	_, starts := m.conversation(m.vp.Width)
	if i < len(starts) {
		top := starts[i]
		if top < m.vp.YOffset || top >= m.vp.YOffset+m.vp.Height {
			m.vp.SetYOffset(top)
		}
		m.follow = m.vp.AtBottom()
	}
}

// conversation renders the entries and returns where each starts.
func (m *Model) conversation(width int) (string, []int) {
	var b strings.Builder
	starts := make([]int, len(m.conv.Entries))
	line := 0
	if m.opt.Warning != "" {
		block := styleError.Render(wrap("! warning: "+m.opt.Warning, width)) + "\n"
		b.WriteString(block + "\n")
		line += strings.Count(block, "\n") + 1
	}
	sel := -1
	if tools := m.conv.Tools(); m.selTool >= 0 && m.selTool < len(tools) {
		sel = tools[m.selTool]
	}
	for i := range m.conv.Entries {
		e := &m.conv.Entries[i]
		block := m.entry(e, width, i == sel)
		if i > 0 && e.Kind != EntryTool && e.Kind != EntryNote {
			block = "\n" + block // a blank line before each speaker
		}
		starts[i] = line
		line += strings.Count(block, "\n") + 1
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(block)
	}
	if len(m.conv.Entries) == 0 {
		b.WriteString(styleDim.Render(wrap("Nothing here yet: type a message and press Enter (/help lists the commands).", width)))
	}
	return b.String(), starts
}

func (m *Model) entry(e *Entry, width int, selected bool) string {
	switch e.Kind {
	case EntryUser:
		return styleUser.Render(wrap("you: "+e.Text, width))
	case EntryAssistant:
		s := wrap(e.Text, width)
		if e.Streaming {
			s += "▍"
		}
		return s
	case EntryNote:
		return styleDim.Render(wrap("· "+e.Text, width))
	case EntryError:
		return styleError.Render(wrap("! "+e.Text, width))
	}
	return m.toolEntry(e, width, selected)
}

// toolEntry is a tool call: one line folded, its arguments, output and
// result expanded.
func (m *Model) toolEntry(e *Entry, width int, selected bool) string {
	status := ToolStatus(e, m.status, m.choice)
	mark := "▸"
	if e.Expanded {
		mark = "▾"
	}
	head := fmt.Sprintf("%s %s [%s]", mark, e.Tool, status)
	rest := ""
	switch {
	case e.Expanded:
	case e.Viewed && status == "running": // its newest output lines follow
		rest = " " + oneLine(e.Args)
	case e.Viewed && e.ViewStatus != "": // a command that ended: its status
		rest = " " + oneLine(e.Args) + " → " + e.ViewStatus
	case !e.Done && len(e.Output) > 0:
		rest = " " + e.Output[len(e.Output)-1]
	case len(e.Output) > 0: // a streaming tool: its latest output says more than its first result
		rest = " " + oneLine(e.Args) + " → " + e.Output[len(e.Output)-1]
	case e.Done:
		rest = " " + oneLine(e.Args) + " → " + oneLine(e.Result)
	default:
		rest = " " + oneLine(e.Args)
	}
	line := ansi.Truncate(head+rest, width, "…")
	styled := strings.Replace(line, "["+status+"]", styleStatus[status].Render("["+status+"]"), 1)
	if selected {
		styled = styleSelected.Render(line)
	}
	if !e.Expanded {
		if e.Viewed && status == "running" { // a running command: its newest lines, live
			return styled + m.liveTail(e, width)
		}
		return styled
	}
	var b strings.Builder
	b.WriteString(styled)
	section := func(title, text string) {
		if strings.TrimSpace(text) == "" {
			return
		}
		b.WriteString("\n" + styleDim.Render("  "+title+":"))
		lines := strings.Split(wrap(strings.TrimRight(text, "\n"), width-4), "\n")
		if n := len(lines); n > maxExpandedLines {
			lines = append([]string{fmt.Sprintf("(%d lines above)", n-maxExpandedLines)}, lines[n-maxExpandedLines:]...)
		}
		for _, l := range lines {
			b.WriteString("\n    " + l)
		}
	}
	section("args", e.Args)
	section("output", strings.Join(e.Output, "\n"))
	section("result", e.Result)
	return b.String()
}

// liveTail is the newest lines of a running command's output, under its
// folded line, one terminal line each.
func (m *Model) liveTail(e *Entry, width int) string {
	lines := e.Output[max(0, len(e.Output)-liveTailLines):]
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\n" + styleDim.Render(ansi.Truncate("    "+l, width, "…")))
	}
	return b.String()
}

func wrap(s string, width int) string {
	if width < 8 {
		width = 8
	}
	return ansi.Wrap(s, width, "")
}

// statusLine says what the thread does or waits on, its children and its
// token usage.
func (m *Model) statusLine() string {
	var parts []string
	st := strings.ReplaceAll(m.status, "_", " ") // waiting for provider, dead letter
	if st == "" {
		st = "new"
		if m.sending {
			st = "sending"
		}
	}
	switch m.status {
	case "waiting_for_tool":
		var names []string
		for _, e := range m.conv.Pending() {
			names = append(names, e.Tool)
		}
		if len(names) > 0 {
			st = "waiting on " + strings.Join(names, ", ")
		}
	case "waiting_for_choice":
		st = "waiting for your choice"
	case "watching":
		var tools []string
		for _, sub := range m.subs {
			tools = append(tools, sub.Tool)
		}
		if len(tools) > 0 {
			st = "watching " + strings.Join(tools, ", ")
		}
	case "sleeping":
		if m.until != nil {
			st = "sleeping until " + m.until.Local().Format("15:04:05")
		}
	case "waiting_for_provider", "failed":
		if m.reason != "" {
			st += ": " + oneLine(m.reason)
		}
	}
	if m.conv.Streaming() && m.status == "running" {
		st = "streaming"
	}
	parts = append(parts, "● "+st)
	if u := m.usage; u.Input+u.Output > 0 {
		s := fmt.Sprintf("tokens %s in, %s out", count(u.Input), count(u.Output))
		if u.Cached > 0 {
			s += fmt.Sprintf(" (%s cached)", count(u.Cached))
		}
		parts = append(parts, s)
	}
	if n := len(m.subs); n > 0 {
		var tools []string
		for _, sub := range m.subs {
			tools = append(tools, sub.Tool)
		}
		parts = append(parts, fmt.Sprintf("%d in the background: %s", n, strings.Join(tools, ", ")))
	}
	if s := spendText(m.budget); s != "" {
		parts = append(parts, s)
	}
	if n := len(m.children); n > 0 {
		busy := 0
		var names []string
		for _, c := range m.children {
			if c.Status != "idle" && c.Status != "closed" {
				busy++
			}
			names = append(names, c.ID+" "+c.Status)
		}
		parts = append(parts, fmt.Sprintf("children %d (%d busy): %s", n, busy, strings.Join(names, ", ")))
	}
	return ansi.Truncate(strings.Join(parts, " · "), max(m.width, 20), "…")
}

func count(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func (m *Model) header() string {
	parts := []string{m.opt.Title}
	if m.opt.Repo != "" {
		parts = append(parts, filepath.Base(m.opt.Repo)) // the full path is in /help
	}
	parts = append(parts, "thread "+m.thread)
	if m.agent != "" {
		parts = append(parts, "agent "+m.agent)
	}
	if m.model != "" {
		parts = append(parts, "model "+m.model)
	}
	w := max(m.width, 20)
	h := ansi.Truncate(" "+strings.Join(parts, " · ")+" ", w, "…")
	return styleHeader.Render(h + strings.Repeat(" ", max(w-ansi.StringWidth(h), 0)))
}

func (m *Model) openPager(title, text string) {
	m.pagerTitle = title
	m.pager.SetContent(wrapLines(text, m.pager.Width))
	m.pager.GotoTop()
	m.mode = modePager
}

// wrapLines hard-wraps each line (a diff keeps its columns).
func wrapLines(s string, width int) string {
	return ansi.Hardwrap(s, max(width, 8), true)
}

// View draws the screen.
func (m *Model) View() string {
	if m.done {
		return ""
	}
	w := max(m.width, 20)
	var body string
	footer := m.notice
	switch m.mode {
	case modePager:
		body = m.pager.View()
		footer = fmt.Sprintf("%s · %d%% · q or Esc closes · ↑↓ PgUp PgDn scroll", m.pagerTitle, int(m.pager.ScrollPercent()*100))
	case modePicker:
		body = m.pickerView()
		footer = "↑↓ select, Enter picks, Esc cancels"
	case modeQuit:
		body = m.vp.View()
	default:
		body = m.vp.View()
	}
	lines := []string{m.header(), body}
	if n := m.choiceLines(); n > 0 {
		lines = append(lines, m.choiceView())
	}
	lines = append(lines, styleDim.Render(m.statusLine()))
	if m.mode == modeQuit {
		lines = append(lines, m.quitView())
		footer = "↑↓ select, Enter confirms (k keeps it running, s stops it), Esc goes back"
	} else {
		lines = append(lines, m.input.View())
	}
	if footer == "" {
		footer = "/help · Tab selects a tool call · Ctrl+C quits"
	}
	lines = append(lines, styleDim.Render(ansi.Truncate(footer, w, "…")))
	return strings.Join(lines, "\n")
}

func (m *Model) choiceView() string {
	ch := m.choice
	var b strings.Builder
	b.WriteString(styleChoice.Render(ansi.Truncate("? "+oneLine(ch.Prompt)+"  (↑↓ Enter, or its number; Esc to type)", max(m.width, 20), "…")))
	for i, c := range ch.Choices {
		l := fmt.Sprintf("  %d. %s", i+1, c)
		if i == m.choiceSel {
			l = fmt.Sprintf("› %d. %s", i+1, c)
		}
		l = ansi.Truncate(l, max(m.width, 20), "…")
		if i == m.choiceSel {
			l = styleSelected.Render(l)
		}
		b.WriteString("\n" + l)
	}
	return b.String()
}

func (m *Model) quitView() string {
	var opts []string
	for i, q := range quitChoices {
		if i == m.quitSel {
			opts = append(opts, styleSelected.Render("› "+q))
		} else {
			opts = append(opts, "  "+q)
		}
	}
	return ansi.Truncate("The agent is busy: "+strings.Join(opts, "  "), max(m.width, 20), "…")
}

func (m *Model) pickerView() string {
	title := map[pickKind]string{pickThread: "Sessions, most recent activity first", pickModel: "Models", pickAgent: "Agents"}[m.pick]
	h := max(m.height-4, 2)
	lines := []string{styleChoice.Render(title)}
	first := 0
	if m.pickSel >= h-1 {
		first = m.pickSel - (h - 2)
	}
	for i := first; i < len(m.pickItems) && len(lines) < h; i++ {
		l := ansi.Truncate("  "+m.pickItems[i].label, max(m.width, 20), "…")
		if i == m.pickSel {
			l = styleSelected.Render(ansi.Truncate("› "+m.pickItems[i].label, max(m.width, 20), "…"))
		}
		lines = append(lines, l)
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// spendText is the cost so far at the catalog's prices, with the thread's
// dollar limit when it has one, and the tree's spend when it has a limit
// of its own ("" when the server prices nothing).
func spendText(b *client.Budget) string {
	if b == nil || b.Spent.USD <= 0 && b.Limit == nil && b.Tree == nil {
		return ""
	}
	s := fmt.Sprintf("cost $%.4f", b.Spent.USD)
	if b.Limit != nil && b.Limit.USD > 0 {
		s += fmt.Sprintf(" of $%.2f", b.Limit.USD)
	}
	if t := b.Tree; t != nil {
		s += fmt.Sprintf(", tree $%.4f", t.Spent.USD)
		if t.Limit != nil && t.Limit.USD > 0 {
			s += fmt.Sprintf(" of $%.2f", t.Limit.USD)
		}
	}
	if b.Waiting != "" {
		s += " (budget reached: waiting for your answer)"
	}
	return s
}
