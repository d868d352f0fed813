package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// pickPort returns a free TCP port on 127.0.0.1, chosen as e2e chooses
// them (harness.PickFreePort: below the kernel's ephemeral range).
func pickPort() (int, error) { return harness.PickFreePort() }

func pickPorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := pickPort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

// process is a child started through the e2e harness
// (harness.LaunchProcess: its own process group, killed if the bench
// dies, output in a log file).
type process struct {
	*harness.Process
	name string
}

func startProcess(name, logPath string, bin string, args ...string) (*process, error) {
	return startProcessEnv(name, logPath, nil, bin, args...)
}

// startProcessEnv is startProcess with env added to the scenario's own
// environment. The log goes to logPath.
func startProcessEnv(name, logPath string, env []string, bin string, args ...string) (*process, error) {
	p, err := harness.LaunchProcess(harness.ProcessConfig{Name: strings.TrimSuffix(filepath.Base(logPath), ".log"),
		Path: bin, Args: args, Env: env, LogDir: filepath.Dir(logPath)})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &process{Process: p, name: name}, nil
}

// stop sends SIGTERM to the process, waits up to grace, then kills its
// process group (which only holds what this process started).
func (p *process) stop(grace time.Duration) error {
	if err := p.StopGroup(grace); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	return nil
}

// exited reports the exit error once the process has ended.
func (p *process) exited() (bool, error) {
	select {
	case <-p.Exited():
		return true, p.ExitErr()
	default:
		return false, nil
	}
}

func (p *process) logTail(n int) string { return p.LogTail(n) }

// thaw is a running `thaw local` (which runs its own Envoy and backends).
type thaw struct {
	*process
	httpURL       string
	adminURL      string
	envoyAdminURL string
	grpcPort      int
	grpcAddr      string
	// launched is what harness.LaunchThaw ran (relaunchThaw starts the
	// same thaw again).
	launched *harness.Thaw
	opts     harness.ThawOptions
}

// startThaw writes config into dir and runs `thaw local` through the e2e
// harness (harness.LaunchThaw) on free loopback ports; it returns once
// thaw's /readyz answers (Envoy ACKed the first configuration), within
// 60 s (startThawWait: any bound). The harness starts thaw again on fresh
// ports when one was taken before thaw or its Envoy bound it.
func startThaw(ctx context.Context, env *env, dir, config string) (*thaw, error) {
	return startThawArgs(ctx, env, dir, config)
}

// startThawArgs is startThaw with extra arguments for thaw local.
func startThawArgs(ctx context.Context, env *env, dir, config string, extra ...string) (*thaw, error) {
	return startThawWait(ctx, env, dir, config, 60*time.Second, extra...)
}

// startThawWait is startThawArgs waiting up to ready for thaw's /readyz.
// thaw runs the scenario's thaw and Envoy binaries, with Envoy's worker
// count, extra and then -thaw-args as flags.
func startThawWait(ctx context.Context, env *env, dir, config string, ready time.Duration, extra ...string) (*thaw, error) {
	args := append([]string{"--envoy-concurrency", strconv.Itoa(env.envoyWorkers)}, extra...)
	args = append(args, env.thawArgs...)
	// thaw local's default activator is the module (issue 31); the
	// scenarios measure the ext_proc path unless they ask for the module
	// (paths_module.go) or another --activator is given.
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--activator") }) {
		args = append(args, "--activator=extproc")
	}
	return launchThaw(ctx, dir, harness.ThawOptions{
		Config:       config,
		Args:         args,
		Binary:       env.thawBin,
		EnvoyBinary:  env.envoyBin,
		ReadyTimeout: ready,
		Logf:         env.logf,
	})
}

