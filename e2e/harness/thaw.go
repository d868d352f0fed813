package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ThawBinary returns $THAW_BIN or bin/thaw (built by `make build`); it fails
// the test when neither exists.
func ThawBinary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("THAW_BIN")
	if bin == "" {
		bin = filepath.Join(RepoRoot(), "bin", "thaw")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("thaw binary %s not found (%v): run `make build` or set THAW_BIN", bin, err)
	}
	return bin
}

// ActivatorEnv names the environment variable that, when set (extproc or
// module), adds --activator=<value> to every `thaw local` a test starts
// without an --activator flag of its own: the whole TestLocal* suite runs
// on the activator module with THAW_E2E_ACTIVATOR=module (docs/activator.md).
const ActivatorEnv = "THAW_E2E_ACTIVATOR"

// ThawOptions configures StartThaw.
type ThawOptions struct {
	// Config is the local platform's YAML (written to a temp file, -f).
	Config string
	// ConfigPath, when set, is used instead of Config (a restarted thaw
	// must see the same file: working directories default to its folder).
	ConfigPath string
	// Args are extra flags for `thaw local`.
	Args []string
	// Ports to use; 0 picks free ones.
	HTTPPort, GRPCPort, AdminPort, EnvoyAdminPort int
	// StateDir is thaw's --state-dir (Envoy's files, the local platform's
	// instances); empty means a new temp dir. Reuse one to restart thaw.
	StateDir string
	// NoWaitReady returns right after start.
	NoWaitReady bool
}

// Thaw is a running `thaw local` process (which runs its own Envoy).
type Thaw struct {
	// HTTPURL is Envoy's data-plane listener, "http://127.0.0.1:<port>".
	HTTPURL        string
	HTTPPort       int
	GRPCPort       int
	AdminPort      int
	EnvoyAdminPort int
	StateDir       string
	AdminURL       string
	EnvoyAdminURL  string
	GRPCAddress    string
	LogPath        string
	ConfigPath     string
	cmd            *exec.Cmd
	done           chan struct{}
	exitErr        error
}

