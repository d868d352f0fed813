//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestEnvoyGatewayRestart: EG is off the request and flip paths. While EG
// is frozen (SIGSTOP: no translation, no xDS answers, no hook calls) its
// Envoy keeps serving the Revision, and a scale to zero and a cold start
// (two flips over thaw's EDS) still work. EG is then restarted with a
// changed route: the new EG (and the Envoy it starts: in host mode Envoy
// is EG's child and stops with it) calls thaw's hooks again, serves the
// new route, and a later cold start works too.
func TestEnvoyGatewayRestart(t *testing.T) {
	fastZero := map[string]string{"window": "6s", "scale-to-zero-grace-period": "2s"}
	env := startEGWith(t, "",
		revisionYAML{Name: "hello", Host: "hello.localhost", StartupDelay: 200 * time.Millisecond, Autoscaling: fastZero},
		revisionYAML{Name: "moved", Host: "moved.localhost", StartupDelay: 200 * time.Millisecond})
	c := client(60 * time.Second)
	if body := waitGateway(t, c, env, 120*time.Second); !strings.Contains(body, "hello from hello") {
		t.Fatalf("body %q, want the workload's", body)
	}

	env.freezeEG(t)
	if code, body := getGateway(t, c, env); code != 200 || !strings.Contains(body, "hello from hello") {
		t.Fatalf("EG frozen, warm request: %d %q", code, body)
	}
	waitStatus(t, env.thaw, "local/hello", 90*time.Second, "scale to zero with EG frozen", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0
	})
	if code, body := getGateway(t, c, env); code != 200 || !strings.Contains(body, "hello from hello") {
		t.Fatalf("EG frozen, cold start: %d %q", code, body)
	}
	waitStatus(t, env.thaw, "local/hello", 30*time.Second, "serve mode with EG frozen", func(r map[string]any) bool { return r["mode"] == "serve" })

	// The restarted EG reads a new route to Revision moved (at zero: its
	// first request is a cold start through the new Envoy).
	env.stopEG(t)
	addEGFile(t, env, "moved.yaml", egRevisionRoute("moved"))
	waitStatus(t, env.thaw, "local/moved", 30*time.Second, "moved at zero", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0
	})
	env.startEGProcess(t)
	waitGatewayBody(t, c, env, "moved.localhost", "hello from moved", 120*time.Second)
	if pids := env.envoyPids(); len(pids) != 1 {
		t.Fatalf("%d Envoy processes after EG's restart, want exactly 1", len(pids))
	}
	waitStatus(t, env.thaw, "local/moved", 30*time.Second, "moved in serve mode", func(r map[string]any) bool { return r["mode"] == "serve" })
	if code, body := getGateway(t, c, env); code != 200 || !strings.Contains(body, "hello from hello") {
		t.Fatalf("first route after EG's restart: %d %q", code, body)
	}
}

