package tui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// The keys, by mode. Nothing needs a mouse.

// quitChoices are the answers of the dialog on quitting a busy thread.
var quitChoices = []string{"keep running in the background", "stop it"}

func (m *Model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch m.mode {
	case modeQuit:
		return m, m.quitKey(k)
	case modePicker:
		return m, m.pickerKey(k)
	case modePager:
		return m, m.pagerKey(k)
	}
	if k.Type == tea.KeyCtrlC || k.Type == tea.KeyCtrlD {
		return m, m.quit()
	}
	if m.choice != nil && !m.choiceHidden {
		if cmd, ok := m.choiceKey(k); ok {
			return m, cmd
		}
	}
	switch k.Type {
	case tea.KeyPgUp, tea.KeyCtrlU:
		m.vp.HalfPageUp()
		m.follow = m.vp.AtBottom()
		return m, nil
	case tea.KeyPgDown, tea.KeyCtrlF:
		m.vp.HalfPageDown()
		m.follow = m.vp.AtBottom()
		return m, nil
	case tea.KeyUp:
		m.vp.ScrollUp(1)
		m.follow = m.vp.AtBottom()
		return m, nil
	case tea.KeyDown:
		m.vp.ScrollDown(1)
		m.follow = m.vp.AtBottom()
		return m, nil
	case tea.KeyTab, tea.KeyShiftTab:
		m.cycleTool(k.Type == tea.KeyTab)
		return m, nil
	case tea.KeyCtrlO:
		m.toggleAll()
		return m, nil
	case tea.KeyEsc:
		if m.choice != nil && m.choiceHidden {
			m.choiceHidden = false
			m.layout()
		}
		m.selTool = -1
		m.notice = ""
		m.render()
		return m, nil
	case tea.KeyEnter:
		text := strings.TrimSpace(m.input.Value())
		m.input.SetValue("")
		switch {
		case text == "" && m.selTool >= 0:
			m.toggleSelected()
			return m, nil
		case text == "":
			return m, nil
		case strings.HasPrefix(text, "/"):
			return m, m.command(text)
		}
		m.follow = true
		return m, m.send(text)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return m, cmd
}

// choiceKey answers a pending user_choice: arrows move, Enter (or the
// option's number) answers, Esc hides it to type instead.
func (m *Model) choiceKey(k tea.KeyMsg) (tea.Cmd, bool) {
	ch := m.choice
	switch k.Type {
	case tea.KeyUp, tea.KeyShiftTab:
		m.choiceSel = (m.choiceSel + len(ch.Choices) - 1) % len(ch.Choices)
		return nil, true
	case tea.KeyDown, tea.KeyTab:
		m.choiceSel = (m.choiceSel + 1) % len(ch.Choices)
		return nil, true
	case tea.KeyEnter:
		if strings.TrimSpace(m.input.Value()) != "" {
			return nil, false // a typed line goes as a message or a command
		}
		return m.answer(m.choiceSel), true
	case tea.KeyEsc:
		m.choiceHidden = true
		m.layout()
		return nil, true
	case tea.KeyRunes:
		if m.input.Value() == "" && len(k.Runes) == 1 && k.Runes[0] >= '1' && k.Runes[0] <= '9' {
			if n := int(k.Runes[0] - '1'); n < len(ch.Choices) {
				return m.answer(n), true
			}
		}
	}
	return nil, false
}

func (m *Model) answer(n int) tea.Cmd {
	ch := m.choice
	m.choice = nil
	m.layout()
	m.setNotice(fmt.Sprintf("answering %q…", ch.Choices[n]))
	return m.choose(ch, n)
}

// quit detaches from an idle thread, or asks what to do with a busy one.
func (m *Model) quit() tea.Cmd {
	if !m.busy() {
		return func() tea.Msg { return quitMsg{} }
	}
	m.mode, m.quitSel = modeQuit, 0
	return nil
}

func (m *Model) quitKey(k tea.KeyMsg) tea.Cmd {
	switch k.Type {
	case tea.KeyUp, tea.KeyDown, tea.KeyTab, tea.KeyShiftTab:
		m.quitSel = 1 - m.quitSel
	case tea.KeyEsc:
		m.mode = modeChat
	case tea.KeyCtrlC:
		return func() tea.Msg { return quitMsg{} } // a second ^C: keep it running
	case tea.KeyEnter:
		return m.quitWith(m.quitSel)
	case tea.KeyRunes:
		switch strings.ToLower(string(k.Runes)) {
		case "k":
			return m.quitWith(0)
		case "s":
			return m.quitWith(1)
		}
	}
	return nil
}

func (m *Model) quitWith(sel int) tea.Cmd {
	if sel == 1 {
		return m.stopAndQuit()
	}
	return func() tea.Msg { return quitMsg{} }
}

func (m *Model) pickerKey(k tea.KeyMsg) tea.Cmd {
	n := len(m.pickItems)
	switch k.Type {
	case tea.KeyUp, tea.KeyShiftTab:
		m.pickSel = (m.pickSel + n - 1) % n
	case tea.KeyDown, tea.KeyTab:
		m.pickSel = (m.pickSel + 1) % n
	case tea.KeyEsc, tea.KeyCtrlC:
		m.mode = modeChat
	case tea.KeyEnter:
		m.mode = modeChat
		v := m.pickItems[m.pickSel].value
		switch m.pick {
		case pickThread:
			if v == m.thread {
				return nil
			}
			return m.switchThread(v)
		case pickModel:
			return m.setModel(v)
		case pickAgent:
			return m.agentCmd(v)
		}
	}
	return nil
}

func (m *Model) pagerKey(k tea.KeyMsg) tea.Cmd {
	switch k.Type {
	case tea.KeyEsc, tea.KeyCtrlC, tea.KeyEnter:
		m.mode = modeChat
		m.render()
	case tea.KeyUp:
		m.pager.ScrollUp(1)
	case tea.KeyDown:
		m.pager.ScrollDown(1)
	case tea.KeyPgUp, tea.KeyCtrlU:
		m.pager.HalfPageUp()
	case tea.KeyPgDown, tea.KeyCtrlF, tea.KeySpace:
		m.pager.HalfPageDown()
	case tea.KeyHome:
		m.pager.GotoTop()
	case tea.KeyEnd:
		m.pager.GotoBottom()
	case tea.KeyRunes:
		if string(k.Runes) == "q" {
			m.mode = modeChat
			m.render()
		}
	}
	return nil
}

// cycleTool moves the tool-call selection (Tab, Shift+Tab); Enter on an
// empty line then expands or folds the selected call.
func (m *Model) cycleTool(forward bool) {
	tools := m.conv.Tools()
	if len(tools) == 0 {
		m.setNotice("no tool calls yet")
		return
	}
	switch {
	case m.selTool < 0 && forward:
		m.selTool = len(tools) - 1
	case m.selTool < 0:
		m.selTool = len(tools) - 1
	case forward:
		m.selTool = (m.selTool + 1) % len(tools)
	default:
		m.selTool = (m.selTool + len(tools) - 1) % len(tools)
	}
	m.notice = "Enter expands or folds the selected call, Esc leaves it"
	m.render()
	m.scrollTo(tools[m.selTool])
}

func (m *Model) toggleSelected() {
	tools := m.conv.Tools()
	if m.selTool < 0 || m.selTool >= len(tools) {
		return
	}
	e := &m.conv.Entries[tools[m.selTool]]
	e.Expanded = !e.Expanded
	m.render()
	m.scrollTo(tools[m.selTool])
}

func (m *Model) toggleAll() {
	open := false
	for _, i := range m.conv.Tools() {
		if !m.conv.Entries[i].Expanded {
			open = true
		}
	}
	for _, i := range m.conv.Tools() {
		m.conv.Entries[i].Expanded = open
	}
	m.render()
}

const helpText = `Type a message and press Enter to send it to the agent.

Commands
  /new            start a new session (a new thread)
  /load           pick a session, most recent activity first
  /diff           the changes of this session's sandbox (code only)
  /apply          commit them onto your current branch (code only)
  /model [NAME]   switch the thread's model (no NAME: pick one)
  /agent [NAME]   switch the agent the thread runs as (no NAME: pick one)
  /stop           stop what the agent is doing
  /help           this page
  /quit           leave; a busy agent can keep running in the background

Keys
  Enter           send; on an empty line, expand or fold the selected tool call
  Tab, Shift+Tab  select a tool call; Ctrl+O expands or folds them all
  Up, Down        scroll one line (choose, while a choice waits)
  PgUp, PgDn      scroll half a page (also Ctrl+U, Ctrl+F)
  1-9             answer a waiting choice by its number; Esc types instead
  Ctrl+C          quit, as /quit

Leaving an idle session detaches at once; reopening it shows all that
happened meanwhile (agentslice code in the same repository resumes its
latest session; agentslice chat THREAD any thread).`

// command runs a slash command.
func (m *Model) command(line string) tea.Cmd {
	name, arg, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "quit", "exit", "q":
		return m.quit()
	case "help", "h", "?":
		m.openPager("help", m.helpHead()+helpText)
		return nil
	case "new":
		if m.opt.NewThread == nil {
			m.setNotice("/new: this UI cannot make thread IDs")
			return nil
		}
		return m.switchThread(m.opt.NewThread())
	case "load":
		return m.loadPicker()
	case "stop":
		return m.stopThread(arg)
	case "diff", "apply":
		if m.opt.Repo == "" {
			m.setNotice("/" + name + ": this session has no repository (agentslice code has)")
			return nil
		}
		if name == "diff" {
			return m.diff()
		}
		return m.applySandbox()
	case "model":
		if arg != "" {
			return m.setModel(arg)
		}
		return m.modelPicker()
	case "agent":
		if arg != "" {
			return m.agentCmd(arg)
		}
		return m.agentPicker()
	}
	m.setNotice(fmt.Sprintf("unknown command /%s: /help lists them", name))
	m.render()
	return nil
}

// agentCmd switches the thread's agent, or for a thread nobody wrote to
// yet, the agent its first message names.
func (m *Model) agentCmd(name string) tea.Cmd {
	if m.status == "" && len(m.conv.Entries) == 0 {
		m.agent = name
		m.setNotice("the new thread will run as agent " + name)
		return nil
	}
	return m.setAgent(name)
}

// helpHead says what the session is attached to.
func (m *Model) helpHead() string {
	s := "Thread " + m.thread
	if m.opt.Repo != "" {
		s += " on the repository " + m.opt.Repo
	}
	if m.agent != "" {
		s += ", agent " + m.agent
	}
	return s + ".\n\n"
}
