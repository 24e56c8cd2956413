package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentslice/agentslice/client"
)

// Options say what the UI is attached to.
type Options struct {
	// Client talks to the serve (required to do anything; the pure tests
	// of Update and View leave it nil and run no command).
	Client *client.Client
	// Thread is the thread to open; NewThread makes the ID of a new one
	// (/new, and Thread "").
	Thread    string
	NewThread func() string
	// Agent is the agent a new thread runs as ("" for the server's
	// default).
	Agent string
	// Repo is the repository of `agentslice code` ("" for chat): it is
	// shown, and enables /diff and /apply.
	Repo string
	// Title names the program in the header ("agentslice code").
	Title string
	// ListThreads filters what /load offers (nil: every thread).
	ListThreads func(client.ThreadSummary) bool
	// Warning, when set, is shown above the conversation of every thread
	// (`code`: the server serves another repository's sandbox).
	Warning string
}

// Outcome is how the UI ended, for the command to say so.
type Outcome struct {
	Thread string
	// Status is the thread's last known status.
	Status string
	// Busy is set when the thread was left working in the background.
	Busy bool
	// Stopped is set when the user chose to stop it on the way out.
	Stopped bool
}

type mode int

const (
	modeChat   mode = iota
	modeQuit        // "keep running in the background / stop it"
	modePicker      // /load, /model, /agent
	modePager       // /diff, /help
)

// pickKind says what a picker picks.
type pickKind int

const (
	pickThread pickKind = iota
	pickModel
	pickAgent
)

type pickItem struct {
	value, label string
}

// childStatus is one child thread and its status.
type childStatus struct {
	ID, Status string
}

// Model is the bubbletea model of the UI.
type Model struct {
	opt Options
	ctx context.Context

	thread string
	conv   *Conversation
	gen    int // the stream generation: events of an older stream are dropped
	stream *client.Stream

	// From the thread's state (GET /threads/{id}) and its state events.
	status, reason, model, agent string
	usage                        client.Usage
	budget                       *client.Budget // spend and limits (nil: the server reports none)
	subs                         []client.Subscription
	until                        *time.Time
	children                     []childStatus
	choice                       *client.Choice
	choiceSel                    int
	choiceHidden                 bool // Esc: type instead of choosing
	refreshing, refreshAgain     bool
	sending                      bool

	mode       mode
	quitSel    int
	pick       pickKind
	pickItems  []pickItem
	pickSel    int
	pager      viewport.Model
	pagerTitle string

	input    textinput.Model
	vp       viewport.Model
	follow   bool
	selTool  int // index into conv.Tools(), -1 for none
	width    int
	height   int
	notice   string
	noticeAt int // the conversation length when the notice was set
	outcome  Outcome
	done     bool
}

// New returns the UI's model; ctx bounds the calls it makes.
func New(ctx context.Context, opt Options) *Model {
	in := textinput.New()
	in.Prompt = "> "
	in.Placeholder = "message, or /help"
	in.CharLimit = 0
	in.Focus()
	if opt.Title == "" {
		opt.Title = "agentslice"
	}
	m := &Model{opt: opt, ctx: ctx, conv: NewConversation(), input: in, follow: true, selTool: -1,
		width: 80, height: 24, agent: opt.Agent}
	m.vp = viewport.New(80, 20)
	m.vp.KeyMap = viewport.KeyMap{} // the UI maps the scrolling keys itself
	m.pager = viewport.New(80, 20)
	m.thread = opt.Thread
	if m.thread == "" && opt.NewThread != nil {
		m.thread = opt.NewThread()
	}
	m.layout()
	return m
}

// Outcome says how the UI ended (valid after the program returned).
func (m *Model) Outcome() Outcome {
	o := m.outcome
	o.Thread, o.Status = m.thread, m.status
	return o
}

// Thread is the thread the UI shows.
func (m *Model) Thread() string { return m.thread }

// Init opens the thread's event stream.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(textinput.Blink, m.openStream(client.EventOptions{}))
}

// busy reports whether the thread is working (quitting then asks).
func (m *Model) busy() bool {
	switch m.status {
	case "running", "waiting_for_tool", "sleeping", "waiting_for_provider", "watching":
		return true
	}
	// A thread whose tool still works for it (a background command, a
	// watch: serve says "watching") is busy too: quitting asks whether to
	// leave it running. Its subscriptions count before its status comes.
	return m.sending || m.conv.Streaming() || len(m.subs) > 0
}

// Messages of the commands.
type (
	streamMsg struct {
		gen    int
		opts   client.EventOptions // what was asked: a failed open is retried with it
		stream *client.Stream
		err    error
	}
	eventMsg struct {
		gen int
		ev  client.Event
		err error
	}
	reconnectMsg struct {
		gen  int
		opts client.EventOptions
	}
	threadMsg struct {
		gen      int
		th       *client.Thread
		children []childStatus
		err      error
	}
	sentMsg struct {
		gen int
		err error
	}
	noticeMsg struct {
		text string
		err  error
	}
	pagerMsg struct {
		title, text string
		err         error
	}
	pickerMsg struct {
		kind  pickKind
		items []pickItem
		sel   int
		err   error
	}
	quitMsg struct{ stopped bool }
)