// TestEnvoyGatewayThawRestart: thaw crashes, EG's input changes while no
// thaw answers the hooks (EG's translation waits: failOpen false, hook
// calls wait for the server), and thaw comes back on the same address.
// EG then finishes the translation on its own (no EG restart, no stall):
// the new route serves, and warm requests never needed thaw meanwhile.
func TestEnvoyGatewayThawRestart(t *testing.T) {
	env := startEGWith(t, "",
		revisionYAML{Name: "hello", Host: "hello.localhost", StartupDelay: 200 * time.Millisecond},
		revisionYAML{Name: "late", Host: "late.localhost", StartupDelay: 200 * time.Millisecond})
	c := client(60 * time.Second)
	if body := waitGateway(t, c, env, 120*time.Second); !strings.Contains(body, "hello from hello") {
		t.Fatalf("body %q, want the workload's", body)
	}
	first := env.thaw
	translated := egTranslations(t)
	xdsUpdates := egLogCount(t, env, egXDSUpdate)
	first.Kill()

	if code, body := getGateway(t, c, env); code != 200 || !strings.Contains(body, "hello from hello") {
		t.Fatalf("thaw down, warm request: %d %q", code, body)
	}
	addEGFile(t, env, "late.yaml", egRevisionRoute("late"))
	// EG's xds runner took the new input: it is calling the hooks now.
	waitEGLogCount(t, env, egXDSUpdate, xdsUpdates+1, 60*time.Second)
	for i := 0; i < 4; i++ {
		// Host late.localhost still falls to hello's catch-all route.
		if _, body, _, err := egGet(c, env.gateway+"/", "late.localhost"); err == nil && strings.Contains(body, "hello from late") {
			t.Fatal("thaw down: the new route serves already, want EG's translation to wait for the hooks")
		}
		if got := egTranslations(t); got != translated {
			t.Fatalf("EG finished %v translations with no thaw answering its hooks (failOpen false), want 0", got-translated)
		}
		time.Sleep(500 * time.Millisecond)
	}

	env.thaw = harness.StartThaw(t, harness.ThawOptions{Args: []string{"--eg-extension"}, ConfigPath: first.ConfigPath,
		StateDir: first.StateDir, HTTPPort: first.HTTPPort, GRPCPort: first.GRPCPort, AdminPort: first.AdminPort,
		EnvoyAdminPort: first.EnvoyAdminPort})
	waitGatewayBody(t, c, env, "late.localhost", "hello from late", 180*time.Second)
	if got := egTranslations(t); got <= translated {
		t.Fatalf("EG translations %v, want more than %v after thaw answered", got, translated)
	}
	if code, body := getGateway(t, c, env); code != 200 || !strings.Contains(body, "hello from hello") {
		t.Fatalf("old route after thaw's restart: %d %q", code, body)
	}
}

// freezeEG stops EG with SIGSTOP (by pid): its Envoy keeps running but EG
// neither translates nor answers xDS. The cleanup resumes it so that its
// own cleanup can stop it.
func (e *egEnv) freezeEG(t *testing.T) {
	t.Helper()
	p := e.eg
	if err := syscall.Kill(p.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP envoy-gateway: %v", err)
	}
	t.Cleanup(func() { e.resumeEG(p) })
}

// resumeEG sends SIGCONT to p unless it has exited (its pid may be reused).
func (e *egEnv) resumeEG(p *harness.Process) {
	select {
	case <-p.Exited():
	default:
		_ = syscall.Kill(p.Pid(), syscall.SIGCONT)
	}
}

// stopEG stops EG (resumed first if frozen) and waits, bounded, until the
// Envoy it started has exited too.
func (e *egEnv) stopEG(t *testing.T) {
	t.Helper()
	e.resumeEG(e.eg)
	if err := e.eg.Stop(60 * time.Second); err != nil {
		t.Logf("stop envoy-gateway: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < 600 && time.Now().Before(deadline); i++ {
		if len(e.envoyPids()) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("EG's Envoy %v still running 60s after EG stopped", e.envoyPids())
}

// addEGFile adds a resources file to EG's watched directory atomically (a
// hidden temporary file, which EG ignores, renamed into place).
func addEGFile(t testing.TB, e *egEnv, name, data string) {
	t.Helper()
	dir := filepath.Dir(e.res)
	tmp := filepath.Join(dir, "."+name+".tmp")
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// egXDSUpdate is how EG v1.9.1 logs its xds runner taking a new
// translation input (it then calls the hooks).
const egXDSUpdate = `received an update	{"runner": "xds"}`

// egLogCount counts the lines of EG's log containing s.
func egLogCount(t testing.TB, e *egEnv, s string) int {
	t.Helper()
	b, err := os.ReadFile(e.eg.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), s)
}

// waitEGLogCount waits, bounded, until EG's log has at least n lines
// containing s.
func waitEGLogCount(t *testing.T, e *egEnv, s string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		if egLogCount(t, e, s) >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("EG's log has %d lines with %q after %s, want %d", egLogCount(t, e, s), s, timeout, n)
}

// egRevisionRoute is a Revision <name> in namespace local and an
// HTTPRoute for host <name>.localhost to it.
func egRevisionRoute(name string) string { return harness.EGRevisionRoute(name, name+".localhost") }
