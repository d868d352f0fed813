package harness

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// startGroupLeader starts `sleep 30` as the leader of its own process
// group, as thaw local starts a backend, and kills it (by pid) at cleanup.
func startGroupLeader(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd
}

func writeLocalState(t *testing.T, dir string, recs ...leftoverRecord) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"version": 1, "instances": recs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, localStateFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestStopLeftoverBackends(t *testing.T) {
	tests := []struct {
		name       string
		lockHeld   bool // a live thaw holds the state directory
		badStart   bool // the pid was reused: start time differs
		wantKilled bool
	}{
		{name: "recorded and unlocked", wantKilled: true},
		{name: "state dir locked by a live thaw", lockHeld: true},
		{name: "pid reused", badStart: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := startGroupLeader(t)
			pid := cmd.Process.Pid
			_, _, start, err := procStatFields(pid)
			if err != nil {
				t.Fatal(err)
			}
			if tt.badStart {
				start++
			}
			writeLocalState(t, dir, leftoverRecord{Revision: "local/a", Instance: "a-1", Pid: pid, Pgid: pid, StartTicks: start})
			if tt.lockHeld {
				f, err := os.OpenFile(filepath.Join(dir, localLockFile), os.O_RDWR|os.O_CREATE, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				// A separate open file description: flock conflicts with
				// the one stopLeftoverBackends opens, as another process's would.
				if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
					t.Fatal(err)
				}
			}
			n := stopLeftoverBackends(t.Logf, dir)
			if got := n == 1; got != tt.wantKilled {
				t.Fatalf("stopLeftoverBackends killed %d groups, want killed: %v", n, tt.wantKilled)
			}
			if alive := procAlive(pid); alive == tt.wantKilled {
				t.Fatalf("pid %d alive=%v after stopLeftoverBackends, want alive=%v", pid, alive, !tt.wantKilled)
			}
		})
	}
}

func TestStopLeftoverBackendsNoStateFile(t *testing.T) {
	if n := stopLeftoverBackends(t.Logf, t.TempDir()); n != 0 {
		t.Fatalf("killed %d groups with no state file, want 0", n)
	}
}
