package harness

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodRunnerOptions configures StartPodRunner.
type PodRunnerOptions struct {
	// Namespace limits the runner to one namespace; empty means all.
	Namespace string
	// StartupDelay is how long a pod takes to start serving once it is
	// Running with an IP: the simulated application start time.
	StartupDelay time.Duration
	// Latency is added to every request before its response is written
	// (the request's context ending cuts it short).
	Latency time.Duration
	// Body returns the response body for a pod; default
	// "<namespace>/<name>\n". It is called once when the pod starts serving.
	Body func(pod *corev1.Pod) string
	// Handler, if set, builds the handler that serves a pod instead of the
	// default one (Body is then unused; Latency and the counters still
	// apply). It is called once when the pod starts serving.
	Handler func(pod *corev1.Pod) http.Handler
	// DefaultPort is served for pods whose containers declare no TCP port
	// (default 8080). Pods that declare ports are served on every declared
	// TCP containerPort.
	DefaultPort int32
}

// PodRunner plays the containers of the pods in a test cluster: for every
// Running pod with a loopback IP it serves HTTP on podIP:containerPort after
// StartupDelay, and stops when the pod is deleted, starts terminating, or
// changes IP. When the pod is not Ready yet (the cluster's default, see
// ClusterOptions.ImmediateReady), it marks it Ready once it listens, the way
// a kubelet readiness probe would; so Ready always means "accepts
// connections". Every response carries the headers X-Pod-Name,
// X-Pod-Namespace and X-Pod-IP.
//
// Counters are kept by namespace and name and survive the pod, so a test can
// read them after a scale-down (a recreated pod of the same name adds to
// them).
type PodRunner struct {
	client kubernetes.Interface
	opts   PodRunnerOptions
	logf   func(format string, args ...any)

	ctx     context.Context // ends at Stop; parent of every pod server
	cancel  context.CancelFunc
	factory informers.SharedInformerFactory
	wg      sync.WaitGroup // pod servers

	mu      sync.Mutex
	servers map[types.UID]*podServer
	stats   map[types.NamespacedName]*podStats
	stopped bool
}

// StartPodRunner starts a PodRunner that watches pods through client and
// waits (up to 30 s) for its informer to sync; it fails the test otherwise.
// The test's cleanup stops it; Stop may be called earlier.
func StartPodRunner(t testing.TB, client kubernetes.Interface, opts PodRunnerOptions) *PodRunner {
	t.Helper()
	if opts.Body == nil {
		opts.Body = func(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name + "\n" }
	}
	if opts.DefaultPort == 0 {
		opts.DefaultPort = 8080
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &PodRunner{
		client:  client,
		opts:    opts,
		ctx:     ctx,
		cancel:  cancel,
		servers: map[types.UID]*podServer{},
		stats:   map[types.NamespacedName]*podStats{},
	}
	var logMu sync.Mutex
	r.logf = func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		if !r.isStopped() {
			t.Logf("pod runner: "+format, args...)
		}
	}
	r.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(opts.Namespace))
	informer := r.factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.sync(obj) },
		UpdateFunc: func(_, obj any) { r.sync(obj) },
		DeleteFunc: r.forget,
	}); err != nil {
		cancel()
		t.Fatalf("pod runner: %v", err)
	}
	t.Cleanup(r.Stop)
	r.factory.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		t.Fatalf("pod runner: pod informer did not sync")
	}
	return r
}

// Stop stops watching and shuts every pod server down (in-flight requests
// get up to 5 s to finish). It is idempotent.
func (r *PodRunner) Stop() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.stopped = true
	r.mu.Unlock()
	r.cancel()
	r.factory.Shutdown()
	r.wg.Wait()
}

func (r *PodRunner) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// servable reports whether pod should be served now.
func servable(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return false
	}
	ip := net.ParseIP(pod.Status.PodIP)
	return ip != nil && ip.IsLoopback()
}

// sync starts or stops the server of one pod after an informer event. It
// never blocks: servers start and stop in their own goroutines.
func (r *PodRunner) sync(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	s := r.servers[pod.UID]
	want := servable(pod)
	if s != nil && (!want || s.ip != pod.Status.PodIP) {
		s.stop()
		delete(r.servers, pod.UID)
		s = nil
	}
	if !want || s != nil {
		return
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	st := r.stats[key]
	if st == nil {
		st = &podStats{}
		r.stats[key] = st
	}
	s = newPodServer(r, pod.DeepCopy(), st)
	r.servers[pod.UID] = s
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		s.run()
	}()
}

// forget stops the server of a deleted pod.
func (r *PodRunner) forget(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.servers[pod.UID]; s != nil {
		s.stop()
		delete(r.servers, pod.UID)
	}
}

// PodStats are the counters of one pod (by namespace and name).
type PodStats struct {
	// Requests is the number of requests received.
	Requests int64
	// InFlight is the number of requests being served now.
	InFlight int64
	// MaxInFlight is the highest InFlight seen.
	MaxInFlight int64
}

// Stats returns the counters of every pod served so far, by "namespace/name".
func (r *PodRunner) Stats() map[string]PodStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]PodStats, len(r.stats))
	for key, st := range r.stats {
		out[key.String()] = st.snapshot()
	}
	return out
}

// PodStats returns the counters of one pod (zero if it was never served).
func (r *PodRunner) PodStats(namespace, name string) PodStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.stats[types.NamespacedName{Namespace: namespace, Name: name}]; st != nil {
		return st.snapshot()
	}
	return PodStats{}
}

// Serving reports whether the pod namespace/name is listening now.
func (r *PodRunner) Serving(namespace, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.servers {
		if s.namespace == namespace && s.name == name {
			return s.isServing()
		}
	}
	return false
}

// String describes the runner for logs.
func (r *PodRunner) String() string {
	return fmt.Sprintf("pod runner (namespace %q, startup %v, latency %v)", r.opts.Namespace, r.opts.StartupDelay, r.opts.Latency)
}
