package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// defaultThawReady is how long LaunchThaw waits for /readyz by default.
const defaultThawReady = 60 * time.Second

// LaunchThaw is StartThaw for callers without a test (bench/): it runs
// `thaw local -f <config>` with its files in dir (thaw.yaml, thaw.log,
// state/), on free loopback ports for those left 0, and waits up to
// opts.ReadyTimeout (default 60 s) or until ctx ends for admin /readyz
// (Envoy ACKed the first snapshot) unless opts.NoWaitReady. Ports are
// picked here and bound by thaw and its Envoy a moment later; when another
// process took one in between (the log says "address already in use"),
// thaw is started again on fresh ports, at most 4 times in all. On error
// thaw is stopped and the error carries its log's tail; otherwise the
// caller stops it (Stop, or Process().StopGroup).
func LaunchThaw(ctx context.Context, dir string, opts ThawOptions) (*Thaw, error) {
	if opts.Binary == "" {
		bin, err := FindThawBinary()
		if err != nil {
			return nil, err
		}
		opts.Binary = bin
	}
	if opts.EnvoyBinary == "" {
		bin, err := FindEnvoyBinary()
		if err != nil {
			return nil, err
		}
		opts.EnvoyBinary = bin
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = defaultThawReady
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cfg := opts.ConfigPath
	if cfg == "" {
		cfg = filepath.Join(dir, "thaw.yaml")
		if err := os.WriteFile(cfg, []byte(opts.Config), 0o600); err != nil {
			return nil, err
		}
	}
	picked := opts.HTTPPort == 0 && opts.GRPCPort == 0 && opts.AdminPort == 0 && opts.EnvoyAdminPort == 0
	for attempt := 1; ; attempt++ {
		th, err := launchThawOnce(opts, dir, cfg)
		if err != nil {
			return nil, err
		}
		if opts.NoWaitReady {
			return th, nil
		}
		err = th.waitReady(ctx, opts.ReadyTimeout)
		if err == nil {
			return th, nil
		}
		th.stopQuietly()
		killLeftoverEnvoy(logf, th.StateDir)
		stopLeftoverBackends(logf, th.StateDir)
		if picked && attempt < bindAttempts && strings.Contains(strings.ToLower(tail(th.LogPath, 200)), "address already in use") {
			logf("thaw: a port was taken before thaw or its Envoy bound it; starting again on fresh ports")
			continue
		}
		return nil, fmt.Errorf("thaw not ready: %w\n%s", err, tail(th.LogPath, 60))
	}
}

// launchThawOnce starts one thaw (ports left 0 in opts picked now); it does
// not wait for readiness.
func launchThawOnce(opts ThawOptions, dir, cfg string) (*Thaw, error) {
	for _, p := range []*int{&opts.HTTPPort, &opts.GRPCPort, &opts.AdminPort, &opts.EnvoyAdminPort} {
		if *p != 0 {
			continue
		}
		port, err := PickFreePort()
		if err != nil {
			return nil, err
		}
		*p = port
	}
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
	}
	args := append([]string{"local", "-f", cfg,
		"--http-port", strconv.Itoa(opts.HTTPPort),
		"--grpc-address", th.GRPCAddress,
		"--admin-address", fmt.Sprintf("127.0.0.1:%d", opts.AdminPort),
		"--envoy-admin-port", strconv.Itoa(opts.EnvoyAdminPort),
		"--envoy", opts.EnvoyBinary,
		"--state-dir", opts.StateDir,
	}, opts.Args...)
	p, err := LaunchProcess(ProcessConfig{Name: "thaw", Path: opts.Binary, Args: args, LogDir: dir})
	if err != nil {
		return nil, fmt.Errorf("start thaw: %w", err)
	}
	th.proc = p
	return th, nil
}

// stopQuietly stops a thaw that failed to start (SIGTERM, then its process
// group after 30 s) without judging its exit.
func (th *Thaw) stopQuietly() { _ = th.proc.StopGroup(30 * time.Second) }

// WaitReady polls admin /readyz until 200, the process exits, or timeout.
func (th *Thaw) WaitReady(timeout time.Duration) error {
	return th.waitReady(context.Background(), timeout)
}

// waitReady polls admin /readyz every 50 ms until it answers 200, thaw
// exits, timeout passes or ctx ends.
func (th *Thaw) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, th.AdminURL+"/readyz", nil)
		if resp, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-th.Exited():
			return fmt.Errorf("thaw exited: %v", th.ExitErr())
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s", timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// killLeftoverEnvoy stops an Envoy a crashed thaw left in stateDir (by the
// pid thaw recorded), so a failed test does not leak it.
func killLeftoverEnvoy(logf func(string, ...any), stateDir string) {
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
	logf("stopping leftover envoy pid %d", pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
