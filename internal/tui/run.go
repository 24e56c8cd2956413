package tui

import (
	"context"
	"io"

	tea "github.com/charmbracelet/bubbletea"
)

// Run shows the UI on the terminal (in, out) until the user quits, and
// says how it ended. The event stream is closed before Run returns.
func Run(ctx context.Context, opt Options, in io.Reader, out io.Writer) (Outcome, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := New(ctx, opt)
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	_, err := p.Run()
	if m.stream != nil {
		m.stream.Close()
	}
	if err != nil && m.done {
		err = nil // quitting cancels the program's context
	}
	return m.Outcome(), err
}
