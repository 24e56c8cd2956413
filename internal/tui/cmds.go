package tui

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentslice/agentslice/client"
)

// The commands: each is one call of the client, run by bubbletea off the
// Update loop, whose answer comes back as a message. None is run without
// a client.

var errNoClient = errors.New("no server")

// maxChildren bounds the children whose status is read per refresh.
const maxChildren = 12

func (m *Model) openStream(opts client.EventOptions) tea.Cmd {
	c, ctx, gen, thread := m.opt.Client, m.ctx, m.gen, m.thread
	if c == nil {
		return nil
	}
	return func() tea.Msg {
		s, err := c.Events(ctx, thread, opts)
		return streamMsg{gen: gen, opts: opts, stream: s, err: err}
	}
}

func (m *Model) next() tea.Cmd {
	s, gen := m.stream, m.gen
	if s == nil {
		return nil
	}
	return func() tea.Msg {
		ev, err := s.Next()
		return eventMsg{gen: gen, ev: ev, err: err}
	}
}

func (m *Model) reconnect(opts client.EventOptions, after time.Duration) tea.Cmd {
	gen := m.gen
	msg := reconnectMsg{gen: gen, opts: opts}
	if after <= 0 {
		return func() tea.Msg { return msg }
	}
	return tea.Tick(after, func(time.Time) tea.Msg { return msg })
}

// refresh reads the thread's state (no items) and its children's: one
// read at a time, another after it when asked meanwhile.
func (m *Model) refresh() tea.Cmd {
	c, ctx, gen, thread := m.opt.Client, m.ctx, m.gen, m.thread
	if c == nil {
		return nil
	}
	if m.refreshing {
		m.refreshAgain = true
		return nil
	}
	m.refreshing = true
	return func() tea.Msg {
		th, err := c.Thread(ctx, thread, math.MaxInt32)
		if err != nil {
			return threadMsg{gen: gen, err: err}
		}
		var kids []childStatus
		for i, id := range th.State.Children {
			if i == maxChildren {
				kids = append(kids, childStatus{ID: fmt.Sprintf("(%d more)", len(th.State.Children)-i)})
				break
			}
			st := "?"
			if ct, err := c.Thread(ctx, id, math.MaxInt32); err == nil {
				st = ct.Status
			}
			kids = append(kids, childStatus{ID: id, Status: st})
		}
		return threadMsg{gen: gen, th: th, children: kids}
	}
}

func (m *Model) send(text string) tea.Cmd {
	c, ctx, gen, thread := m.opt.Client, m.ctx, m.gen, m.thread
	msg := client.Message{Text: text, Agent: m.agent}
	if c == nil {
		return nil
	}
	m.sending = true
	return func() tea.Msg {
		_, err := c.Send(ctx, thread, msg)
		if err != nil {
			err = fmt.Errorf("thread %s: %w", thread, err)
		}
		return sentMsg{gen: gen, err: err}
	}
}

func (m *Model) choose(ch *client.Choice, sel int) tea.Cmd {
	c, ctx, thread := m.opt.Client, m.ctx, m.thread
	if c == nil {
		return nil
	}
	return func() tea.Msg {
		if err := c.Choose(ctx, thread, ch.CallID, sel); err != nil {
			return noticeMsg{err: fmt.Errorf("answering %q: %w", ch.Prompt, err)}
		}
		return noticeMsg{text: fmt.Sprintf("chose %q", ch.Choices[sel])}
	}
}

// call runs f and reports its error or done as the notice.
func (m *Model) call(done string, f func(c *client.Client) error) tea.Cmd {
	c := m.opt.Client
	if c == nil {
		return func() tea.Msg { return noticeMsg{err: errNoClient} }
	}
	return func() tea.Msg {
		if err := f(c); err != nil {
			return noticeMsg{err: err}
		}
		return noticeMsg{text: done}
	}
}

func (m *Model) stopThread(reason string) tea.Cmd {
	ctx, thread := m.ctx, m.thread
	return m.call("stopping thread "+thread, func(c *client.Client) error { return c.Stop(ctx, thread, reason) })
}

// stopAndQuit stops the thread, then quits (whatever the stop answered:
// the command says it afterwards).
func (m *Model) stopAndQuit() tea.Cmd {
	c, ctx, thread := m.opt.Client, m.ctx, m.thread
	return func() tea.Msg {
		if c != nil {
			_ = c.Stop(ctx, thread, "stopped on quitting the terminal")
		}
		return quitMsg{stopped: true}
	}
}

