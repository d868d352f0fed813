package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// EGEnvoyVersion is the version directory Envoy Gateway's launcher
// (func-e) finds the cached Envoy under (EGDirs.LinkEnvoy), so nothing is
// downloaded; EGBaseResources pins EG's Envoy to it.
const EGEnvoyVersion = "1.40.0"

// EGDirs are the directories of an Envoy Gateway run in standalone mode
// (file provider, host infrastructure), all under Root: res (the
// resource files EG watches), cfg (certgen's output), data, state and run
// (func-e's homes; run gets one subdirectory per Envoy run, named on that
// Envoy's command line).
type EGDirs struct{ Root string }

// Resources, ConfigHome, DataHome, StateHome and RuntimeDir return the
// directories under Root.
func (d EGDirs) Resources() string  { return filepath.Join(d.Root, "res") }
func (d EGDirs) ConfigHome() string { return filepath.Join(d.Root, "cfg") }
func (d EGDirs) DataHome() string   { return filepath.Join(d.Root, "data") }
func (d EGDirs) StateHome() string  { return filepath.Join(d.Root, "state") }
func (d EGDirs) RuntimeDir() string { return filepath.Join(d.Root, "run") }

// EnvoyLink is where func-e looks for the Envoy of EGEnvoyVersion.
func (d EGDirs) EnvoyLink() string {
	return filepath.Join(d.DataHome(), "envoy-versions", EGEnvoyVersion, "bin", "envoy")
}

// All returns every directory EG needs, the Envoy link's included.
func (d EGDirs) All() []string {
	return []string{d.Resources(), d.ConfigHome(), d.StateHome(), d.RuntimeDir(), filepath.Dir(d.EnvoyLink())}
}

// EGConfig is EG's standalone configuration: file provider on
// d.Resources(), host infrastructure with func-e's directories under d,
// EG's Backend API on, and thaw (on 127.0.0.1:thawPort) as extension
// server for Revision backends with failOpen false.
func EGConfig(d EGDirs, thawPort int) string {
	return fmt.Sprintf(egConfig, d.Resources(), d.ConfigHome(), d.DataHome(), d.StateHome(), d.RuntimeDir(), thawPort)
}

// EGBaseResources are the EnvoyProxy (EGEnvoyVersion, thaw's bootstrap
// merge as `thaw envoy-bootstrap --envoy-gateway` prints it), a
// GatewayClass using it and the Gateway "eg" in namespace local with one
// HTTP listener on gatewayPort.
func EGBaseResources(merge string, gatewayPort int) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(merge, "\n") {
		if l != "" {
			b.WriteString("      " + l)
		}
	}
	return fmt.Sprintf(egBaseResources, EGEnvoyVersion, strings.TrimRight(b.String(), "\n"), gatewayPort)
}

// EGRevisionRoute is the Revision local/<name> (thaw local's revision
// key) and an HTTPRoute of Gateway eg to it, on host when it is not empty.
func EGRevisionRoute(name, host string) string {
	hostnames := ""
	if host != "" {
		hostnames = fmt.Sprintf("\n  hostnames: [%s]", host)
	}
	return fmt.Sprintf(egRevisionRoute, name, hostnames)
}

// EGConfigWithListeners is EGConfig with EG's translation hook also
// sending listeners (translation.listener.includeAll), which the
// activator module needs: thaw inserts its filter into them.
func EGConfigWithListeners(d EGDirs, thawPort int) string {
	return strings.Replace(EGConfig(d, thawPort), "        route:\n          includeAll: true\n",
		"        route:\n          includeAll: true\n        listener:\n          includeAll: true\n", 1)
}

const egConfig = `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyGateway
gateway:
  controllerName: gateway.envoyproxy.io/gatewayclass-controller
provider:
  type: Custom
  custom:
    resource:
      type: File
      file:
        paths: [%q]
    infrastructure:
      type: Host
      host:
        configHome: %q
        dataHome: %q
        stateHome: %q
        runtimeDir: %q
logging:
  level:
    default: info
extensionApis:
  enableBackend: true
extensionManager:
  backendResources:
  - group: thaw.dev
    version: v1alpha1
    kind: Revision
  - group: thaw.dev
    version: v1alpha1
    kind: RevisionSplit
  hooks:
    xdsTranslator:
      post: [Route, Cluster, Translation]
      translation:
        route:
          includeAll: true
  failOpen: false
  service:
    fqdn:
      hostname: 127.0.0.1
      port: %d
`

const egBaseResources = `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyProxy
metadata:
  name: thaw
  namespace: local
spec:
  provider:
    type: Host
    host:
      envoyVersion: %s
  bootstrap:
    type: Merge
    value: |
%s
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: eg
spec:
  controllerName: gateway.envoyproxy.io/gatewayclass-controller
  parametersRef:
    group: gateway.envoyproxy.io
    kind: EnvoyProxy
    name: thaw
    namespace: local
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: eg
  namespace: local
spec:
  gatewayClassName: eg
  listeners:
  - name: http
    protocol: HTTP
    port: %d
`

const egRevisionRoute = `---
apiVersion: thaw.dev/v1alpha1
kind: Revision
metadata:
  name: %[1]s
  namespace: local
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %[1]s}
  port: 8080
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: %[1]s
  namespace: local
spec:
  parentRefs: [{name: eg}]%[2]s
  rules:
  - backendRefs:
    - group: thaw.dev
      kind: Revision
      name: %[1]s
`

// EGEnvoyPids returns the pids of the Envoy processes Envoy Gateway started
// with runtimeDir (EGDirs.RuntimeDir: func-e names it on their command
// line).
func EGEnvoyPids(runtimeDir string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if strings.HasSuffix(args[0], "/bin/envoy") && strings.Contains(string(b), runtimeDir) {
			out = append(out, pid)
		}
	}
	return out
}

// EGEnvoyAdmin returns the admin URL ("http://127.0.0.1:<port>") of the
// Envoy Envoy Gateway started with runtimeDir (EGDirs.RuntimeDir): func-e
// writes the address into <runtimeDir>/<run>/admin-address.txt; of several
// runs, the last by name. It fails while no run has written one.
func EGEnvoyAdmin(runtimeDir string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(runtimeDir, "*", "admin-address.txt"))
	sort.Strings(files)
	if len(files) > 0 {
		if b, err := os.ReadFile(files[len(files)-1]); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return "http://" + strings.TrimSpace(string(b)), nil
		}
	}
	return "", fmt.Errorf("no admin-address.txt of EG's Envoy under %s", runtimeDir)
}
