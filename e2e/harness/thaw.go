package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ThawBinary returns $THAW_BIN or bin/thaw (built by `make build`); it fails
// the test when neither exists.
func ThawBinary(t testing.TB) string {
	t.Helper()
	bin, err := FindThawBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// FindThawBinary is ThawBinary for callers without a test (bench/).
func FindThawBinary() (string, error) {
	bin := os.Getenv("THAW_BIN")
	if bin == "" {
		bin = filepath.Join(RepoRoot(), "bin", "thaw")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("thaw binary %s not found (%v): run `make build` or set THAW_BIN", bin, err)
	}
	return bin, nil
}

// ActivatorEnv names the environment variable that, when set (extproc or
// module), adds --activator=<value> to every `thaw local` a test starts
// without an --activator flag of its own. thaw local's default is the
// module, so THAW_E2E_ACTIVATOR=extproc runs the tests that take the
// default on ext_proc; tests of one path's own contract pin theirs
// (docs/activator.md).
const ActivatorEnv = "THAW_E2E_ACTIVATOR"

// ThawOptions configures StartThaw and LaunchThaw.
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
	// Binary is the thaw executable; empty means FindThawBinary.
	Binary string
	// EnvoyBinary is thaw's --envoy; empty means FindEnvoyBinary.
	EnvoyBinary string
	// ReadyTimeout bounds the wait for admin /readyz (default 60 s).
	ReadyTimeout time.Duration
	// Logf, when set, receives the harness's notes (a start retried on
	// fresh ports).
	Logf func(format string, args ...any)
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
	proc           *Process
}

// StartThaw runs `thaw local -f <config>` on free loopback ports, waits up to
// 60 s for its admin /readyz (Envoy ACKed the first snapshot), and stops it
// in t.Cleanup, with the Envoy and backends a killed thaw left in its state
// directory. The log is printed when the test fails. With ActivatorEnv
// set, it adds --activator unless opts.Args has one.
func StartThaw(t testing.TB, opts ThawOptions) *Thaw {
	t.Helper()
	if opts.Binary == "" {
		opts.Binary = ThawBinary(t)
	}
	if opts.EnvoyBinary == "" {
		opts.EnvoyBinary = EnvoyBinary(t)
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	if a := os.Getenv(ActivatorEnv); a != "" && !slices.ContainsFunc(opts.Args, func(s string) bool { return strings.HasPrefix(s, "--activator=") }) {
		opts.Args = append(slices.Clip(opts.Args), "--activator="+a)
	}
	th, err := LaunchThaw(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		th.Stop(t)
		killLeftoverEnvoy(t.Logf, th.StateDir)
		stopLeftoverBackends(t.Logf, th.StateDir)
		if t.Failed() {
			t.Logf("thaw log tail (%s):\n%s", th.LogPath, tail(th.LogPath, 80))
		}
	})
	return th
}

// Pid returns thaw's process id.
func (th *Thaw) Pid() int { return th.proc.Pid() }

// Process returns thaw's process (its log, arguments, StopGroup).
func (th *Thaw) Process() *Process { return th.proc }

// Signal sends sig to thaw (not to its process group).
func (th *Thaw) Signal(sig os.Signal) error { return th.proc.cmd.Process.Signal(sig) }

// Exited returns a channel closed when thaw has exited.
func (th *Thaw) Exited() <-chan struct{} { return th.proc.Exited() }

// ExitErr returns the process exit error after Exited is closed.
func (th *Thaw) ExitErr() error { return th.proc.ExitErr() }

// Stop sends SIGTERM and waits up to 30 s, then kills thaw's process group.
// It reports an error when thaw did not exit 0 on SIGTERM.
func (th *Thaw) Stop(t testing.TB) {
	select {
	case <-th.Exited():
		return
	default:
	}
	_ = th.Signal(syscall.SIGTERM)
	select {
	case <-th.Exited():
		if err := th.ExitErr(); err != nil {
			t.Errorf("thaw exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("thaw did not exit within 30s of SIGTERM; killing its process group")
		_ = syscall.Kill(-th.Pid(), syscall.SIGKILL)
		<-th.Exited()
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
// a crash. StartThaw's cleanup stops those a restarted thaw did not adopt.
func (th *Thaw) Kill() {
	_ = th.proc.Kill()
	<-th.Exited()
}
