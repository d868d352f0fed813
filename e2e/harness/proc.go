package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultStopGrace is how long Process.Stop waits after SIGTERM before it
// sends SIGKILL.
const DefaultStopGrace = 5 * time.Second

// ProcessConfig describes a child process for StartProcess.
type ProcessConfig struct {
	// Name is a short label (for example "etcd") used in log file names and
	// failure output.
	Name string
	// Path is the executable.
	Path string
	// Args are the arguments, without the program name.
	Args []string
	// Env is added to the test's environment (later entries win).
	Env []string
	// Dir is the working directory; empty means the test's.
	Dir string
	// LogDir receives <Name>.log with the process's stdout and stderr;
	// empty means t.TempDir().
	LogDir string
}

// Process is a child process started by StartProcess. Its stdout and stderr
// go to a log file. Stop it with Stop; the test's cleanup stops it too.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File

	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done is closed

	stopOnce sync.Once
	stopErr  error
}

// StartProcess starts cfg.Path and registers a cleanup that stops it (by its
// pid: SIGTERM, then SIGKILL after DefaultStopGrace) and, when the test
// failed, logs the last 40 lines of its output. It fails the test if the
// process cannot be started.
func StartProcess(t testing.TB, cfg ProcessConfig) *Process {
	t.Helper()
	p, err := startProcess(cfg, t.TempDir)
	if err != nil {
		t.Fatalf("start %s: %v", cfg.Name, err)
	}
	t.Cleanup(func() {
		if err := p.Stop(DefaultStopGrace); err != nil {
			t.Logf("stop %s: %v", p.name, err)
		}
		if t.Failed() {
			t.Logf("last lines of %s (%s):\n%s", p.name, p.logPath, p.LogTail(40))
		}
	})
	return p
}

// LaunchProcess starts cfg.Path for a caller without a test (bench/): the
// caller stops it (Stop or StopGroup). cfg.LogDir is required. It returns
// an error when the log cannot be opened or the process cannot start.
func LaunchProcess(cfg ProcessConfig) (*Process, error) {
	if cfg.LogDir == "" {
		return nil, errors.New("harness: LaunchProcess needs ProcessConfig.LogDir")
	}
	return startProcess(cfg, nil)
}

func startProcess(cfg ProcessConfig, tempDir func() string) (*Process, error) {
	if cfg.Name == "" {
		cfg.Name = filepath.Base(cfg.Path)
	}
	if cfg.LogDir == "" {
		cfg.LogDir = tempDir()
	}
	logPath := filepath.Join(cfg.LogDir, cfg.Name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Own process group, and SIGKILL if the test binary dies first, so a
	// crashed test run leaves no control plane behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	p := &Process{name: cfg.Name, cmd: cmd, logPath: logPath, logFile: logFile, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Name returns the label given in ProcessConfig.Name.
func (p *Process) Name() string { return p.name }

// Path returns the executable the process runs (to start it again).
func (p *Process) Path() string { return p.cmd.Path }

// Args returns the arguments the process was started with, without the
// program name.
func (p *Process) Args() []string { return p.cmd.Args[1:] }

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath returns the file holding the process's stdout and stderr.
func (p *Process) LogPath() string { return p.logPath }

// Exited is closed once the process has exited, for whatever reason.
func (p *Process) Exited() <-chan struct{} { return p.done }

// ExitErr returns the error from waiting for the process (nil for exit
// status 0). It is valid only after Exited is closed.
func (p *Process) ExitErr() error { return p.waitErr }

// Stop sends SIGTERM to the process (by pid), waits up to grace for it to
// exit, then sends SIGKILL and waits for the exit. Later calls return the
// first call's result. An exit caused by the signal is not an error.
func (p *Process) Stop(grace time.Duration) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(grace, false) })
	return p.stopErr
}

// StopGroup is Stop, except that after grace it sends SIGKILL to the
// process's whole group (the process started it in a group of its own),
// so what it started is stopped with it (`thaw local` and its Envoy and
// backends).
func (p *Process) StopGroup(grace time.Duration) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(grace, true) })
	return p.stopErr
}

func (p *Process) stop(grace time.Duration, group bool) error {
	select {
	case <-p.done:
		return nil // exited by itself; Exited and ExitErr tell how
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sigterm pid %d: %w", p.Pid(), err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	if group {
		if err := syscall.Kill(-p.Pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("sigkill group %d: %w", p.Pid(), err)
		}
	} else if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sigkill pid %d: %w", p.Pid(), err)
	}
	<-p.done
	return fmt.Errorf("%s (pid %d) ignored SIGTERM for %v and was killed", p.name, p.Pid(), grace)
}

// Kill sends SIGKILL to the process alone (not its group) without waiting;
// Exited tells when it is gone.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sigkill pid %d: %w", p.Pid(), err)
	}
	return nil
}

// LogTail returns the last n lines of the process's log file.
func (p *Process) LogTail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(read %s: %v)", p.logPath, err)
	}
	return tailLines(data, n)
}

func tailLines(data []byte, n int) string {
	data = bytes.TrimRight(data, "\n")
	lines := strings.Split(string(data), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
