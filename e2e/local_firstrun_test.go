//go:build e2e

package e2e

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// exitDeadline is how long a `thaw local` that cannot start is given to
// exit: the test's own bound, not a speed assertion.
const exitDeadline = 10 * time.Second

// TestLocalBusyPortExits: with one of its ports taken by another program,
// `thaw local` exits non-zero within seconds, naming the address and the
// flag that changes it, instead of waiting for Envoy forever.
func TestLocalBusyPortExits(t *testing.T) {
	cfg := localConfig(t, revisionYAML{Name: "busy", Host: "busy.test"})
	for _, tt := range []struct {
		flag string
		set  func(o *harness.ThawOptions, port int)
	}{
		{"--http-port", func(o *harness.ThawOptions, p int) { o.HTTPPort = p }},
		{"--grpc-address", func(o *harness.ThawOptions, p int) { o.GRPCPort = p }},
		{"--admin-address", func(o *harness.ThawOptions, p int) { o.AdminPort = p }},
		{"--envoy-admin-port", func(o *harness.ThawOptions, p int) { o.EnvoyAdminPort = p }},
	} {
		t.Run(strings.TrimPrefix(tt.flag, "--"), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			opts := harness.ThawOptions{Config: cfg, NoWaitReady: true}
			tt.set(&opts, port)
			th := harness.StartThaw(t, opts)
			waitExit(t, th)
			log := th.Log()
			addr := "127.0.0.1:" + strconv.Itoa(port)
			if !strings.Contains(log, addr+" is already in use") || !strings.Contains(log, tt.flag) {
				t.Fatalf("log does not say that %s is in use and name %s:\n%s", addr, tt.flag, lastLines(log, 15))
			}
		})
	}
}

// TestLocalEnvoyExitsAtStart: an Envoy that exits at once ends `thaw
// local` with a non-zero status that says so.
func TestLocalEnvoyExitsAtStart(t *testing.T) {
	cfg := localConfig(t, revisionYAML{Name: "noenvoy", Host: "noenvoy.test"})
	th := harness.StartThaw(t, harness.ThawOptions{Config: cfg, NoWaitReady: true, Args: []string{"--envoy", "/bin/false"}})
	waitExit(t, th)
	if log := th.Log(); !strings.Contains(log, "envoy exited during start-up") || !strings.Contains(log, "exit status 1") {
		t.Fatalf("log does not say that Envoy exited at start:\n%s", lastLines(log, 15))
	}
}

// TestLocalCrashLoopFailsFast: a revision whose process exits before it is
// ready answers a held request with 503, Retry-After and the reason long
// before its hold timeout (60 s): within the client's 10 s deadline, which
// covers the wake-up and the first exit.
func TestLocalCrashLoopFailsFast(t *testing.T) { testLocalCrashLoopFailsFast(t, extprocArgs) }

// TestLocalModuleCrashLoopFailsFast is TestLocalCrashLoopFailsFast with the
// activator module: thaw's state stream carries the failure, and the
// module answers the held request at once.
func TestLocalModuleCrashLoopFailsFast(t *testing.T) { testLocalCrashLoopFailsFast(t, moduleArgs(t)) }

func testLocalCrashLoopFailsFast(t *testing.T, args []string) {
	cfg := `revisions:
  - name: crash
    hosts: [crash.test]
    command: [sh, -c, "echo failing >&2; exit 3"]
    autoscaling:
      hold-timeout: 60s
`
	th := harness.StartThaw(t, harness.ThawOptions{Config: cfg, Args: args})
	c := client(exitDeadline)
	ctx, cancel := context.WithTimeout(context.Background(), exitDeadline)
	defer cancel()
	start := time.Now()
	code, body, hdr, err := get(ctx, c, th, "crash.test", "/")
	if err != nil {
		t.Fatalf("request to a crash-looping revision: %v (after %v), want a 503 at once", err, time.Since(start))
	}
	t.Logf("answered %d after %v: %q", code, time.Since(start), body)
	if code != 503 || hdr.Get("Retry-After") == "" || hdr.Get("X-Thaw-Wake-Failure") != "ProcessExited" {
		t.Fatalf("answer %d, Retry-After %q, x-thaw-wake-failure %q; want 503 with both (ProcessExited)",
			code, hdr.Get("Retry-After"), hdr.Get("X-Thaw-Wake-Failure"))
	}
	if !strings.Contains(body, "local/crash") || !strings.Contains(body, "exit status 3") {
		t.Fatalf("body %q does not name the revision and the exit status", body)
	}
}

// waitExit waits up to exitDeadline for thaw to exit and requires a
// non-zero status.
func waitExit(t *testing.T, th *harness.Thaw) {
	t.Helper()
	select {
	case <-th.Exited():
	case <-time.After(exitDeadline):
		t.Fatalf("thaw still running %s after start, want it to exit:\n%s", exitDeadline, lastLines(th.Log(), 15))
	}
	if th.ExitErr() == nil {
		t.Fatalf("thaw exited 0, want a non-zero status:\n%s", lastLines(th.Log(), 15))
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestLocalActivationTimeoutFailsFast: a revision whose process runs but
// never becomes ready (it listens nowhere, so its TCP readiness probe never
// passes) answers a held request 503 with Retry-After and
// x-thaw-wake-failure: ActivationTimeout once its activation timeout (2 s)
// passes, long before its hold timeout (60 s): within the client's 30 s
// deadline, which covers the wake-up, the timeout and one decision tick.
func TestLocalActivationTimeoutFailsFast(t *testing.T) {
	cfg := `revisions:
  - name: neverready
    hosts: [neverready.test]
    command: [sleep, "300"]
    autoscaling:
      hold-timeout: 60s
      activation-timeout: 2s
`
	th := harness.StartThaw(t, harness.ThawOptions{Config: cfg})
	const deadline = 30 * time.Second
	c := client(deadline)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	code, body, hdr, err := get(ctx, c, th, "neverready.test", "/")
	if err != nil {
		t.Fatalf("request to a never-ready revision: %v (after %v), want a 503 after the activation timeout", err, time.Since(start))
	}
	t.Logf("answered %d after %v: %q", code, time.Since(start), body)
	if code != 503 || hdr.Get("Retry-After") == "" || hdr.Get("X-Thaw-Wake-Failure") != "ActivationTimeout" {
		t.Fatalf("answer %d, Retry-After %q, x-thaw-wake-failure %q; want 503 with both (ActivationTimeout)",
			code, hdr.Get("Retry-After"), hdr.Get("X-Thaw-Wake-Failure"))
	}
	if !strings.Contains(body, "local/neverready") || !strings.Contains(body, "activation timeout (2s)") {
		t.Fatalf("body %q does not name the revision and the activation timeout", body)
	}
	if log := th.Log(); !strings.Contains(log, "wake-up failed") || !strings.Contains(log, "ActivationTimeout") {
		t.Fatalf("thaw's log does not report the failed wake-up:\n%s", lastLines(log, 15))
	}
}
