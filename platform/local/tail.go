package local

import (
	"strings"
	"sync"
)

// Bounds of the output a process keeps for its exit report.
const (
	tailLines     = 3
	tailLineBytes = 200
)

// lineTail keeps the last tailLines lines of a stream (each cut to
// tailLineBytes), so that the error `thaw status` shows for a crashed
// process can quote what it wrote last. Safe for concurrent use; the nil
// *lineTail keeps nothing.
type lineTail struct {
	mu    sync.Mutex
	lines []string
}

func (t *lineTail) add(line string) {
	if t == nil {
		return
	}
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	if len(line) > tailLineBytes {
		line = line[:tailLineBytes] + "…"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == tailLines {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:tailLines-1]
	}
	t.lines = append(t.lines, line)
}

// String returns the kept lines joined with " | ", oldest first.
func (t *lineTail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}
