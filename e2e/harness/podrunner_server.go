package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

const (
	// listenAttempts and listenRetry bound the wait for a pod IP whose
	// previous owner (kwok recycles IPs) has not closed its listener yet.
	listenAttempts = 50
	listenRetry    = 100 * time.Millisecond
	// drainTimeout bounds the graceful shutdown of a pod server.
	drainTimeout = 5 * time.Second
)

// podStats are the live counters of one pod; all fields are atomics.
type podStats struct {
	requests, inFlight, maxInFlight atomic.Int64
}

func (s *podStats) snapshot() PodStats {
	return PodStats{Requests: s.requests.Load(), InFlight: s.inFlight.Load(), MaxInFlight: s.maxInFlight.Load()}
}

// podServer serves one pod (one UID at one IP) until stopped.
type podServer struct {
	r                   *PodRunner
	pod                 *corev1.Pod // as first seen; read-only
	namespace, name, ip string
	uid                 types.UID
	stats               *podStats
	ctx                 context.Context
	stop                context.CancelFunc
	serving             atomic.Bool
}

func newPodServer(r *PodRunner, pod *corev1.Pod, stats *podStats) *podServer {
	ctx, cancel := context.WithCancel(r.ctx)
	return &podServer{
		r: r, pod: pod, stats: stats, ctx: ctx, stop: cancel,
		namespace: pod.Namespace, name: pod.Name, ip: pod.Status.PodIP, uid: pod.UID,
	}
}

func (s *podServer) isServing() bool { return s.serving.Load() }

// recreate deletes a controller-owned pod whose IP another live pod holds
// (kwok occasionally hands one IP to two pods created at once), as a
// kubelet would fail its sandbox: the controller replaces it with a pod
// that gets a fresh IP. A pod without a controller is left as it is.
func (s *podServer) recreate() {
	if metav1.GetControllerOf(s.pod) == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	uid := s.uid
	err := s.r.client.CoreV1().Pods(s.namespace).Delete(ctx, s.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid}, GracePeriodSeconds: new(int64)})
	if err != nil && s.ctx.Err() == nil {
		s.r.logf("pod %s/%s: delete after a failed listen: %v", s.namespace, s.name, err)
		return
	}
	s.r.logf("pod %s/%s: deleted after a failed listen, so its controller recreates it", s.namespace, s.name)
}

// ports returns the TCP container ports of the pod, or the default port.
func (s *podServer) ports() []int32 {
	var ports []int32
	for _, c := range s.pod.Spec.Containers {
		for _, p := range c.Ports {
			if (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) && !slices.Contains(ports, p.ContainerPort) {
				ports = append(ports, p.ContainerPort)
			}
		}
	}
	if len(ports) == 0 {
		ports = []int32{s.r.opts.DefaultPort}
	}
	return ports
}

// run waits the startup delay, listens, marks the pod Ready, serves until
// stopped, then drains.
func (s *podServer) run() {
	if d := s.r.opts.StartupDelay; d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-s.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
	var listeners []net.Listener
	for _, port := range s.ports() {
		ln, err := s.listen(net.JoinHostPort(s.ip, strconv.Itoa(int(port))))
		if err != nil {
			if s.ctx.Err() == nil {
				s.r.logf("pod %s/%s: %v", s.namespace, s.name, err)
				s.recreate()
			}
			for _, l := range listeners {
				_ = l.Close()
			}
			return
		}
		listeners = append(listeners, ln)
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	for _, ln := range listeners {
		go func() { _ = srv.Serve(ln) }()
	}
	s.serving.Store(true)
	if err := s.markReady(); err != nil && s.ctx.Err() == nil {
		s.r.logf("pod %s/%s: mark Ready: %v", s.namespace, s.name, err)
	}
	<-s.ctx.Done()
	s.serving.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
}

// listen binds addr, retrying while the address is still held by the
// server of a pod that had the same IP before.
func (s *podServer) listen(addr string) (net.Listener, error) {
	var lastErr error
	for range listenAttempts {
		var lc net.ListenConfig
		ln, err := lc.Listen(s.ctx, "tcp", addr)
		if err == nil {
			return ln, nil
		}
		lastErr = err
		select {
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		case <-time.After(listenRetry):
		}
	}
	return nil, fmt.Errorf("listen %s: %w", addr, lastErr)
}

// handler counts requests, waits the configured latency and answers with
// the pod's body (or hands over to PodRunnerOptions.Handler).
func (s *podServer) handler() http.Handler {
	latency := s.r.opts.Latency
	inner := s.r.opts.Handler
	var next http.Handler
	if inner != nil {
		next = inner(s.pod)
	} else {
		body := s.r.opts.Body(s.pod)
		next = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, body)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.stats.requests.Add(1)
		n := s.stats.inFlight.Add(1)
		defer s.stats.inFlight.Add(-1)
		for {
			m := s.stats.maxInFlight.Load()
			if n <= m || s.stats.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		if latency > 0 {
			timer := time.NewTimer(latency)
			select {
			case <-req.Context().Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		w.Header().Set("X-Pod-Name", s.name)
		w.Header().Set("X-Pod-Namespace", s.namespace)
		w.Header().Set("X-Pod-IP", s.ip)
		next.ServeHTTP(w, req)
	})
}

// errPodReplaced is returned by markReady when the pod it was started for is
// gone or has a new UID.
var errPodReplaced = errors.New("pod was replaced")

// markReady sets the Ready and ContainersReady conditions (and container
// readiness) of the pod to true, unless they already are.
func (s *podServer) markReady() error {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	pods := s.r.client.CoreV1().Pods(s.namespace)
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		pod, err := pods.Get(ctx, s.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return errPodReplaced
		}
		if err != nil {
			return err
		}
		if pod.UID != s.uid || pod.DeletionTimestamp != nil {
			return errPodReplaced
		}
		if !setPodReady(pod, metav1.Now()) {
			return nil
		}
		_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}

// setPodReady marks the pod and its containers ready; it reports whether
// anything changed.
func setPodReady(pod *corev1.Pod, now metav1.Time) bool {
	changed := false
	for _, typ := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		found := false
		for i := range pod.Status.Conditions {
			c := &pod.Status.Conditions[i]
			if c.Type != typ {
				continue
			}
			found = true
			if c.Status != corev1.ConditionTrue {
				c.Status, c.LastTransitionTime, c.Reason, c.Message = corev1.ConditionTrue, now, "", ""
				changed = true
			}
		}
		if !found {
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: now})
			changed = true
		}
	}
	for i := range pod.Status.ContainerStatuses {
		if !pod.Status.ContainerStatuses[i].Ready {
			pod.Status.ContainerStatuses[i].Ready = true
			changed = true
		}
	}
	return changed
}
