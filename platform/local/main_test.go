package local

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/thaw-dev/thaw/revision"
)

// workloadBin is examples/workload built once for the whole package.
var workloadBin string

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		crashChild(spec) // never returns: killed by the test that started it
	}
	if fuzzOnly() {
		os.Exit(m.Run()) // FuzzParse needs no workload binary
	}
	dir, err := os.MkdirTemp("", "thaw-local-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workloadBin = filepath.Join(dir, "workload")
	build := exec.Command("go", "build", "-o", workloadBin, "../../examples/workload")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build workload:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fuzzOnly reports whether this run only fuzzes (`go test -run '^$' -fuzz
// X`, or a fuzzing worker process), so no test needs the workload.
func fuzzOnly() bool {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return true
	}
	fz, run := flag.Lookup("test.fuzz"), flag.Lookup("test.run")
	return fz != nil && fz.Value.String() != "" && run != nil && run.Value.String() == "^$"
}

// waitLimit bounds every wait in these tests.
const waitLimit = 30 * time.Second

type harness struct {
	t    *testing.T
	reg  *revision.Registry
	p    *Platform
	logs *observer.ObservedLogs
	// synced is the first snapshot seen with Synced set.
	synced *revision.Snapshot
	// stop cancels Run and waits (bounded) for it to return; idempotent.
	stop func()
}

// startPlatform runs a Platform for revs until the test ends; cleanup waits
// (bounded) for Run to return, so every process is gone after the test.
func startPlatform(t *testing.T, cfg *Config, tweak func(*Options)) *harness {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	logger := zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	reg := revision.NewRegistry(revision.RegistryOptions{Logger: logger})
	opts := Options{Logger: logger, Registry: reg, Config: cfg, DrainPeriod: 50 * time.Millisecond,
		RestartBackoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond}
	if tweak != nil {
		tweak(&opts)
	}
	p := New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitLimit):
			t.Errorf("Run did not return within %s of cancel", waitLimit)
		}
	})
	t.Cleanup(stop)
	h := &harness{t: t, reg: reg, p: p, logs: logs, stop: stop}
	h.synced = h.waitSnapshot("synced", func(s *revision.Snapshot) bool { return s.Synced })
	return h
}

func (h *harness) waitSnapshot(what string, cond func(*revision.Snapshot) bool) *revision.Snapshot {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	s, err := h.reg.WaitFor(ctx, cond)
	if err != nil {
		h.t.Fatalf("waiting for %s: %v", what, err)
	}
	return s
}

// waitBackends waits until key has exactly n ready backends and returns them.
func (h *harness) waitBackends(key revision.Key, n int) []revision.Backend {
	h.t.Helper()
	s := h.waitSnapshot(fmt.Sprintf("%d backends of %s", n, key), func(s *revision.Snapshot) bool {
		r := s.Get(key)
		return r != nil && revision.ReadyCount(r.Backends) == n
	})
	return s.Get(key).ReadyBackends()
}

func (h *harness) setScale(key revision.Key, n int32) {
	h.t.Helper()
	if err := h.p.SetScale(context.Background(), key, n); err != nil {
		h.t.Fatalf("SetScale(%s, %d): %v", key, n, err)
	}
}

// waitLogs waits until at least n entries with message msg were logged and
// returns them.
func (h *harness) waitLogs(msg string, n int) []observer.LoggedEntry {
	h.t.Helper()
	return h.waitLogsWhere(msg, func(observer.LoggedEntry) bool { return true }, n)
}

// waitLogsWhere is waitLogs counting only the entries keep accepts.
func (h *harness) waitLogsWhere(msg string, keep func(observer.LoggedEntry) bool, n int) []observer.LoggedEntry {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		got := h.logs.FilterMessage(msg).Filter(keep).All()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("waiting for %d log entries %q: got %d", n, msg, len(got))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until process pid no longer exists.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after %s", pid, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testClient talks to workload processes directly without keeping
// connections: an idle kept-alive connection would hold a scaled-away
// process in its drain (the platform waits for its connections to close).
var testClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// workloadStats mirrors the workload's GET /stats answer.
type workloadStats struct {
	Pid      int `json:"pid"`
	Port     int `json:"port"`
	Requests int `json:"requests"`
}

func getStats(t *testing.T, b revision.Backend) workloadStats {
	t.Helper()
	resp, err := testClient.Get("http://" + b.HostPort() + "/stats")
	if err != nil {
		t.Fatalf("GET /stats of %s: %v", b.HostPort(), err)
	}
	defer resp.Body.Close()
	var st workloadStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("decode /stats of %s: %v", b.HostPort(), err)
	}
	return st
}

// recordingDrainer records, at each WaitIdle call, whether the backend was
// still in the registry and whether its process still answered, then blocks
// until released.
type recordingDrainer struct {
	reg     *revision.Registry
	release chan struct{}

	mu    sync.Mutex
	calls []drainCall
}

type drainCall struct {
	key        revision.Key
	backend    revision.Backend
	inRegistry bool
	alive      error // nil when the process answered /healthz
}

func (d *recordingDrainer) WaitIdle(ctx context.Context, key revision.Key, b revision.Backend) error {
	call := drainCall{key: key, backend: b}
	if r := d.reg.Snapshot().Get(key); r != nil {
		for _, x := range r.Backends {
			call.inRegistry = call.inRegistry || x.HostPort() == b.HostPort()
		}
	}
	resp, err := testClient.Get("http://" + b.HostPort() + "/healthz")
	if err == nil {
		resp.Body.Close()
	}
	call.alive = err
	d.mu.Lock()
	d.calls = append(d.calls, call)
	d.mu.Unlock()
	select {
	case <-d.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *recordingDrainer) recorded() []drainCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]drainCall(nil), d.calls...)
}

// workloadRev returns a revision running the example workload.
func workloadRev(t *testing.T, name string, env map[string]string) RevisionConfig {
	t.Helper()
	return workloadRevIn(name, t.TempDir(), env)
}

// workloadRevIn is workloadRev with a given working directory.
func workloadRevIn(name, dir string, env map[string]string) RevisionConfig {
	spec := revision.DefaultSpec()
	spec.Hosts = []string{name + ".localhost"}
	return RevisionConfig{
		Key:         revision.Key{Namespace: DefaultNamespace, Name: name},
		Spec:        spec,
		Command:     []string{workloadBin, "--port", PortPlaceholder},
		Dir:         dir,
		Env:         env,
		Readiness:   Probe{HTTPPath: "/healthz", Period: 50 * time.Millisecond, Timeout: time.Second, FailureThreshold: 3},
		StopTimeout: 5 * time.Second,
	}
}

func configOf(revs ...RevisionConfig) *Config {
	return &Config{Path: "test.yaml", Revisions: revs, Invalid: map[revision.Key]error{}}
}

// syscallKill sends SIGKILL to one of the test's own processes by pid.
func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
