package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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
	bin, err := FindEnvoyBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// FindEnvoyBinary is EnvoyBinary for callers without a test.
func FindEnvoyBinary() (string, error) {
	bin := os.Getenv("ENVOY_BIN")
	if bin == "" {
		bin = filepath.Join(RepoRoot(), ".tools", "bin", "envoy")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("envoy binary %s not found (%v): run `make tools` or set ENVOY_BIN", bin, err)
	}
	return bin, nil
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
	// Binary is the Envoy executable; empty means FindEnvoyBinary.
	Binary string
	// Name prefixes the files LaunchEnvoy writes in its directory
	// (<Name>.yaml, <Name>.log, ...), so several Envoys can share one;
	// empty means the names StartEnvoy has always used (bootstrap.yaml,
	// envoy.log, ...).
	Name string
	// Args are more command-line arguments (for example --service-node,
	// as the fleet's manifests pass it).
	Args []string
}

// Envoy is a running Envoy process started by StartEnvoy or LaunchEnvoy.
type Envoy struct {
	AdminPort int
	// AdminURL is "http://127.0.0.1:<admin port>".
	AdminURL string
	LogPath  string
	proc     *Process
	stdout   string // Envoy's stdout and stderr
}

// StartEnvoy starts Envoy with opts.Bootstrap, waits (up to 30 s) until its
// admin /ready answers 200 unless SkipWaitReady, and stops it in t.Cleanup.
// When the test fails, the tail of Envoy's log is printed.
func StartEnvoy(t testing.TB, opts EnvoyOptions) *Envoy {
	t.Helper()
	if opts.Binary == "" {
		opts.Binary = EnvoyBinary(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := LaunchEnvoy(ctx, t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Stop()
		if t.Failed() {
			t.Logf("envoy log tail (%s):\n%s\n%s", e.LogPath, tail(e.LogPath, 60), tail(e.stdout, 20))
		}
	})
	return e
}

// LaunchEnvoy is StartEnvoy for callers without a test (bench/): it writes
// its files into dir, waits for the admin address and (unless
// SkipWaitReady) /ready until ctx ends, and returns an error with the tail
// of Envoy's log when Envoy does not come up. The caller stops it.
func LaunchEnvoy(ctx context.Context, dir string, opts EnvoyOptions) (*Envoy, error) {
	if opts.LogLevel == "" {
		opts.LogLevel = "info"
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = 2
	}
	if opts.Binary == "" {
		bin, err := FindEnvoyBinary()
		if err != nil {
			return nil, err
		}
		opts.Binary = bin
	}
	files := struct{ bootstrap, log, stdout, admin string }{"bootstrap.yaml", "envoy.log", "envoy.stdout", "admin-address"}
	if n := opts.Name; n != "" {
		files.bootstrap, files.log, files.stdout, files.admin = n+".yaml", n+".log", n+".stdout", n+".admin"
	}
	cfg := filepath.Join(dir, files.bootstrap)
	if err := os.WriteFile(cfg, []byte(opts.Bootstrap), 0o600); err != nil {
		return nil, err
	}
	e := &Envoy{LogPath: filepath.Join(dir, files.log)}
	// Envoy binds admin to a port of its own choosing and writes the
	// address to a file: no free-port race with other loopback traffic.
	adminFile := filepath.Join(dir, files.admin)
	_ = os.Remove(adminFile)
	args := []string{"-c", cfg,
		"--config-yaml", `{"admin":{"address":{"socket_address":{"address":"127.0.0.1","port_value":0}}}}`,
		"--admin-address-path", adminFile,
		"--disable-hot-restart", "--log-level", opts.LogLevel, "--log-path", e.LogPath,
		"--concurrency", strconv.Itoa(opts.Concurrency)}
	if opts.ComponentLogLevel != "" {
		args = append(args, "--component-log-level", opts.ComponentLogLevel)
	}
	args = append(args, opts.Args...)
	// The process's own log file holds Envoy's stdout and stderr.
	name := strings.TrimSuffix(files.stdout, ".stdout") + "-stdout"
	p, err := LaunchProcess(ProcessConfig{Name: name, Path: opts.Binary, Args: args, LogDir: dir})
	if err != nil {
		return nil, fmt.Errorf("start envoy: %w", err)
	}
	e.proc, e.stdout = p, p.LogPath()
	fail := func(what string, err error) (*Envoy, error) {
		e.Stop()
		return nil, fmt.Errorf("%s: %w\n%s\n%s", what, err, tail(e.LogPath, 40), tail(e.stdout, 20))
	}
	port, err := ReadAdminAddress(ctx, adminFile, p.Exited())
	if err != nil {
		return fail("envoy admin address", err)
	}
	e.AdminPort, e.AdminURL = port, fmt.Sprintf("http://127.0.0.1:%d", port)
	if !opts.SkipWaitReady {
		if err := e.WaitReady(ctx); err != nil {
			return fail("envoy not ready", err)
		}
	}
	return e, nil
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
func (e *Envoy) Pid() int { return e.proc.Pid() }

// Process returns the Envoy process (its stdout and stderr log, exit).
func (e *Envoy) Process() *Process { return e.proc }

// Exited returns a channel closed when the process has exited.
func (e *Envoy) Exited() <-chan struct{} { return e.proc.Exited() }

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
		case <-e.proc.Exited():
			return fmt.Errorf("envoy exited: %v", e.proc.ExitErr())
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
	_ = e.proc.Stop(5 * time.Second)
}

// LogTail returns the last n lines of Envoy's log ("" when unreadable).
func (e *Envoy) LogTail(n int) string { return tail(e.LogPath, n) }

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