func (m *Model) diff() tea.Cmd {
	c, ctx, thread := m.opt.Client, m.ctx, m.thread
	if c == nil {
		return nil
	}
	return func() tea.Msg {
		d, err := c.SandboxDiff(ctx, thread)
		if err != nil {
			return pagerMsg{title: "diff", err: err}
		}
		if strings.TrimSpace(d) == "" {
			d = "(the sandbox of thread " + thread + " has no changes)"
		}
		return pagerMsg{title: "diff", text: d}
	}
}

func (m *Model) applySandbox() tea.Cmd {
	c, ctx, thread := m.opt.Client, m.ctx, m.thread
	if c == nil {
		return nil
	}
	return func() tea.Msg {
		a, err := c.SandboxApply(ctx, thread, "")
		if err != nil {
			return noticeMsg{err: fmt.Errorf("apply: %w", err)}
		}
		return noticeMsg{text: fmt.Sprintf("applied as %s: %s", short(a.Commit), strings.Join(a.Files, ", "))}
	}
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func (m *Model) loadPicker() tea.Cmd {
	c, ctx, keep, cur := m.opt.Client, m.ctx, m.opt.ListThreads, m.thread
	if c == nil {
		return nil
	}
	return func() tea.Msg {
		l, err := c.Threads(ctx, client.ListOptions{Limit: 200})
		if err != nil {
			return pickerMsg{err: fmt.Errorf("listing threads: %w", err)}
		}
		ts := l.Threads
		sort.SliceStable(ts, func(i, j int) bool { return activity(ts[i]).After(activity(ts[j])) })
		var items []pickItem
		sel := 0
		for _, t := range ts {
			if keep != nil && !keep(t) {
				continue
			}
			last := "-"
			if t.LastActivity != nil {
				last = t.LastActivity.Local().Format("01-02 15:04")
			}
			if t.ID == cur {
				sel = len(items)
			}
			items = append(items, pickItem{value: t.ID, label: fmt.Sprintf("%-11s %-18s %s  %s", last, t.Status, t.ID, oneLine(t.Title))})
		}
		return pickerMsg{kind: pickThread, items: items, sel: sel}
	}
}

func activity(t client.ThreadSummary) time.Time {
	if t.LastActivity == nil {
		return time.Time{}
	}
	return *t.LastActivity
}

func (m *Model) modelPicker() tea.Cmd {
	c, ctx, cur := m.opt.Client, m.ctx, m.model
	if c == nil {
		return nil
	}
	return func() tea.Msg {
		ms, err := c.Models(ctx)
		if err != nil {
			return pickerMsg{err: fmt.Errorf("listing models: %w", err)}
		}
		items := []pickItem{{value: "", label: "(default: " + ms.Default + ")"}}
		sel := 0
		for _, x := range ms.Models {
			if x.Name == cur {
				sel = len(items)
			}
			items = append(items, pickItem{value: x.Name, label: x.Name + "  " + x.Provider})
		}
		return pickerMsg{kind: pickModel, items: items, sel: sel}
	}
}

func (m *Model) agentPicker() tea.Cmd {
	c, ctx, cur := m.opt.Client, m.ctx, m.agent
	if c == nil {
		return nil
	}
	return func() tea.Msg {
		as, err := c.Agents(ctx)
		if err != nil {
			return pickerMsg{err: fmt.Errorf("listing agents: %w", err)}
		}
		var items []pickItem
		sel := 0
		for _, a := range as.Agents {
			if a.Name == cur {
				sel = len(items)
			}
			label := a.Name
			if a.Model != "" {
				label += "  model " + a.Model
			}
			items = append(items, pickItem{value: a.Name, label: label})
		}
		return pickerMsg{kind: pickAgent, items: items, sel: sel}
	}
}

func (m *Model) setModel(name string) tea.Cmd {
	ctx, thread := m.ctx, m.thread
	shown := name
	if shown == "" {
		shown = "its default"
	}
	return m.call("thread "+thread+" switches to model "+shown, func(c *client.Client) error { return c.SetModel(ctx, thread, name) })
}

func (m *Model) setAgent(name string) tea.Cmd {
	ctx, thread := m.ctx, m.thread
	m.agent = name
	return m.call("thread "+thread+" runs as agent "+name+" from its next completion", func(c *client.Client) error { return c.SetAgent(ctx, thread, name) })
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return s
}
