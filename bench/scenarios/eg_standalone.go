package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// egProc is a running envoy-gateway server and the Envoy it started.
type egProc struct {
	*process
	url  string // EG's Envoy listener, http://127.0.0.1:<port>
	dirs harness.EGDirs
	// resPath is EG's first resource file (file provider); more files go
	// beside it.
	resPath string
}

// startEGStandalone writes EG's configuration (file provider, host
// infrastructure under dir, thaw at grpcPort as extension server with
// failOpen false, Backend resources enabled) and resources (an EnvoyProxy
// with thaw's bootstrap merge, a GatewayClass, a Gateway on a free port,
// and routes), and starts envoy-gateway server.
func startEGStandalone(e *env, dir, grpcAddr string, grpcPort int, routes string) (*egProc, error) {
	dirs := harness.EGDirs{Root: filepath.Join(dir, "eg")} // thaw local uses dir/state
	for _, d := range dirs.All() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	envoyBin, err := filepath.EvalSymlinks(e.envoyBin)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(dirs.EnvoyLink())
	if err := os.Symlink(envoyBin, dirs.EnvoyLink()); err != nil {
		return nil, err
	}
	if out, err := exec.Command(e.egBin, "certgen", "--local", "--config-home", dirs.ConfigHome()).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("envoy-gateway certgen: %w\n%s", err, out)
	}
	merge, err := exec.Command(e.thawBin, "envoy-bootstrap", "--envoy-gateway", "--xds-address", grpcAddr).Output()
	if err != nil {
		return nil, fmt.Errorf("thaw envoy-bootstrap --envoy-gateway: %w", err)
	}
	ports, err := pickPorts(1)
	if err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(dir, "eg.yaml"), harness.EGConfig(dirs, grpcPort)); err != nil {
		return nil, err
	}
	resPath := filepath.Join(dirs.Resources(), "all.yaml")
	if err := writeFile(resPath, harness.EGBaseResources(string(merge), ports[0])+routes); err != nil {
		return nil, err
	}
	p, err := startProcess("envoy-gateway", filepath.Join(dir, "eg.log"), e.egBin, "server", "-c", filepath.Join(dir, "eg.yaml"))
	if err != nil {
		return nil, err
	}
	return &egProc{process: p, url: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), dirs: dirs, resPath: resPath}, nil
}

// envoyPid finds the Envoy EG started.
func (g *egProc) envoyPid() (int, error) {
	pids := harness.EGEnvoyPids(g.dirs.RuntimeDir())
	if len(pids) == 0 {
		return 0, fmt.Errorf("no Envoy of EG under %s", g.dirs.RuntimeDir())
	}
	return pids[0], nil
}

// egRoutes renders the routes of runEG: the Revision warm and a plain
// Backend on backendPort (host plain.bench), and one Revision and
// HTTPRoute per cold revision, each on its revision's host.
func egRoutes(warm rev, backendPort int, cold []rev) string {
	var b strings.Builder
	fmt.Fprintf(&b, `---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: Backend
metadata: {name: plain, namespace: local}
spec:
  endpoints: [{ip: {address: 127.0.0.1, port: %d}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: plain, namespace: local}
spec:
  parentRefs: [{name: eg}]
  hostnames: [plain.bench]
  rules: [{backendRefs: [{group: gateway.envoyproxy.io, kind: Backend, name: plain}]}]
`, backendPort)
	b.WriteString(revisionRoutes(append([]rev{warm}, cold...)))
	return b.String()
}

// revisionRoutes renders a Revision and an HTTPRoute on its host for each
// of revs.
func revisionRoutes(revs []rev) string {
	var b strings.Builder
	for _, r := range revs {
		b.WriteString(harness.EGRevisionRoute(r.name, r.host()))
	}
	return b.String()
}

// envoyAdmin reads the admin address func-e wrote for EG's Envoy
// (harness.EGEnvoyAdmin).
func (g *egProc) envoyAdmin() (string, error) { return harness.EGEnvoyAdmin(g.dirs.RuntimeDir()) }
