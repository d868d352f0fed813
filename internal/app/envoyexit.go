package app

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
)

// envoyLogTailLines is how many of Envoy's last error lines an exit
// report quotes.
const envoyLogTailLines = 5

// ExitError describes why Envoy exited, for an error message: its exit
// status (when thaw started it) and the last error or critical lines of
// its log. Call it after Done is closed.
func (e *EnvoyProcess) ExitError() error {
	status := "exited"
	if e.exitErr != nil {
		status = e.exitErr.Error()
	}
	lines := errorLines(e.LogPath, envoyLogTailLines)
	if len(lines) == 0 {
		return fmt.Errorf("envoy (pid %d) %s; its log is %s", e.Pid, status, e.LogPath)
	}
	return fmt.Errorf("envoy (pid %d) %s; its log (%s) ends with: %s", e.Pid, status, e.LogPath, strings.Join(lines, " | "))
}

// errorLines returns the last n lines of path at level error or critical.
func errorLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "[critical]") || strings.Contains(line, "[error]") {
			out = append(out, strings.TrimSpace(line))
			if len(out) > n {
				out = out[1:]
			}
		}
	}
	return out
}

// ErrEnvoyExited is wrapped by start-up errors of an Envoy that exited
// before it acknowledged its first configuration.
var ErrEnvoyExited = errors.New("envoy exited during start-up")
