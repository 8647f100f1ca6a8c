package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal. Files, pipes, /dev/null and
// buffers are not.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// Progress shows one status line that rewrites itself in place. It writes only
// when its writer is a terminal (see [NewProgress]), so commands whose stderr is
// redirected stay quiet. It is safe for concurrent use.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	width int // length of the line on screen, to blank it out
}

// NewProgress returns a Progress on w that is enabled only when w is a terminal.
func NewProgress(w io.Writer) *Progress { return &Progress{w: w, on: IsTerminal(w)} }

// ForceProgress returns a Progress on w that always writes, for tests and for
// callers that made their own terminal decision.
func ForceProgress(w io.Writer) *Progress { return &Progress{w: w, on: true} }

// Enabled reports whether the progress line is shown.
func (p *Progress) Enabled() bool { return p != nil && p.on }

// Update replaces the status line.
func (p *Progress) Update(format string, args ...any) {
	if !p.Enabled() {
		return
	}
	line := fmt.Sprintf(format, args...)
	line = strings.NewReplacer("\n", " ", "\r", " ").Replace(line)
	p.mu.Lock()
	defer p.mu.Unlock()
	pad := ""
	if n := p.width - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.width = len(line)
}

// Done blanks the status line, leaving the cursor at the start of an empty line.
func (p *Progress) Done() {
	if !p.Enabled() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
	}
	p.width = 0
}

// OneLine flattens an error message to one line for stderr: newlines and tabs
// become spaces, so a multi-line error from a dependency never looks like a
// stack trace.
func OneLine(err error) string {
	if err == nil {
		return ""
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}
