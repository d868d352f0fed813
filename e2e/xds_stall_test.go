//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/revision"
)

// TestXDSStoppedEnvoyDoesNotDelayFlips runs three real Envoys on thaw's xDS
// server and stops one (SIGSTOP) while revisions are added and removed. A
// make-before-break stage then waits for the stopped Envoy (StageTimeout is
// 60 s here, so only the ACK ends it): the adds and removes wait, but every
// flip of another revision still reaches the two running Envoys, each one
// before the next change is made. Once the stopped Envoy runs again, all
// three converge. The flip-to-ACK figures are logged, not asserted.
func TestXDSStoppedEnvoyDoesNotDelayFlips(t *testing.T) {
	one, two := startBackend(t, "one"), startBackend(t, "two")
	flipKey := revision.Key{Namespace: "e2e", Name: "flip"}
	env := startXDSEnv(t, xdsEnvOptions{logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), stageTimeout: time.Minute,
		setup: func(reg *revision.Registry) {
			spec := revision.DefaultSpec()
			spec.Hosts = []string{"flip.test"}
			reg.SetBackends(flipKey, []revision.Backend{one.addr(), two.addr()})
			reg.SetMode(flipKey, revision.ModeServe)
			reg.Upsert(flipKey, spec)
		}})
	running := []*harness.Envoy{env.envoy, env.startEnvoy(t, "e2e-xds-2")}
	stopped := env.startEnvoy(t, "e2e-xds-3")
	env.confirm(t, flipKey) // all three ACKed
	if n := len(env.srv.Nodes()); n != 3 {
		t.Fatalf("%d Envoys connected, want 3", n)
	}
	if err := syscall.Kill(stopped.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(stopped.Pid(), syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(resume) // before the harness stops it (cleanups run last-in first)

	// In proxy mode the revision's first host (priority 0) is the activator
	// endpoint; in serve mode it holds only the backends (admin /clusters).
	flipSeen := func(mode revision.Mode) time.Duration {
		t.Helper()
		start := time.Now()
		env.reg.SetMode(flipKey, mode)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, e := range running {
			for {
				hosts, err := clusterHosts(ctx, e, "rev_e2e_flip")
				if err == nil && len(hosts) > 0 && slices.Contains(hosts, activatorHost) == (mode == revision.ModeProxy) {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("running Envoy never got the flip to %s (hosts %v, %v): it queued behind the stage", mode, hosts, err)
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
		return time.Since(start)
	}

	var added []revision.Key
	var took []time.Duration
	mode := revision.ModeServe
	for i := range 5 {
		key := revision.Key{Namespace: "e2e", Name: fmt.Sprintf("r%d", i)}
		spec := revision.DefaultSpec()
		spec.Hosts = []string{key.Name + ".test"}
		env.reg.SetBackends(key, []revision.Backend{one.addr()})
		env.reg.SetMode(key, revision.ModeServe)
		env.reg.Upsert(key, spec) // a stage waits for the stopped Envoy
		added = append(added, key)
		if i%2 == 1 {
			env.reg.Delete(added[0]) // a removal waits too
			added = added[1:]
		}
		for range 2 {
			if mode == revision.ModeServe {
				mode = revision.ModeProxy
			} else {
				mode = revision.ModeServe
			}
			took = append(took, flipSeen(mode))
		}
	}
	slices.Sort(took)
	t.Logf("flip to both running Envoys (SetMode, holdoff 0, to admin /clusters showing it, 2 ms polling), %d flips with one Envoy stopped: p50 %v, p99 %v, max %v",
		len(took), took[len(took)/2], took[(len(took)*99+99)/100-1], took[len(took)-1])
	// The flips went out while the stage waited: the later adds are still
	// held back behind it (make-before-break for the stopped Envoy).
	last := added[len(added)-1]
	for _, e := range running {
		if hosts, err := clusterHosts(context.Background(), e, "rev_e2e_"+last.Name); err != nil || len(hosts) != 0 {
			t.Fatalf("%s reached a running Envoy before the stopped one answered (hosts %v, %v): no stage was pending", last, hosts, err)
		}
	}
	if env.srv.ConfirmedEverywhere(flipKey, env.reg.Snapshot().Get(flipKey).Generation) {
		t.Error("the last flip is confirmed everywhere while one Envoy is stopped")
	}

	// The stopped Envoy runs again: every Envoy gets every change.
	resume()
	for _, key := range append([]revision.Key{flipKey}, added...) {
		env.confirm(t, key)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, e := range append(running, stopped) {
		for _, key := range added {
			name := "rev_e2e_" + key.Name
			for {
				if hosts, err := clusterHosts(ctx, e, name); err == nil && slices.Equal(hosts, []string{fmt.Sprintf("127.0.0.1:%d", one.port)}) {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("an Envoy never got %s after the stopped one resumed", key)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	env.noNACKs(t)
}

// activatorHost is the proxy-mode endpoint as admin /clusters names it.
const activatorHost = "envoy://thaw_activator/"

// clusterHosts returns the hosts Envoy holds for cluster (admin /clusters,
// one health_flags line per host), in its order; none for an unknown
// cluster.
func clusterHosts(ctx context.Context, e *harness.Envoy, cluster string) ([]string, error) {
	body, code, err := e.Admin(ctx, "/clusters")
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("admin /clusters: %d", code)
	}
	var hosts []string
	for _, line := range strings.Split(body, "\n") {
		host, ok := strings.CutPrefix(line, cluster+"::")
		if i := strings.Index(host, "::health_flags::"); ok && i >= 0 {
			hosts = append(hosts, host[:i])
		}
	}
	return hosts, nil
}
