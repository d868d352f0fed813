package app

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// EnvoyProcess is the Envoy `thaw local` runs. Envoy runs in its own process
// group so that it outlives a crashed thaw and keeps serving warm traffic; a
// restarted thaw adopts it (see StartOrAdoptEnvoy) instead of starting a
// second one.
type EnvoyProcess struct {
	Pid       int
	AdminPort int
	// LogPath is Envoy's log file (in the state dir).
	LogPath string
	adopted bool
	done    chan struct{}
	// exitErr is cmd.Wait's error, set before done is closed (nil for an
	// adopted Envoy).
	exitErr error
	logger  *zap.Logger
}

// EnvoyProcessOptions configures StartOrAdoptEnvoy.
type EnvoyProcessOptions struct {
	Logger *zap.Logger
	// Binary is the envoy executable.
	Binary string
	// StateDir keeps the bootstrap, Envoy's log and its pid file.
	StateDir string
	// Bootstrap is the rendered bootstrap YAML.
	Bootstrap []byte
	// AdminPort is Envoy's admin port on 127.0.0.1.
	AdminPort int
	// Concurrency is Envoy's worker thread count (0 = Envoy's default).
	Concurrency int
	// FreePorts are checked with CheckPortsFree before a new Envoy starts
	// (not when one is adopted: it holds them): its listener and admin
	// ports, so a taken one is named with its flag at once.
	FreePorts []ListenPort
}

// StartOrAdoptEnvoy adopts the Envoy recorded in StateDir when it is still
// running with the same bootstrap and admin port, else starts a new one. It
// returns once the process is running (not necessarily configured).
func StartOrAdoptEnvoy(opts EnvoyProcessOptions) (*EnvoyProcess, error) {
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("envoy state dir: %w", err)
	}
	bootstrapPath := filepath.Join(opts.StateDir, "envoy-bootstrap.yaml")
	pidPath := filepath.Join(opts.StateDir, "envoy.pid")
	logPath := filepath.Join(opts.StateDir, "envoy.log")
	if pid, ok := adoptable(pidPath, bootstrapPath, opts.Bootstrap, opts.AdminPort); ok {
		e := &EnvoyProcess{Pid: pid, AdminPort: opts.AdminPort, LogPath: logPath, adopted: true, done: make(chan struct{}), logger: opts.Logger}
		go e.watchAdopted()
		opts.Logger.Info("adopted running envoy", zap.Int("pid", pid), zap.Int("adminPort", opts.AdminPort))
		return e, nil
	}
	if err := CheckPortsFree(opts.FreePorts...); err != nil {
		return nil, err
	}
	if err := os.WriteFile(bootstrapPath, opts.Bootstrap, 0o600); err != nil {
		return nil, fmt.Errorf("write envoy bootstrap: %w", err)
	}
	// --drain-strategy immediate: once DrainListeners starts the drain
	// sequence every connection is closed after its current request
	// (gradual would spread that over the 600 s drain time).
	args := []string{"-c", bootstrapPath, "--disable-hot-restart", "--log-path", logPath, "--drain-strategy", "immediate",
		"--config-yaml", fmt.Sprintf(`{"admin":{"address":{"socket_address":{"address":"127.0.0.1","port_value":%d}}}}`, opts.AdminPort)}
	if opts.Concurrency > 0 {
		args = append(args, "--concurrency", strconv.Itoa(opts.Concurrency))
	}
	cmd := exec.Command(opts.Binary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start envoy %s: %w", opts.Binary, err)
	}
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("write envoy pid file: %w", err)
	}
	e := &EnvoyProcess{Pid: cmd.Process.Pid, AdminPort: opts.AdminPort, LogPath: logPath, done: make(chan struct{}), logger: opts.Logger}
	go forwardEnvoyLog(opts.Logger, stderr)
	go func() {
		err := cmd.Wait()
		opts.Logger.Info("envoy exited", zap.Int("pid", e.Pid), zap.Error(err))
		e.exitErr = err
		close(e.done)
	}()
	opts.Logger.Info("started envoy", zap.Int("pid", e.Pid), zap.String("log", logPath), zap.String("bootstrap", bootstrapPath))
	return e, nil
}

// adoptable reports whether pidPath names a live Envoy started with the same
// bootstrap content and admin port.
func adoptable(pidPath, bootstrapPath string, bootstrap []byte, adminPort int) (int, bool) {
	b, err := os.ReadFile(pidPath)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(bootstrapPath)) ||
		!bytes.Contains(cmdline, []byte(fmt.Sprintf(`"port_value":%d`, adminPort))) {
		return 0, false
	}
	old, err := os.ReadFile(bootstrapPath)
	if err != nil || !bytes.Equal(old, bootstrap) {
		return 0, false
	}
	return pid, true
}

// watchAdopted polls an adopted (non-child) Envoy until it exits.
func (e *EnvoyProcess) watchAdopted() {
	for syscall.Kill(e.Pid, 0) == nil {
		time.Sleep(500 * time.Millisecond)
	}
	e.logger.Info("adopted envoy exited", zap.Int("pid", e.Pid))
	close(e.done)
}

// Done is closed when Envoy has exited.
func (e *EnvoyProcess) Done() <-chan struct{} { return e.done }

// WaitLive polls Envoy's admin /ready until it answers LIVE or ctx ends.
func (e *EnvoyProcess) WaitLive(ctx context.Context) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/ready", e.AdminPort)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && bytes.Contains(body, []byte("LIVE")) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("envoy admin %s: %w", url, ctx.Err())
		case <-e.done:
			return errors.New("envoy exited before becoming ready")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM, waits up to timeout, then SIGKILL.
func (e *EnvoyProcess) Stop(timeout time.Duration) {
	_ = syscall.Kill(e.Pid, syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(timeout):
		_ = syscall.Kill(e.Pid, syscall.SIGKILL)
		<-e.done
	}
}

// forwardEnvoyLog copies Envoy's stderr lines of warning level and above to
// thaw's log (the full log is in the state dir).
func forwardEnvoyLog(logger *zap.Logger, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "[critical]"), strings.Contains(line, "[error]"):
			logger.Error("envoy", zap.String("line", line))
		case strings.Contains(line, "[warning]"):
			logger.Warn("envoy", zap.String("line", line))
		}
	}
}
