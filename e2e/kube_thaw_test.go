//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/platform/kube"
	"github.com/thaw-dev/thaw/revision"
)

// thawRun is a `thaw run` process authenticated as thaw's ServiceAccount.
type thawRun struct {
	proc                 *harness.Process
	grpcPort, adminPort  int
	adminURL, kubeconfig string
}

// startThawRun starts `thaw run` on the given loopback ports; extra are
// more flags (the --tls-* ones).
func startThawRun(t *testing.T, kubeconfig string, grpcPort, adminPort, httpPort int, extra ...string) *thawRun {
	t.Helper()
	return startThawRunAt(t, kubeconfig, "127.0.0.1", "thaw-e2e", grpcPort, adminPort, httpPort, extra...)
}

// startThawRunAt starts `thaw run` serving gRPC on grpcIP:grpcPort with
// Lease identity identity, with more flags.
func startThawRunAt(t *testing.T, kubeconfig, grpcIP, identity string, grpcPort, adminPort, httpPort int, extra ...string) *thawRun {
	t.Helper()
	r := &thawRun{grpcPort: grpcPort, adminPort: adminPort, kubeconfig: kubeconfig,
		adminURL: fmt.Sprintf("http://127.0.0.1:%d", adminPort)}
	r.proc = harness.StartProcess(t, harness.ProcessConfig{Name: "thaw-run-" + identity, Path: harness.ThawBinary(t), Args: append([]string{
		"run", "--kubeconfig", kubeconfig,
		"--grpc-address", net.JoinHostPort(grpcIP, strconv.Itoa(grpcPort)),
		"--admin-address", fmt.Sprintf("127.0.0.1:%d", adminPort),
		"--http-address", "127.0.0.1", "--http-port", strconv.Itoa(httpPort),
		"--lease-namespace", thawNamespace, "--identity", identity,
		"--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "500ms",
	}, extra...)})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := harness.WaitForURL(ctx, r.proc, http.DefaultClient, r.adminURL+"/readyz"); err != nil {
		t.Fatalf("thaw run not ready: %v\n%s", err, r.proc.LogTail(40))
	}
	return r
}

// TestKubeThawRun drives `thaw run` end to end on the real control plane
// with real Envoy, over mutual TLS as in manifests/ (certificates from
// `thaw certgen` as its ServiceAccount), once per activator: scale from
// zero through /scale, steady load to N replicas in serve mode, a thaw
// crash and restart under load with no failed request, and scale to zero
// after the load stops.
//
//   - extproc: one Envoy, the ext_proc activator.
//   - module: two Envoys loading the activator module
//     (--activator=module), each started with its own --service-node as the
//     fleet's manifests do, reaching thaw's module port through its
//     loopback bridge (envoy.ModuleBridge, mutual TLS), container
//     concurrency 6. The cold start holds Envoy B's xDS traffic back
//     (pauseProxy) while the revision wakes: the whole burst is served,
//     B's share through thaw_activator_dst before B ACKed the pod (never
//     a 503 "no healthy upstream" from a pin to a host B does not know
//     yet), and no pod ever has more than 6 in flight (each Envoy's module
//     keeps to its share, coldStartBeforeACK).
//
// Both Envoys get the same listeners from thaw, so they share the data-plane
// port and the bridge port on this one machine (Envoy binds listeners with
// SO_REUSEPORT; in a cluster each pod has its own loopback): the kernel
// spreads new connections over both.
func TestKubeThawRun(t *testing.T) {
	for _, mode := range []string{activatorExtProcMode, activatorModuleMode} {
		t.Run(mode, func(t *testing.T) { testKubeThawRun(t, mode) })
	}
}

const (
	activatorExtProcMode = "extproc"
	activatorModuleMode  = "module"
)

