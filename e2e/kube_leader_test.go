//go:build e2e

package e2e

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/platform/kube"
	"github.com/thaw-dev/thaw/revision"
)

// Lease timings of the leader-election test: shorter than the defaults
// (15s/10s/2s) to keep the test short, same ratios.
const (
	testLeaseDuration = 6 * time.Second
	testRenewDeadline = 4 * time.Second
	testRetryPeriod   = 500 * time.Millisecond
)

// thawReplica is one simulated thaw replica: a platform with Elected set
// and an Elector on the Lease thaw-system/thaw, both as thaw's
// ServiceAccount.
type thawReplica struct {
	name    string
	kp      *kubePlatform
	cancel  context.CancelFunc
	done    chan struct{}
	started chan time.Time // one value per term
	stopped chan time.Time
}

// leaderTracker fails the test if two replicas lead at once.
type leaderTracker struct {
	t      *testing.T
	active atomic.Int32
}

// startReplica starts a replica; keepOnCancel makes cancelling it look like
// a crash (the Lease is not released).
func startReplica(t *testing.T, env *kubeEnv, lt *leaderTracker, name string, keepOnCancel bool) *thawReplica {
	t.Helper()
	r := &thawReplica{name: name, done: make(chan struct{}), started: make(chan time.Time, 4), stopped: make(chan time.Time, 4)}
	r.kp = startKubePlatform(t, env, func(o *kube.Options) { o.Elected = true })
	e, err := kube.NewElector(kube.ElectorOptions{
		Logger: zaptest.NewLogger(t).Named(name), Client: env.ThawClient, Namespace: thawNamespace, Identity: name,
		LeaseDuration: testLeaseDuration, RenewDeadline: testRenewDeadline, RetryPeriod: testRetryPeriod,
		KeepOnCancel: keepOnCancel,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(r.kp.P.SetLeader)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		e.Run(ctx, func(ctx context.Context) {
			if n := lt.active.Add(1); n != 1 {
				lt.t.Errorf("%s started leading while %d replicas lead", name, n-1)
			}
			r.started <- time.Now()
			<-ctx.Done()
			lt.active.Add(-1)
		}, func() { r.stopped <- time.Now() })
	}()
	t.Cleanup(r.stop)
	return r
}

// stop cancels the replica's elector and waits for it to return
// (idempotent).
func (r *thawReplica) stop() {
	r.cancel()
	<-r.done
}

// waitLeading waits (at most 60 s) for the replica's next term.
func (r *thawReplica) waitLeading(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-r.started:
		return at
	case <-time.After(60 * time.Second):
		t.Fatalf("%s never started leading", r.name)
		return time.Time{}
	}
}

// TestKubeLeaderElection runs simulated thaw replicas against the real
// apiserver as thaw's ServiceAccount (RBAC: the Role on the Lease from
// manifests/): one leads at a time, only the leader's platform patches
// /scale, a clean shutdown hands over within a retry period, and a crash
// (Lease not released) hands over once the Lease expires.
func TestKubeLeaderElection(t *testing.T) {
	env := startKubeEnv(t, 100*time.Millisecond)
	c := env.Cluster
	const ns = "apps"
	createNamespace(t, c, ns)
	web := revision.Key{Namespace: ns, Name: "web"}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), revisionDeployment(ns, "web", 0, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lt := &leaderTracker{t: t}

	a := startReplica(t, env, lt, "thaw-a", false)
	a.waitLeading(t)
	b := startReplica(t, env, lt, "thaw-b", true)
	for _, r := range []*thawReplica{a, b} {
		r.kp.wait(t, r.name+" sees web", func(s *revision.Snapshot) bool { return s.Get(web) != nil })
	}
	lease, err := c.Client.CoordinationV1().Leases(thawNamespace).Get(t.Context(), kube.DefaultLeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "thaw-a" {
		t.Fatalf("Lease %s/%s holder %v (%v), want thaw-a", thawNamespace, kube.DefaultLeaseName, lease.Spec.HolderIdentity, err)
	}

	// Only the leader writes.
	if err := b.kp.P.SetScale(t.Context(), web, 5); !errors.Is(err, kube.ErrNotLeader) {
		t.Fatalf("follower SetScale: %v, want ErrNotLeader", err)
	}
	if err := a.kp.P.SetScale(t.Context(), web, 1); err != nil {
		t.Fatalf("leader SetScale: %v", err)
	}
	b.kp.wait(t, "web ready on the follower's view too", func(s *revision.Snapshot) bool { return len(readyBackends(s, web)) == 1 })

	// Clean shutdown of the leader: the Lease is released, b takes over.
	stopAt := time.Now()
	a.stop()
	select {
	case <-a.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("thaw-a: onStoppedLeading not called")
	}
	handover := b.waitLeading(t).Sub(stopAt)
	t.Logf("clean shutdown: thaw-b leads %v after thaw-a stopped (retry period %v)", handover.Round(time.Millisecond), testRetryPeriod)
	if err := a.kp.P.SetScale(t.Context(), web, 3); !errors.Is(err, kube.ErrNotLeader) {
		t.Errorf("stopped leader SetScale: %v, want ErrNotLeader", err)
	}
	if err := b.kp.P.SetScale(t.Context(), web, 2); err != nil {
		t.Fatalf("new leader SetScale: %v", err)
	}
	b.kp.wait(t, "web at 2", func(s *revision.Snapshot) bool { return len(readyBackends(s, web)) == 2 })

	// Crash of the leader (Lease kept): c takes over once it expires.
	cr := startReplica(t, env, lt, "thaw-c", false)
	cr.kp.wait(t, "thaw-c sees web", func(s *revision.Snapshot) bool { return len(readyBackends(s, web)) == 2 })
	crashAt := time.Now()
	b.stop()
	handover = cr.waitLeading(t).Sub(crashAt)
	t.Logf("crash: thaw-c leads %v after thaw-b stopped renewing (lease duration %v)", handover.Round(time.Millisecond), testLeaseDuration)
	if b.kp.P.Leading() {
		t.Error("crashed replica still thinks it leads")
	}
	if err := cr.kp.P.SetScale(t.Context(), web, 0); err != nil {
		t.Fatalf("thaw-c SetScale: %v", err)
	}
	cr.kp.wait(t, "web at 0", func(s *revision.Snapshot) bool { return s.Get(web) != nil && len(readyBackends(s, web)) == 0 })
	waitEvent(t, c.Client, ns, "web", kube.ReasonScaled, "from 2 to 0")
}
