//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/envoy"
)

// revisionNamespace installs the Revision and RevisionSplit CRDs of
// manifests/ on env's cluster (installRevisionCRD), creates namespace ns
// and returns an admin dynamic client for the test's objects.
func revisionNamespace(t *testing.T, env *kubeEnv, ns string) dynamic.Interface {
	t.Helper()
	installRevisionCRD(t, env)
	dyn, err := dynamic.NewForConfig(env.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, env.Cluster, ns)
	return dyn
}

// thawRunEnvoyOptions shape startThawRunEnvoy.
type thawRunEnvoyOptions struct {
	// Module runs thaw with --activator=module (bin/thaw-activator.so, a
	// module port and its loopback bridge) and Envoy with the module
	// bridge in its bootstrap, as node "envoy-fleet", --service-node
	// envoy-a. Without it: the ext_proc activator, node "envoy-e2e".
	Module bool
	// Extra are more `thaw run` flags, after those above.
	Extra []string
}

// thawKubeconfig is a kubeconfig for c with the token of thaw's
// ServiceAccount (thaw-system/thaw): what thaw gets in-cluster.
func thawKubeconfig(t *testing.T, c *harness.Cluster) string {
	t.Helper()
	return c.KubeconfigForToken(t, c.ServiceAccountToken(t, thawNamespace, thawServiceAccount))
}

// startThawRunEnvoy starts `thaw run` with kubeconfig (thawKubeconfig) on
// fresh loopback ports (startThawRun) and one real Envoy bootstrapped to
// its xDS port; th has Envoy's data plane (thaw's HTTP port) and thaw's
// admin URL.
func startThawRunEnvoy(t *testing.T, kubeconfig string, opts thawRunEnvoyOptions) (run *thawRun, proxy *harness.Envoy, th *harness.Thaw) {
	t.Helper()
	grpcPort, adminPort, httpPort := harness.FreePort(t), harness.FreePort(t), harness.FreePort(t)
	params := envoy.BootstrapParams{NodeID: "envoy-e2e", XDSAddress: fmt.Sprintf("127.0.0.1:%d", grpcPort)}
	envoyOpts := harness.EnvoyOptions{}
	args := opts.Extra
	if opts.Module {
		modulePort, bridgePort := harness.FreePort(t), harness.FreePort(t)
		args = append([]string{"--activator=module", "--activator-module=" + moduleObject(t),
			fmt.Sprintf("--module-address=127.0.0.1:%d", modulePort), fmt.Sprintf("--module-bridge-port=%d", bridgePort)}, args...)
		params.NodeID = "envoy-fleet"
		params.Module = &envoy.ModuleBridge{Address: fmt.Sprintf("127.0.0.1:%d", modulePort), ListenPort: uint32(bridgePort)}
		envoyOpts.Args, envoyOpts.Name = []string{"--service-node", "envoy-a"}, "envoy-a"
	}
	run = startThawRun(t, kubeconfig, grpcPort, adminPort, httpPort, args...)
	bootstrap, err := envoy.RenderBootstrap(params)
	if err != nil {
		t.Fatal(err)
	}
	envoyOpts.Bootstrap = string(bootstrap)
	proxy = harness.StartEnvoy(t, envoyOpts)
	th = &harness.Thaw{HTTPURL: fmt.Sprintf("http://127.0.0.1:%d", httpPort), AdminURL: run.adminURL}
	return run, proxy, th
}

// configDump returns proxy's /config_dump of one resource kind (e.g.
// "dynamic_route_configs") as JSON text; it fails the test when the admin
// port does not answer within 5 s.
func configDump(t *testing.T, proxy *harness.Envoy, resource string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	out, _, err := proxy.Admin(ctx, "/config_dump?resource="+resource)
	if err != nil {
		t.Fatalf("config_dump %s: %v", resource, err)
	}
	return out
}
