package rap

import "fmt"

// MaxModelToolNameLen is the longest tool name the model providers accept
// (Bedrock's Converse toolSpec name and OpenAI's function name are both
// [a-zA-Z0-9_-]{1,64}). RAP allows names up to MaxNameLen (128), so a
// toolset may announce a tool no model could be offered: such a tool is
// left out of the set (a *LongToolNameError among its problems) instead
// of failing every completion of every thread that may use it.
const MaxModelToolNameLen = 64

// LongToolNameError reports a tool left out because its name is longer
// than the model providers accept.
type LongToolNameError struct {
	Name   string
	Source string // "toolset NAME (BASE)"
}

func (e *LongToolNameError) Error() string {
	return fmt.Sprintf("rap: tool %q of %s is left out: its name has %d characters, and model providers accept at most %d",
		e.Name, e.Source, len(e.Name), MaxModelToolNameLen)
}