// Update is the state machine: one message in, the new state and the
// commands to run out.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.KeyMsg:
		return m.key(msg)
	case streamMsg:
		if msg.gen != m.gen {
			if msg.stream != nil {
				msg.stream.Close()
			}
			return m, nil
		}
		if msg.err != nil {
			m.setNotice("event stream: " + msg.err.Error() + " (retrying)")
			return m, m.reconnect(msg.opts, time.Second)
		}
		m.stream = msg.stream
		return m, tea.Batch(m.next(), m.refresh())
	case eventMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		if msg.err != nil {
			return m, m.streamFailed(msg.err)
		}
		return m, tea.Batch(m.apply(msg.ev), m.next())
	case reconnectMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		return m, m.openStream(msg.opts)
	case threadMsg:
		return m, m.refreshed(msg)
	case sentMsg:
		if msg.gen == m.gen {
			m.sending = false
			if msg.err != nil {
				m.setNotice("send: " + msg.err.Error())
			} else if !m.busy() {
				m.status = "running" // until the thread's state says more
			}
		}
		m.render()
		return m, nil
	case noticeMsg:
		if msg.err != nil {
			m.setNotice(msg.err.Error())
		} else {
			m.setNotice(msg.text)
		}
		m.render()
		return m, nil
	case pagerMsg:
		if msg.err != nil {
			m.setNotice(msg.title + ": " + msg.err.Error())
			return m, nil
		}
		m.openPager(msg.title, msg.text)
		return m, nil
	case pickerMsg:
		if msg.err != nil {
			m.setNotice(msg.err.Error())
			return m, nil
		}
		if len(msg.items) == 0 {
			m.setNotice("nothing to pick from")
			return m, nil
		}
		m.mode, m.pick, m.pickItems, m.pickSel = modePicker, msg.kind, msg.items, msg.sel
		return m, nil
	case quitMsg:
		m.outcome.Stopped = msg.stopped
		m.outcome.Busy = !msg.stopped && m.busy()
		m.done = true
		return m, tea.Quit
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg) // the cursor's blink
	return m, cmd
}

// apply folds an event in and refreshes what the state shows.
func (m *Model) apply(ev client.Event) tea.Cmd {
	m.conv.Apply(ev)
	var cmd tea.Cmd
	switch ev.Kind {
	case "state":
		if ev.State != nil {
			m.status, m.reason = ev.State.Status, ev.State.Reason
			if m.status != "waiting_for_choice" {
				m.choice = nil
			}
		}
		cmd = m.refresh()
	case "user_choice":
		if ev.Choice != nil {
			m.setChoice(ev.Choice)
		}
	case "choice_answered":
		m.choice = nil
	case "model_switched", "agent_switched", "child_spawned", "child_report":
		cmd = m.refresh()
	}
	m.render()
	return cmd
}

func (m *Model) setChoice(c *client.Choice) {
	if m.choice != nil && m.choice.CallID == c.CallID {
		return
	}
	m.choice, m.choiceHidden, m.choiceSel = c, false, 0
	if c.Default != nil && *c.Default >= 0 && *c.Default < len(c.Choices) {
		m.choiceSel = *c.Default
	}
	m.layout()
}

func (m *Model) refreshed(msg threadMsg) tea.Cmd {
	m.refreshing = false
	if msg.gen != m.gen {
		return nil
	}
	again := m.refreshAgain
	m.refreshAgain = false
	if msg.err == nil && msg.th != nil {
		th := msg.th
		m.status, m.reason, m.until = th.Status, th.Reason, th.Until
		m.usage, m.model, m.budget, m.subs = th.State.Usage, th.State.Model, th.Budget, th.State.Subscriptions
		calls := make([]string, len(m.subs))
		for i, sub := range m.subs {
			calls[i] = sub.CallID
		}
		m.conv.SetSubscriptions(calls)
		if th.State.Agent != "" {
			m.agent = th.State.Agent
		}
		m.children = msg.children
		if th.Choice != nil {
			m.setChoice(th.Choice)
		} else {
			m.choice = nil
		}
		m.layout()
	} else if msg.err != nil && !client.IsNotFound(msg.err) {
		m.setNotice("reading the thread: " + msg.err.Error())
	}
	m.render()
	if again {
		return m.refresh()
	}
	return nil
}

func (m *Model) streamFailed(err error) tea.Cmd {
	if m.ctx.Err() != nil || m.done {
		return nil
	}
	last, resume := 0, false
	if m.stream != nil {
		last, resume = m.stream.LastSeq, true
		m.stream.Close()
		m.stream = nil
	}
	m.setNotice("event stream: " + strings.TrimPrefix(err.Error(), "client: ") + " (reconnecting)")
	delay := time.Second
	if errors.Is(err, client.ErrDropped) {
		delay = 0
	}
	if !resume {
		return m.reconnect(client.EventOptions{}, delay)
	}
	return m.reconnect(client.EventOptions{After: last, Resume: true}, delay)
}

func (m *Model) setNotice(s string) {
	m.notice = s
	m.noticeAt = len(m.conv.Entries)
}

// switchThread shows another thread: a fresh stream, a new conversation.
func (m *Model) switchThread(id string) tea.Cmd {
	if m.stream != nil {
		m.stream.Close()
		m.stream = nil
	}
	m.gen++
	m.thread, m.conv = id, NewConversation()
	m.status, m.reason, m.model, m.until, m.children, m.choice = "", "", "", nil, nil, nil
	m.usage, m.budget, m.subs, m.agent, m.selTool, m.follow = client.Usage{}, nil, nil, m.opt.Agent, -1, true
	m.refreshing, m.refreshAgain, m.sending = false, false, false
	m.notice = ""
	m.layout()
	return m.openStream(client.EventOptions{})
}
