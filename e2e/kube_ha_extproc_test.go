//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/platform/kube"
	"github.com/thaw-dev/thaw/revision"
)

// TestKubeHAExtProcLeaderKill runs two `thaw run` replicas on the real
// control plane behind one real Envoy with the fleet bootstrap (one DNS
// name for both replicas). Every replica serves ext_proc, so requests for a
// revision at zero are held on both; the leader is killed (SIGKILL) while
// they are held: the follower releases its held requests when the backend
// becomes ready, Envoy retries the leader's on the follower, and no request
// fails. Then, with proxy-mode traffic flowing (target burst capacity -1),
// the new leader is killed: no request fails either.
func TestKubeHAExtProcLeaderKill(t *testing.T) {
	env := startKubeEnvWith(t, harness.PodRunnerOptions{StartupDelay: 3 * time.Second, Latency: 20 * time.Millisecond})
	c := env.Cluster
	kubeconfig := c.KubeconfigForToken(t, c.ServiceAccountToken(t, thawNamespace, thawServiceAccount))
	grpcPort, httpPort := harness.FreePort(t), harness.FreePort(t)
	ips := []string{"127.0.0.41", "127.0.0.42"}
	names := []string{"replica-a", "replica-b"}
	adminPorts := []int{harness.FreePort(t), harness.FreePort(t)}
	replicas := make([]*thawRun, 2)
	for i := range replicas {
		replicas[i] = startThawRunAt(t, kubeconfig, ips[i], names[i], grpcPort, adminPorts[i], httpPort)
	}
	dnsAddr := startDNS(t, "thaw-grpc.test.", ips)
	bs, err := kube.FleetBootstrap(envoy.BootstrapParams{NodeID: "envoy-ha", XDSAddress: fmt.Sprintf("thaw-grpc.test:%d", grpcPort)})
	if err != nil {
		t.Fatal(err)
	}
	proxy := harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: string(withTestResolver(t, bs, dnsAddr))})
	httpURL := fmt.Sprintf("http://127.0.0.1:%d", httpPort)

	leader := func() int {
		t.Helper()
		var idx int
		err := pollFor(t, func() bool {
			l, err := c.Client.CoordinationV1().Leases(thawNamespace).Get(t.Context(), "thaw", metav1.GetOptions{})
			if err != nil || l.Spec.HolderIdentity == nil {
				return false
			}
			for i, n := range names {
				if *l.Spec.HolderIdentity == n && replicas[i].proc != nil {
					select {
					case <-replicas[i].proc.Exited():
						return false
					default:
					}
					idx = i
					return true
				}
			}
			return false
		})
		if err != nil {
			t.Fatal("no live replica holds the Lease")
		}
		return idx
	}
	kill := func(i int) {
		t.Helper()
		if err := syscall.Kill(replicas[i].proc.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-replicas[i].proc.Exited()
	}

	const ns = "apps"
	createNamespace(t, c, ns)
	dep := revisionDeployment(ns, "web", 0, map[string]string{
		revision.ThawPrefix + revision.KeyWindow:                 "6s",
		revision.ThawPrefix + revision.KeyScaleToZeroGracePeriod: "1s",
		revision.ThawPrefix + revision.KeyTargetBurstCapacity:    "-1",
	})
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const host = "web.example.com"
	for i := range replicas {
		th := &harness.Thaw{HTTPURL: httpURL, AdminURL: replicas[i].adminURL}
		waitStatus(t, th, ns+"/web", 60*time.Second, "the revision known at zero", func(r map[string]any) bool {
			return r["mode"] == "proxy" && num(r, "ready") == 0
		})
	}
	waitEnvoyRoutes(t, proxy, revision.Key{Namespace: ns, Name: "web"})

	// Held requests on both replicas, then the leader dies.
	const n = 20
	type res struct {
		code int
		err  error
	}
	results := make(chan res, n)
	cl := client(90 * time.Second)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, httpURL+"/", nil)
			req.Host = host
			resp, err := cl.Do(req)
			if err != nil {
				results <- res{err: err}
				return
			}
			defer resp.Body.Close()
			_, err = io.Copy(io.Discard, resp.Body)
			results <- res{code: resp.StatusCode, err: err}
		}()
	}
	held := func(i int) float64 {
		th := &harness.Thaw{HTTPURL: httpURL, AdminURL: replicas[i].adminURL}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := th.Status(ctx)
		if err != nil {
			return -1
		}
		return num(st[ns+"/web"], "held")
	}
	if err := pollFor(t, func() bool { return held(0) > 0 && held(1) > 0 }); err != nil {
		t.Fatalf("held requests: %v on %s, %v on %s; want some on both", held(0), names[0], held(1), names[1])
	}
	first := leader()
	t.Logf("held: %v on %s, %v on %s; killing leader %s", held(0), names[0], held(1), names[1], names[first])
	kill(first)
	var failed []string
	for range n {
		r := <-results
		if r.err != nil || r.code != 200 {
			failed = append(failed, fmt.Sprintf("code=%d err=%v", r.code, r.err))
		}
	}
	if len(failed) > 0 {
		for i := range replicas {
			t.Logf("%s log tail:\n%s", names[i], replicas[i].proc.LogTail(60))
		}
		t.Fatalf("%d of %d held requests failed after the leader was killed: %v", len(failed), n, failed)
	}

	// The killed replica comes back as a follower; proxy-mode traffic
	// flows; the current leader is killed.
	replicas[first] = startThawRunAt(t, kubeconfig, ips[first], names[first], grpcPort, adminPorts[first], httpPort)
	th := &harness.Thaw{HTTPURL: httpURL, AdminURL: replicas[first].adminURL}
	waitStatus(t, th, ns+"/web", 60*time.Second, "restarted replica sees the ready backend", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") >= 1
	})
	load := startLoad(&harness.Thaw{HTTPURL: httpURL}, host, ns+"/web-", 10)
	time.Sleep(2 * time.Second)
	second := leader()
	okBefore := load.ok.Load()
	kill(second)
	time.Sleep(8 * time.Second) // past the Lease duration: a new leader is elected
	ok, bad, fails := load.stop()
	t.Logf("proxy-mode load: %d ok (%d after killing leader %s), %d failed", ok, ok-okBefore, names[second], bad)
	if bad != 0 {
		t.Errorf("%d requests failed when the leader was killed: %v", bad, fails)
	}
	if ok-okBefore == 0 {
		t.Error("no request succeeded after the leader was killed")
	}
}