// StartThaw runs `thaw local -f <config>` on free loopback ports, waits up to
// 60 s for its admin /readyz (Envoy ACKed the first snapshot), and stops it
// in t.Cleanup. The log is printed when the test fails.
func StartThaw(t testing.TB, opts ThawOptions) *Thaw {
	t.Helper()
	dir := t.TempDir()
	cfg := opts.ConfigPath
	if cfg == "" {
		cfg = filepath.Join(dir, "thaw.yaml")
		if err := os.WriteFile(cfg, []byte(opts.Config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Ports left 0 are picked here; thaw and its Envoy bind them a moment
	// later. When another process took one in between (the log says
	// "address already in use"), thaw is started again on fresh ports.
	for attempt := 1; ; attempt++ {
		th := launchThaw(t, opts, dir, cfg)
		if opts.NoWaitReady {
			return th
		}
		err := th.WaitReady(60 * time.Second)
		if err == nil {
			return th
		}
		picked := opts.HTTPPort == 0 && opts.GRPCPort == 0 && opts.AdminPort == 0 && opts.EnvoyAdminPort == 0
		if picked && attempt < bindAttempts && strings.Contains(strings.ToLower(tail(th.LogPath, 200)), "address already in use") {
			t.Logf("thaw: a port was taken before it was bound; starting again on fresh ports")
			th.stopQuietly()
			killLeftoverEnvoy(t, th.StateDir)
			continue
		}
		t.Fatalf("thaw not ready: %v\n%s", err, tail(th.LogPath, 60))
	}
}

// launchThaw starts one thaw (ports left 0 in opts picked now) and
// registers its cleanup; it does not wait for readiness.
func launchThaw(t testing.TB, opts ThawOptions, dir, cfg string) *Thaw {
	t.Helper()
	pick := func(p int) int {
		if p == 0 {
			return PickPort(t)
		}
		return p
	}
	opts.HTTPPort, opts.GRPCPort = pick(opts.HTTPPort), pick(opts.GRPCPort)
	opts.AdminPort, opts.EnvoyAdminPort = pick(opts.AdminPort), pick(opts.EnvoyAdminPort)
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(dir, "state")
	}
	// A previous attempt's log is kept beside the new one.
	if _, err := os.Stat(filepath.Join(dir, "thaw.log")); err == nil {
		_ = os.Rename(filepath.Join(dir, "thaw.log"), filepath.Join(dir, fmt.Sprintf("thaw-%d.log", time.Now().UnixNano())))
	}
	th := &Thaw{
		HTTPURL:        fmt.Sprintf("http://127.0.0.1:%d", opts.HTTPPort),
		HTTPPort:       opts.HTTPPort,
		GRPCPort:       opts.GRPCPort,
		AdminPort:      opts.AdminPort,
		EnvoyAdminPort: opts.EnvoyAdminPort,
		StateDir:       opts.StateDir,
		AdminURL:       fmt.Sprintf("http://127.0.0.1:%d", opts.AdminPort),
		EnvoyAdminURL:  fmt.Sprintf("http://127.0.0.1:%d", opts.EnvoyAdminPort),
		GRPCAddress:    fmt.Sprintf("127.0.0.1:%d", opts.GRPCPort),
		LogPath:        filepath.Join(dir, "thaw.log"),
		ConfigPath:     cfg,
		done:           make(chan struct{}),
	}
	args := append([]string{"local", "-f", cfg,
		"--http-port", strconv.Itoa(opts.HTTPPort),
		"--grpc-address", th.GRPCAddress,
		"--admin-address", fmt.Sprintf("127.0.0.1:%d", opts.AdminPort),
		"--envoy-admin-port", strconv.Itoa(opts.EnvoyAdminPort),
		"--envoy", EnvoyBinary(t),
		"--state-dir", opts.StateDir,
	}, opts.Args...)
	if a := os.Getenv(ActivatorEnv); a != "" && !slices.ContainsFunc(opts.Args, func(s string) bool { return strings.HasPrefix(s, "--activator=") }) {
		args = append(args, "--activator="+a)
	}
	th.cmd = exec.Command(ThawBinary(t), args...)
	th.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(th.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	th.cmd.Stdout, th.cmd.Stderr = logf, logf
	if err := th.cmd.Start(); err != nil {
		t.Fatalf("start thaw: %v", err)
	}
	go func() { th.exitErr = th.cmd.Wait(); logf.Close(); close(th.done) }()
	t.Cleanup(func() {
		th.Stop(t)
		killLeftoverEnvoy(t, opts.StateDir)
		if t.Failed() {
			t.Logf("thaw log tail (%s):\n%s", th.LogPath, tail(th.LogPath, 80))
		}
	})
	return th
}

// stopQuietly stops a thaw that failed to start (SIGTERM, then its process
// group after 30 s) without judging its exit.
func (th *Thaw) stopQuietly() {
	_ = th.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-th.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-th.cmd.Process.Pid, syscall.SIGKILL)
		<-th.done
	}
}

// WaitReady polls admin /readyz until 200, the process exits, or timeout.
func (th *Thaw) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get(th.AdminURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-th.done:
			return fmt.Errorf("thaw exited: %v", th.exitErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after %s", timeout)
}

// Pid returns thaw's process id.
func (th *Thaw) Pid() int { return th.cmd.Process.Pid }

// Signal sends sig to thaw (not to its process group).
func (th *Thaw) Signal(sig os.Signal) error { return th.cmd.Process.Signal(sig) }

// Exited returns a channel closed when thaw has exited.
func (th *Thaw) Exited() <-chan struct{} { return th.done }

// ExitErr returns the process exit error after Exited is closed.
func (th *Thaw) ExitErr() error { return th.exitErr }

// Stop sends SIGTERM and waits up to 30 s, then kills thaw's process group.
// It reports an error when thaw did not exit 0 on SIGTERM.
func (th *Thaw) Stop(t testing.TB) {
	select {
	case <-th.done:
		return
	default:
	}
	_ = th.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-th.done:
		if th.exitErr != nil {
			t.Errorf("thaw exited with %v after SIGTERM, want 0", th.exitErr)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("thaw did not exit within 30s of SIGTERM; killing its process group")
		_ = syscall.Kill(-th.cmd.Process.Pid, syscall.SIGKILL)
		<-th.done
	}
}

// Status fetches the admin /status rows as generic maps keyed by revision.
func (th *Thaw) Status(ctx context.Context) (map[string]map[string]any, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, th.AdminURL+"/status", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rows []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&rows); err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for _, r := range rows {
		out[fmt.Sprint(r["revision"])] = r
	}
	return out, nil
}

// Log returns thaw's whole log so far.
func (th *Thaw) Log() string {
	b, _ := os.ReadFile(th.LogPath)
	return string(b)
}

// Kill sends SIGKILL to thaw alone (not its process group): Envoy and the
// backend processes, each in its own process group, keep running, as after
// a crash.
func (th *Thaw) Kill() {
	_ = th.cmd.Process.Kill()
	<-th.done
}

// killLeftoverEnvoy stops an Envoy a crashed thaw left in stateDir (by the
// pid thaw recorded), so a failed test does not leak it.
func killLeftoverEnvoy(t testing.TB, stateDir string) {
	b, err := os.ReadFile(filepath.Join(stateDir, "envoy.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), stateDir) {
		return
	}
	t.Logf("stopping leftover envoy pid %d", pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
