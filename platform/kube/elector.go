package kube

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leader election defaults (client-go's usual values for controllers).
const (
	DefaultLeaseName     = "thaw"
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// ElectorOptions configures NewElector. Client, Namespace and Identity are
// required.
type ElectorOptions struct {
	Logger *zap.Logger
	// Client reads and writes the Lease (coordination.k8s.io/v1).
	Client kubernetes.Interface
	// Namespace of the Lease: thaw's own namespace (the manifests give thaw
	// Lease rights there only).
	Namespace string
	// LeaseName: default DefaultLeaseName.
	LeaseName string
	// Identity names this replica in the Lease (the pod name). Unique per
	// replica.
	Identity string
	// LeaseDuration is how long followers wait after the last renewal before
	// taking over a leader that stopped renewing (crashed). Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives up leading. Default 10s; must be < LeaseDuration.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between attempts to acquire or renew. Default
	// 2s.
	RetryPeriod time.Duration
	// KeepOnCancel leaves the Lease held when the elector's context ends,
	// so a successor waits LeaseDuration (tests of crashes use it). By
	// default the Lease is released at once on a clean shutdown and a
	// follower takes over within RetryPeriod.
	KeepOnCancel bool
}

// Elector runs Lease-based leader election (k8s.io/client-go
// tools/leaderelection). It implements the Elector interface of
// internal/app.
type Elector struct {
	opts      ElectorOptions
	lock      *resourcelock.LeaseLock
	observers []func(leading bool)
}

// Observe adds f to be told of leadership changes: f(true) just before
// onStartedLeading runs, f(false) as soon as that term's context ends
// (before onStoppedLeading). Calls for one term finish before the next
// term's f(true). Pass Platform.SetLeader here so the platform writes only
// while leading. Call Observe before Run; it is not safe concurrently with
// Run.
func (e *Elector) Observe(f func(leading bool)) {
	e.observers = append(e.observers, f)
}

func (e *Elector) notify(leading bool) {
	for _, f := range e.observers {
		f(leading)
	}
}

// NewElector returns an Elector. Errors: missing Client, Namespace or
// Identity, or durations that do not satisfy LeaseDuration > RenewDeadline >
// RetryPeriod × 1.2 (client-go's rule).
func NewElector(opts ElectorOptions) (*Elector, error) {
	if opts.Client == nil || opts.Namespace == "" || opts.Identity == "" {
		return nil, errors.New("kube: ElectorOptions.Client, Namespace and Identity are required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.LeaseName == "" {
		opts.LeaseName = DefaultLeaseName
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	if opts.RenewDeadline == 0 {
		opts.RenewDeadline = DefaultRenewDeadline
	}
	if opts.RetryPeriod == 0 {
		opts.RetryPeriod = DefaultRetryPeriod
	}
	e := &Elector{opts: opts, lock: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: opts.Namespace, Name: opts.LeaseName},
		Client:     opts.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: opts.Identity},
	}}
	if _, err := e.config(func(context.Context) {}, func() {}); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Elector) config(started func(context.Context), stopped func()) (*leaderelection.LeaderElector, error) {
	cfg := leaderelection.LeaderElectionConfig{
		Lock:            e.lock,
		LeaseDuration:   e.opts.LeaseDuration,
		RenewDeadline:   e.opts.RenewDeadline,
		RetryPeriod:     e.opts.RetryPeriod,
		ReleaseOnCancel: !e.opts.KeepOnCancel,
		Name:            e.opts.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: started,
			OnStoppedLeading: stopped,
			OnNewLeader: func(identity string) {
				e.opts.Logger.Info("leader", zap.String("identity", identity), zap.Bool("self", identity == e.opts.Identity))
			},
		},
	}
	return leaderelection.NewLeaderElector(cfg)
}

// Run campaigns for the Lease until ctx ends. Each time this replica
// acquires it, onStartedLeading runs with a context that ends when
// leadership is lost (renewal failed for RenewDeadline, or ctx ended); once
// that call has returned, onStoppedLeading runs and Run campaigns again.
// onStoppedLeading is called only after an onStartedLeading, and the two
// never overlap, so the caller never runs two leader terms at once. Run
// returns when ctx ends, after the last callback returned.
func (e *Elector) Run(ctx context.Context, onStartedLeading func(ctx context.Context), onStoppedLeading func()) {
	for ctx.Err() == nil {
		var (
			mu     sync.Mutex
			wg     sync.WaitGroup
			led    bool
			closed bool
		)
		// client-go calls OnStartedLeading in a goroutine that may start
		// after le.Run returned: closed makes such a late call a no-op.
		le, err := e.config(func(leadCtx context.Context) {
			mu.Lock()
			if closed {
				mu.Unlock()
				return
			}
			led = true
			wg.Add(2)
			mu.Unlock()
			defer wg.Done()
			e.opts.Logger.Info("started leading", zap.String("lease", e.opts.Namespace+"/"+e.opts.LeaseName))
			e.notify(true)
			go func() {
				defer wg.Done()
				<-leadCtx.Done()
				e.notify(false)
			}()
			onStartedLeading(leadCtx)
		}, func() {})
		if err != nil { // validated in NewElector
			e.opts.Logger.Error("leader election config", zap.Error(err))
			return
		}
		le.Run(ctx)
		// le.Run returns after cancelling the leader context; wait for the
		// leader's work to end before reporting the loss.
		mu.Lock()
		closed = true
		wasLeader := led
		mu.Unlock()
		wg.Wait()
		if wasLeader {
			e.opts.Logger.Info("stopped leading", zap.String("lease", e.opts.Namespace+"/"+e.opts.LeaseName))
			onStoppedLeading()
		}
	}
}