// launchThaw runs harness.LaunchThaw(ctx, dir, opts).
func launchThaw(ctx context.Context, dir string, opts harness.ThawOptions) (*thaw, error) {
	h, err := harness.LaunchThaw(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	return &thaw{process: &process{Process: h.Process(), name: "thaw"},
		httpURL: h.HTTPURL, adminURL: h.AdminURL, envoyAdminURL: h.EnvoyAdminURL,
		grpcPort: h.GRPCPort, grpcAddr: h.GRPCAddress, launched: h, opts: opts}, nil
}

// relaunchThaw starts old's thaw again through harness.LaunchThaw with
// its options, ports, configuration file and state directory (so it
// adopts old's Envoy and backends), its log in dir, and waits until it
// is ready.
func relaunchThaw(ctx context.Context, old *thaw, dir string) (*thaw, error) {
	o, h := old.opts, old.launched
	o.Config, o.ConfigPath, o.StateDir = "", h.ConfigPath, h.StateDir
	o.HTTPPort, o.GRPCPort, o.AdminPort, o.EnvoyAdminPort = h.HTTPPort, h.GRPCPort, h.AdminPort, h.EnvoyAdminPort
	return launchThaw(ctx, dir, o)
}

// waitHTTP polls url every 50 ms until it answers 200, p exits or timeout.
func waitHTTP(ctx context.Context, p *process, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if done, err := p.exited(); done {
			return fmt.Errorf("%s exited: %v", p.name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: no 200 within %s", url, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// revStatus is the part of a thaw /status row the scenarios read.
type revStatus struct {
	Revision string `json:"revision"`
	Mode     string `json:"mode"`
	Desired  int    `json:"desired"`
	Ready    int    `json:"ready"`
	Held     int    `json:"held"`
	InFlight int    `json:"inFlight"`
}

// status fetches thaw's /status keyed by revision ("local/<name>").
func (th *thaw) status(ctx context.Context, c *http.Client) (map[string]revStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, th.adminURL+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/status: %s", resp.Status)
	}
	var rows []revStatus
	if err := json.NewDecoder(resp.Body).Decode(&rows); err != nil {
		return nil, fmt.Errorf("/status: %w", err)
	}
	out := make(map[string]revStatus, len(rows))
	for _, r := range rows {
		out[r.Revision] = r
	}
	return out, nil
}

// waitStatus polls the named revisions' /status rows (statusOf) every 100
// ms until cond holds for each, within timeout.
func (th *thaw) waitStatus(ctx context.Context, timeout time.Duration, what string, cond func(revStatus) bool, revs ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second}
	var last map[string]revStatus
	for {
		rows, err := th.statusOf(ctx, c, revs...)
		if err == nil {
			last = rows
			ok := true
			for _, r := range revs {
				if row, found := rows["local/"+r]; !found || !cond(row) {
					ok = false
				}
			}
			if ok {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not reached within %s; last status %v", what, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// workloadStats is the example workload's GET /stats document.
type workloadStats struct {
	Pid       int   `json:"pid"`
	Port      int   `json:"port"`
	Started   int64 `json:"started_unix_nano"`
	Listening int64 `json:"listening_unix_nano"`
	Requests  int64 `json:"requests"`
	// MaxInflight is the most requests the backend had at once.
	MaxInflight int64 `json:"max_inflight"`
}

// fetchStats asks the backend behind host for its /stats through baseURL.
func fetchStats(ctx context.Context, c *http.Client, baseURL, host string) (workloadStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/stats", nil)
	if err != nil {
		return workloadStats{}, err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return workloadStats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return workloadStats{}, fmt.Errorf("%s /stats: %s %q", host, resp.Status, b)
	}
	var s workloadStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, fmt.Errorf("%s /stats: %w", host, err)
	}
	if s.Listening == 0 || s.Started == 0 {
		return s, errors.New(host + " /stats: no start times")
	}
	return s, nil
}

// envoyStats returns the counters and gauges of thaw's Envoy whose names
// match the regex filter (admin /stats).
func (th *thaw) envoyStats(ctx context.Context, filter string) (map[string]int64, error) {
	body, err := fetchBody(ctx, th.envoyAdminURL+"/stats?format=json&filter="+filter)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Stats []struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("envoy /stats: %w", err)
	}
	out := map[string]int64{}
	for _, st := range doc.Stats {
		if n, err := strconv.ParseInt(string(st.Value), 10, 64); err == nil && st.Name != "" && n != 0 {
			out[st.Name] = n
		}
	}
	return out, nil
}
