package harness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestProcessLogAndStop(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		wantErr  bool // Stop had to SIGKILL
		wantLogs string
	}{
		{name: "exits on SIGTERM", script: `echo started; exec sleep 30`, wantLogs: "started"},
		{name: "ignores SIGTERM", script: `trap '' TERM; echo stubborn; while :; do sleep 0.05; done`, wantErr: true, wantLogs: "stubborn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := StartProcess(t, ProcessConfig{Name: "sh", Path: "/bin/sh", Args: []string{"-c", tt.script}})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := poll(ctx, p, func(context.Context) error {
				if !strings.Contains(p.LogTail(5), tt.wantLogs) {
					return errors.New("no output yet")
				}
				return nil
			}); err != nil {
				t.Fatalf("waiting for output: %v", err)
			}
			err := p.Stop(200 * time.Millisecond)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Stop() = %v, want error: %v", err, tt.wantErr)
			}
			select {
			case <-p.Exited():
			default:
				t.Fatal("process still running after Stop")
			}
			if again := p.Stop(time.Millisecond); (again != nil) != tt.wantErr {
				t.Fatalf("second Stop() = %v, want the first result %v", again, err)
			}
		})
	}
}

func TestWaitForPortReportsExit(t *testing.T) {
	p := StartProcess(t, ProcessConfig{Name: "false", Path: "/bin/sh", Args: []string{"-c", "exit 3"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := WaitForPort(ctx, p, LoopbackAddr(FreePort(t)))
	if !errors.Is(err, ErrExited) {
		t.Fatalf("WaitForPort() = %v, want ErrExited", err)
	}
}

func TestTailLines(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{in: "a\nb\nc\n", n: 2, want: "b\nc"},
		{in: "a\nb", n: 5, want: "a\nb"},
		{in: "", n: 3, want: ""},
	}
	for _, tt := range tests {
		if got := tailLines([]byte(tt.in), tt.n); got != tt.want {
			t.Errorf("tailLines(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// TestFreePortBelowEphemeralRange checks that FreePort picks below the
// kernel's ephemeral range when it is known, so no outgoing connection can
// take the port before the test binds it.
func TestFreePortBelowEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	if lo <= firstPickedPort+1000 {
		t.Skipf("ephemeral range starts at %d: FreePort falls back to a kernel-chosen port", lo)
	}
	for range 20 {
		if p := FreePort(t); p < firstPickedPort || p >= lo {
			t.Fatalf("FreePort = %d, want in [%d, %d)", p, firstPickedPort, lo)
		}
	}
}
