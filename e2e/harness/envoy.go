package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RepoRoot returns the repository's top directory (where go.mod is).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// EnvoyBinary returns $ENVOY_BIN, or the binary `make tools` installs
// (.tools/bin/envoy). It fails the test when neither exists.
func EnvoyBinary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("ENVOY_BIN")
	if bin == "" {
		bin = filepath.Join(RepoRoot(), ".tools", "bin", "envoy")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("envoy binary %s not found (%v): run `make tools` or set ENVOY_BIN", bin, err)
	}
	return bin
}

// PickPort returns a free TCP port on 127.0.0.1 (FreePort's older name,
// kept for the tests that use it).
func PickPort(t testing.TB) int {
	t.Helper()
	return FreePort(t)
}

// EnvoyOptions configures StartEnvoy.
type EnvoyOptions struct {
	// Bootstrap is the Envoy bootstrap as YAML. Its admin block, if any, is
	// replaced: the harness binds admin to 127.0.0.1 on a free port.
	Bootstrap string
	// LogLevel is Envoy's --log-level (default "info").
	LogLevel string
	// ComponentLogLevel is Envoy's --component-log-level, e.g. "ext_proc:debug".
	ComponentLogLevel string
	// Concurrency is Envoy's --concurrency (worker threads, default 2).
	Concurrency int
	// SkipWaitReady returns right after start instead of waiting for /ready.
	SkipWaitReady bool
}

// Envoy is a running Envoy process started by StartEnvoy.
type Envoy struct {
	AdminPort int
	// AdminURL is "http://127.0.0.1:<admin port>".
	AdminURL string
	LogPath  string
	cmd      *exec.Cmd
	done     chan struct{}
	t        testing.TB
}

// StartEnvoy starts Envoy with opts.Bootstrap, waits (up to 30 s) until its
// admin /ready answers 200 unless SkipWaitReady, and stops it in t.Cleanup.
// When the test fails, the tail of Envoy's log is printed.
func StartEnvoy(t testing.TB, opts EnvoyOptions) *Envoy {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(cfg, []byte(opts.Bootstrap), 0o600); err != nil {
		t.Fatal(err)
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = 2
	}
	e := &Envoy{LogPath: filepath.Join(dir, "envoy.log"), done: make(chan struct{}), t: t}
	// Envoy binds admin to a port of its own choosing and writes the
	// address to a file: no free-port race with other loopback traffic.
	adminFile := filepath.Join(dir, "admin-address")
	args := []string{"-c", cfg,
		"--config-yaml", `{"admin":{"address":{"socket_address":{"address":"127.0.0.1","port_value":0}}}}`,
		"--admin-address-path", adminFile,
		"--disable-hot-restart", "--log-level", opts.LogLevel, "--log-path", e.LogPath,
		"--concurrency", strconv.Itoa(opts.Concurrency)}
	if opts.ComponentLogLevel != "" {
		args = append(args, "--component-log-level", opts.ComponentLogLevel)
	}
	e.cmd = exec.Command(EnvoyBinary(t), args...)
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(filepath.Join(dir, "envoy.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	e.cmd.Stdout, e.cmd.Stderr = out, out
	if err := e.cmd.Start(); err != nil {
		t.Fatalf("start envoy: %v", err)
	}
	go func() { _ = e.cmd.Wait(); out.Close(); close(e.done) }()
	t.Cleanup(func() {
		e.Stop()
		if t.Failed() {
			t.Logf("envoy log tail (%s):\n%s\n%s", e.LogPath, tail(e.LogPath, 60), tail(out.Name(), 20))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	port, err := ReadAdminAddress(ctx, adminFile, e.done)
	if err != nil {
		t.Fatalf("envoy admin address: %v\n%s\n%s", err, tail(e.LogPath, 40), tail(out.Name(), 20))
	}
	e.AdminPort, e.AdminURL = port, fmt.Sprintf("http://127.0.0.1:%d", port)
	if !opts.SkipWaitReady {
		if err := e.WaitReady(ctx); err != nil {
			t.Fatalf("envoy not ready: %v\n%s\n%s", err, tail(e.LogPath, 40), tail(out.Name(), 20))
		}
	}
	return e
}

// ReadAdminAddress waits (every 20 ms) until Envoy has written its admin
// address ("127.0.0.1:<port>") to path (--admin-address-path) and returns
// the port; it fails when exited is closed first or ctx ends.
func ReadAdminAddress(ctx context.Context, path string, exited <-chan struct{}) (int, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			addr := strings.TrimSpace(string(b))
			port, err := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
			if err != nil {
				return 0, fmt.Errorf("admin address %q: %w", addr, err)
			}
			return port, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("no admin address in %s: %w", path, ctx.Err())
		case <-exited:
			return 0, fmt.Errorf("envoy exited before writing %s", path)
		case <-tick.C:
		}
	}
}

// Pid returns the Envoy process id.
func (e *Envoy) Pid() int { return e.cmd.Process.Pid }

// Exited returns a channel closed when the process has exited.
func (e *Envoy) Exited() <-chan struct{} { return e.done }

// WaitReady polls admin /ready until it answers 200 LIVE, the process exits,
// or ctx ends.
func (e *Envoy) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if body, code, err := e.Admin(ctx, "/ready"); err == nil && code == 200 && strings.Contains(body, "LIVE") {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.done:
			return fmt.Errorf("envoy exited: %v", e.cmd.ProcessState)
		case <-tick.C:
		}
	}
}

// Admin GETs path from the admin endpoint and returns body and status code.
func (e *Envoy) Admin(ctx context.Context, path string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.AdminURL+path, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode, err
}

// Stats returns the admin /stats values whose names match the regex filter
// (counters and gauges only; histograms are left out).
func (e *Envoy) Stats(ctx context.Context, filter string) (map[string]int64, error) {
	body, code, err := e.Admin(ctx, "/stats?format=json&filter="+filter)
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("admin /stats: status %d: %s", code, body)
	}
	var doc struct {
		Stats []struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		return nil, fmt.Errorf("admin /stats: %w", err)
	}
	out := map[string]int64{}
	for _, s := range doc.Stats {
		if s.Name == "" || len(s.Value) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(string(s.Value), 10, 64); err == nil {
			out[s.Name] = n
		}
	}
	return out, nil
}

// Stat returns one counter or gauge, or 0 when Envoy has not written it.
func (e *Envoy) Stat(ctx context.Context, name string) (int64, error) {
	m, err := e.Stats(ctx, "^"+regexpQuote(name)+"$")
	if err != nil {
		return 0, err
	}
	return m[name], nil
}

// Stop sends SIGTERM and, after 5 s, SIGKILL; it returns when Envoy exited.
// Safe to call more than once.
func (e *Envoy) Stop() {
	select {
	case <-e.done:
		return
	default:
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.done
	}
}

// Log returns Envoy's whole log so far.
func (e *Envoy) Log() string {
	b, _ := os.ReadFile(e.LogPath)
	return string(b)
}

func regexpQuote(s string) string {
	r := strings.NewReplacer(".", `\.`, "+", `\+`, "*", `\*`, "?", `\?`, "(", `\(`, ")", `\)`, "[", `\[`, "]", `\]`, "|", `\|`, "^", `\^`, "$", `\$`)
	return r.Replace(s)
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
