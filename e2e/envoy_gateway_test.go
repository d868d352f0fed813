//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// egBinary returns the cached envoy-gateway binary (make tools-envoy-gateway).
func egBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(harness.DefaultBinDir(), "envoy-gateway")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("envoy-gateway not found (%v): run `make tools-envoy-gateway`", err)
	}
	return bin
}

// egEnv is Envoy Gateway standalone (file provider, host infrastructure)
// with thaw as its extension, both on loopback.
type egEnv struct {
	thaw     *harness.Thaw
	eg       *harness.Process
	gateway  string // EG's Envoy listener, http://127.0.0.1:<port>
	runDir   string // func-e's runtime dir: one subdirectory per Envoy run
	envoyBin string
	egBin    string
	config   string // EG's configuration file
	res      string // EG's resources file (the file provider watches it)
}

// startEGWith writes EG's configuration and resources (a Gateway, the
// local revisions revs, the first named hello, with a Revision hello in
// namespace local and an HTTPRoute to it, an EnvoyProxy carrying thaw's
// bootstrap merge and envoyVersion, and extra appended to EG's file) and
// starts thaw local --eg-extension and envoy-gateway server.
func startEGWith(t testing.TB, extra string, revs ...revisionYAML) *egEnv {
	t.Helper()
	return startEGOpts(t, egOptions{extra: extra}, revs...)
}

// egOptions vary startEGOpts: extra resources for EG's file, more thaw
// arguments, and EG's translation hook with listeners (the activator
// module's filter goes into them).
type egOptions struct {
	extra     string
	thawArgs  []string
	listeners bool
	// mergeArgs are added to `thaw envoy-bootstrap --envoy-gateway`; a
	// function of the started thaw (its addresses).
	mergeArgs func(*harness.Thaw) []string
}