func testKubeThawRun(t *testing.T, mode string) {
	t0 := time.Now()
	mark := func(what string) { t.Logf("%s at %v", what, time.Since(t0).Round(time.Millisecond)) }
	env := startKubeEnvWith(t, harness.PodRunnerOptions{StartupDelay: 300 * time.Millisecond, Latency: 100 * time.Millisecond})
	c := env.Cluster
	kubeconfig := c.KubeconfigForToken(t, c.ServiceAccountToken(t, thawNamespace, thawServiceAccount))
	grpcPort, adminPort, httpPort := harness.FreePort(t), harness.FreePort(t), harness.FreePort(t)
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", grpcPort)
	tlsArgs, envoyTLS := kubeMutualTLS(t, env)
	runArgs := tlsArgs
	params := envoy.BootstrapParams{NodeID: "envoy-e2e", XDSAddress: grpcAddr, TLS: envoyTLS}
	var envoyArgs []string
	var modulePort int
	module := mode == activatorModuleMode
	if module {
		var bridgePort int
		modulePort, bridgePort = harness.FreePort(t), harness.FreePort(t)
		runArgs = append(slices.Clone(tlsArgs), "--activator=module", "--activator-module="+moduleObject(t),
			fmt.Sprintf("--module-address=127.0.0.1:%d", modulePort), fmt.Sprintf("--module-bridge-port=%d", bridgePort))
		// The manifests' shape: a placeholder node id in the shared
		// bootstrap, each Envoy's own on its command line.
		params.NodeID = "envoy-fleet"
		params.Module = &envoy.ModuleBridge{Address: fmt.Sprintf("127.0.0.1:%d", modulePort), ListenPort: uint32(bridgePort)}
		envoyArgs = []string{"--service-node", "envoy-a"}
	}
	mark("certificates ready")
	run := startThawRun(t, kubeconfig, grpcPort, adminPort, httpPort, runArgs...)
	mark("thaw run ready")

	bootstrap, err := envoy.RenderBootstrap(params)
	if err != nil {
		t.Fatal(err)
	}
	if module {
		// Envoy A runs the manifests' fleet bootstrap (kube.FleetBootstrap):
		// thaw by DNS name (a test DNS server stands in for the headless
		// Service), gRPC health checks following the leader, and the HTTP
		// health check of the module bridge on thaw's module port.
		dnsAddr := startDNS(t, "thaw-grpc.test.", []string{"127.0.0.1"})
		pa := params
		pa.XDSAddress = fmt.Sprintf("thaw-grpc.test:%d", grpcPort)
		pa.Module = &envoy.ModuleBridge{Address: fmt.Sprintf("thaw-grpc.test:%d", modulePort), ListenPort: params.Module.ListenPort}
		fleet, err := kube.FleetBootstrap(pa)
		if err != nil {
			t.Fatal(err)
		}
		bootstrap = withTestResolver(t, fleet, dnsAddr)
	}
	// Both Envoys start at once: with no revision yet, each waits out its
	// initial VHDS fetch timeout (15 s) before it reports ready.
	proxy := harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: string(bootstrap), Args: envoyArgs, Name: "envoy-a", SkipWaitReady: module})
	var proxyB *harness.Envoy
	var slowXDS *pauseProxy
	if module {
		// Envoy B: the same bootstrap, its xDS through a proxy the test
		// can pause (ext_proc and stats straight to thaw).
		slowXDS = startPauseProxy(t, grpcAddr)
		pb := params
		pb.XDSAddress, pb.ExtProcAddress, pb.StatsAddress = slowXDS.Addr(), grpcAddr, grpcAddr
		bootstrapB, err := envoy.RenderBootstrap(pb)
		if err != nil {
			t.Fatal(err)
		}
		proxyB = harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: string(bootstrapB), Args: []string{"--service-node", "envoy-b"},
			Name: "envoy-b", SkipWaitReady: true})
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		for _, e := range []*harness.Envoy{proxy, proxyB} {
			if err := e.WaitReady(ctx); err != nil {
				t.Fatalf("envoy not ready: %v", err)
			}
		}
	}
	th := &harness.Thaw{HTTPURL: fmt.Sprintf("http://127.0.0.1:%d", httpPort), AdminURL: run.adminURL}
	mark("Envoys ready")

	const ns = "apps"
	createNamespace(t, c, ns)
	ann := map[string]string{
		revision.ThawPrefix + revision.KeyWindow:                 "6s",
		revision.ThawPrefix + revision.KeyScaleToZeroGracePeriod: "1s",
		revision.ThawPrefix + revision.KeyTarget:                 "5",
		revision.ThawPrefix + revision.KeyTargetBurstCapacity:    "0",
	}
	// On the module path, a limit the two Envoys share (3 each per pod),
	// checked at the cold start.
	const moduleCC = 6
	if module {
		ann[revision.ThawPrefix+revision.KeyContainerConcurrency] = strconv.Itoa(moduleCC)
	}
	dep := revisionDeployment(ns, "hello", 0, ann)
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const host = "hello.example.com"
	key := revision.Key{Namespace: ns, Name: "hello"}
	waitStatus(t, th, ns+"/hello", 30*time.Second, "the revision in proxy mode at zero", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0
	})
	waitEnvoyRoutes(t, proxy, key)
	mark("revision routed")
	checkIntrudersRefused(t, grpcAddr, envoyTLS)
	// `kubectl apply --dry-run=server -k` of this activator's manifests:
	// manifests/ (the fleet default, the module: its init container,
	// volume and ports) or manifests/overlays/activator-extproc pass
	// validation and PodSecurity "restricted" of thaw-system.
	manifestsDir := "manifests/overlays/activator-extproc"
	if module {
		manifestsDir = "manifests"
	}
	if err := applyObjects(t.Context(), c.Config, kustomizeBuild(t, manifestsDir), true); err != nil {
		t.Fatalf("dry-run apply of %s: %v", manifestsDir, err)
	}
	mark(manifestsDir + " dry-run")
	if !module {
		checkConnectedNodes(t, run.adminURL, 1)
		coldStart(t, th, run, host, ns+"/hello-")
	} else {
		waitEnvoyRoutes(t, proxyB, key)
		checkConnectedNodes(t, run.adminURL, 2)
		waitMetric(t, run.adminURL, "thaw_module_connected_nodes 2")
		// The leader passes the bridge's health check on thaw's module port.
		healthy := fmt.Sprintf("thaw_module::127.0.0.1:%d::health_flags::healthy", modulePort)
		if err := pollFor(t, func() bool {
			out, _, err := proxy.Admin(t.Context(), "/clusters")
			return err == nil && strings.Contains(out, healthy)
		}); err != nil {
			out, _, _ := proxy.Admin(t.Context(), "/clusters")
			t.Fatalf("envoy-a: %s not reported: %v\n%s", healthy, err, grepLines(out, "thaw_module::"))
		}
		mark("both modules connected")
		coldStartBeforeACK(t, th, env.Runner, proxy, proxyB, slowXDS, host, ns+"/hello-", ns+"/hello-", moduleCC)
	}

	mark("cold start done")
	// Steady load: 20 in flight with target 5 at 70% → ceil(20/3.5) = 6 replicas.
	phase := time.Now()
	load := startLoad(th, host, ns+"/hello-", 20)
	waitStatus(t, th, ns+"/hello", 90*time.Second, "4..8 ready replicas in serve mode", func(r map[string]any) bool {
		ready := num(r, "ready")
		return r["mode"] == "serve" && ready >= 4 && ready <= 8
	})
	t.Logf("steady load: 4..8 replicas in serve mode after %v", time.Since(phase).Round(time.Millisecond))

	// thaw crashes and restarts under load: Envoy keeps its configuration.
	okBefore := load.ok.Load()
	if err := run.proc.Stop(0); err != nil {
		t.Logf("stop thaw: %v", err)
	}
	time.Sleep(2 * time.Second)
	okWhileDown := load.ok.Load() - okBefore
	startThawRun(t, kubeconfig, grpcPort, adminPort, httpPort, runArgs...) // same ports: Envoy reconnects to it
	time.Sleep(3 * time.Second)
	ok, failed, fails := load.stop()
	t.Logf("steady load: %d ok (%d while thaw was down), %d failed", ok, okWhileDown, failed)
	if failed != 0 {
		t.Fatalf("%d requests failed under load and across the thaw restart: %v", failed, fails)
	}
	if okWhileDown == 0 {
		t.Errorf("no request succeeded while thaw was down")
	}

	// Idle: proxy mode, confirmed by Envoy, grace period, /scale to 0.
	phase = time.Now()
	waitStatus(t, th, ns+"/hello", 90*time.Second, "scaled to zero in proxy mode", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0 && num(r, "desired") == 0
	})
	sc, err := c.Client.AppsV1().Deployments(ns).GetScale(t.Context(), "hello", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 0 {
		t.Fatalf("/scale replicas = %v, %v; want 0", sc, err)
	}
	waitEvent(t, c.Client, ns, "hello", "Scaled")
	t.Logf("scaled to zero %v after the load stopped", time.Since(phase).Round(time.Millisecond))
}