// startEGOpts is startEGWith with o.
func startEGOpts(t testing.TB, o egOptions, revs ...revisionYAML) *egEnv {
	t.Helper()
	extra := o.extra
	// EG standalone binds fixed ports: its xDS server (18000) and metrics
	// (19001). Another EG on them would serve this test's Envoy instead.
	for _, p := range []int{18000, 19001} {
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), time.Second); err == nil {
			conn.Close()
			t.Fatalf("127.0.0.1:%d is in use: Envoy Gateway standalone needs it", p)
		}
	}
	th := harness.StartThaw(t, harness.ThawOptions{Args: append([]string{"--eg-extension"}, o.thawArgs...), Config: localConfig(t, revs...)})
	dir := t.TempDir()
	dirs := harness.EGDirs{Root: dir}
	for _, d := range dirs.All() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	envoyBin, err := filepath.EvalSymlinks(harness.EnvoyBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(envoyBin, dirs.EnvoyLink()); err != nil {
		t.Fatal(err)
	}
	egBin := egBinary(t)
	if out, err := exec.Command(egBin, "certgen", "--local", "--config-home", filepath.Join(dir, "cfg")).CombinedOutput(); err != nil {
		t.Fatalf("envoy-gateway certgen: %v\n%s", err, out)
	}
	margs := []string{"envoy-bootstrap", "--envoy-gateway", "--xds-address", th.GRPCAddress}
	if o.mergeArgs != nil {
		margs = append(margs, o.mergeArgs(th)...)
	}
	merge, err := exec.Command(harness.ThawBinary(t), margs...).Output()
	if err != nil {
		t.Fatalf("thaw envoy-bootstrap --envoy-gateway: %v", err)
	}
	port := harness.PickPort(t)
	egConfig := harness.EGConfig(dirs, th.GRPCPort)
	if o.listeners {
		egConfig = harness.EGConfigWithListeners(dirs, th.GRPCPort)
	}
	writeFile(t, filepath.Join(dir, "config.yaml"), egConfig)
	writeFile(t, filepath.Join(dirs.Resources(), "all.yaml"), harness.EGBaseResources(string(merge), port)+harness.EGRevisionRoute("hello", "")+extra)
	env := &egEnv{thaw: th, gateway: fmt.Sprintf("http://127.0.0.1:%d", port), runDir: filepath.Join(dir, "run"), envoyBin: envoyBin,
		egBin: egBin, config: filepath.Join(dir, "config.yaml"), res: filepath.Join(dir, "res", "all.yaml")}
	env.startEGProcess(t)
	// EG's Envoy is its child; stop it by pid should EG leave it behind.
	t.Cleanup(func() {
		for _, pid := range env.envoyPids() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return env
}

// startEGProcess starts envoy-gateway server on the env's configuration
// (again after a restart: same directories, so same certificates).
func (e *egEnv) startEGProcess(t testing.TB) {
	t.Helper()
	e.eg = harness.StartProcess(t, harness.ProcessConfig{Name: "envoy-gateway", Path: e.egBin,
		Args: []string{"server", "-c", e.config}})
}

// envoyPids returns the pids of Envoy processes EG started for this test
// (their command line names this test's runtime dir).
func (e *egEnv) envoyPids() []int {
	return harness.EGEnvoyPids(e.runDir)
}

// egTranslations is EG's own count of xDS translations (the xds runner's
// subscriptions to the xds-ir message), from its metrics on :19001.
func egTranslations(t testing.TB) float64 {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:19001/metrics")
	if err != nil {
		t.Fatalf("EG metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, `watchable_subscribe_total{message="xds-ir",runner="xds",status="success"}`) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatal("EG metrics: no xds-ir translation counter")
	return 0
}

// TestEnvoyGatewayOneHop: real Envoy Gateway (standalone, file provider)
// starts the real Envoy with thaw's bootstrap merge; thaw answers EG's
// hooks and serves the Revision's endpoints over EDS. A cold request
// through EG's Envoy reaches the workload with exactly one Envoy process
// on the host for this test (thaw in extension mode runs none); after a
// scale to zero, a second cold start flips the revision's mode twice with
// no EG re-translation.
func TestEnvoyGatewayOneHop(t *testing.T) {
	// EG's translation hook sends listeners, as the manifests configure
	// it (for the module): on the ext_proc path they come back unchanged.
	env := startEGOpts(t, egOptions{listeners: true}, revisionYAML{Name: "hello", Host: "hello.localhost", StartupDelay: 200 * time.Millisecond,
		Autoscaling: map[string]string{"window": "6s", "scale-to-zero-grace-period": "2s"}})
	c := client(60 * time.Second)
	body := waitGateway(t, c, env, 120*time.Second)
	if !strings.Contains(body, "hello from hello") {
		t.Fatalf("body %q, want the workload's", body)
	}
	if pids := env.envoyPids(); len(pids) != 1 {
		t.Fatalf("%d Envoy processes started by EG, want exactly 1", len(pids))
	}
	if _, err := os.Stat(filepath.Join(env.thaw.StateDir, "envoy.pid")); err == nil {
		t.Fatal("thaw started an Envoy of its own in extension mode")
	}

	before := egTranslations(t)
	waitStatus(t, env.thaw, "local/hello", 90*time.Second, "scale to zero", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0
	})
	code, got := getGateway(t, c, env)
	if code != 200 || !strings.Contains(got, "hello from hello") {
		t.Fatalf("cold start after scale to zero: %d %q", code, got)
	}
	waitStatus(t, env.thaw, "local/hello", 30*time.Second, "serve mode", func(r map[string]any) bool { return r["mode"] == "serve" })
	if after := egTranslations(t); after != before {
		t.Fatalf("EG translated %v times during two mode flips, want 0 (flips are thaw's EDS only)", after-before)
	}
}

// TestEnvoyGatewaySplitRule: EG v1.9 merges the custom backendRefs of one
// rule into one cluster, which per-revision EDS cannot split. A rule with
// two Revisions weighted 90/10 answers 500 naming the reason, while EG
// keeps translating and serving every other route (a failed hook would
// make EG skip its whole translation). The same holds when a
// BackendTrafficPolicy (zone-aware) makes EG build one cluster per
// backendRef: EG v1.9.1 then leaves the route's weighted_clusters empty
// (custom backends have no endpoints), so the weights are lost.
// docs/envoy-gateway.md.
func TestEnvoyGatewaySplitRule(t *testing.T) {
	env := startEGWith(t, egSplitRoute,
		revisionYAML{Name: "hello", Host: "hello.localhost", StartupDelay: 200 * time.Millisecond},
		revisionYAML{Name: "canary", Host: "canary.localhost", StartupDelay: 200 * time.Millisecond})
	c := client(60 * time.Second)
	if body := waitGateway(t, c, env, 120*time.Second); !strings.Contains(body, "hello from hello") {
		t.Fatalf("other route: body %q, want the workload's", body)
	}
	for _, host := range []string{"split.localhost", "split-zones.localhost"} {
		code, body, _, err := egGet(c, env.gateway+"/", host)
		if err != nil {
			t.Fatal(err)
		}
		if code != 500 || !strings.Contains(body, "more than one Revision") {
			t.Fatalf("%s: split rule answered %d %q, want 500 naming the reason", host, code, body)
		}
	}
}

// egSplitRoute is an HTTPRoute for host split.localhost with one rule
// weighting Revisions hello and canary 90/10, and the same for host
// split-zones.localhost with a zone-aware BackendTrafficPolicy (EG then
// builds one cluster per backendRef).
const egSplitRoute = `---
apiVersion: thaw.dev/v1alpha1
kind: Revision
metadata: {name: canary, namespace: local}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: canary}
  port: 8080
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: split, namespace: local}
spec:
  parentRefs: [{name: eg}]
  hostnames: [split.localhost]
  rules:
  - backendRefs:
    - {group: thaw.dev, kind: Revision, name: hello, weight: 90}
    - {group: thaw.dev, kind: Revision, name: canary, weight: 10}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: split-zones, namespace: local}
spec:
  parentRefs: [{name: eg}]
  hostnames: [split-zones.localhost]
  rules:
  - backendRefs:
    - {group: thaw.dev, kind: Revision, name: hello, weight: 90}
    - {group: thaw.dev, kind: Revision, name: canary, weight: 10}
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: BackendTrafficPolicy
metadata: {name: split-zones, namespace: local}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: split-zones}]
  loadBalancer:
    type: LeastRequest
    zoneAware:
      preferLocal: {}
`

// waitGateway retries until EG's Envoy listens and answers 200 (EG
// translates, calls thaw's hooks and starts Envoy first), bounded by
// timeout and a request count.
func waitGateway(t testing.TB, c *http.Client, env *egEnv, timeout time.Duration) string {
	t.Helper()
	return waitGatewayHost(t, c, env, "", timeout)
}

// waitGatewayHost is waitGateway for requests with the given Host ("" for
// the listener's address).
func waitGatewayHost(t testing.TB, c *http.Client, env *egEnv, host string, timeout time.Duration) string {
	t.Helper()
	return waitGatewayBody(t, c, env, host, "", timeout)
}

// waitGatewayBody retries (harness.WaitRoute, every 500 ms), bounded in
// time and count, until a request with the given Host answers 200 with
// want in the body, and returns that body; envoy-gateway's exit ends the
// wait.
func waitGatewayBody(t testing.TB, c *http.Client, env *egEnv, host, want string, timeout time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	body, err := harness.WaitRoute(ctx, c, harness.RouteWait{URL: env.gateway, Host: host, Want: want,
		Every: 500 * time.Millisecond, Gateway: env.eg})
	if err != nil {
		t.Fatalf("EG's Envoy never answered 200 within %s: %v", timeout, err)
	}
	return body
}

func getGateway(t testing.TB, c *http.Client, env *egEnv) (int, string) {
	t.Helper()
	code, body, _, err := egGet(c, env.gateway+"/", "")
	if err != nil {
		t.Fatalf("GET through EG: %v", err)
	}
	return code, body
}

func egGet(c *http.Client, url, host string) (int, string, http.Header, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", nil, err
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, b.String(), resp.Header, nil
}

// replaceFile replaces path's content in one rename, as a user's
// deployment tool would: EG's file provider watches the directory, and
// an in-place write lets it read the file truncated (every route gone,
// the gateway's listener removed: connection refused for the requests
// in flight). The new content is written beside the directory first.
func replaceFile(t testing.TB, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(filepath.Dir(path)), "."+filepath.Base(path)+".new")
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
