package activator

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// A new backend takes activator traffic only once it answered the probe.
func TestProbeGatesNewBackend(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	var healthy atomic.Bool
	var probes atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probes.Add(1)
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	reg := revision.NewRegistry(revision.RegistryOptions{})
	act := New(Options{Probe: &ProbeOptions{Path: "/healthz", Interval: 10 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); act.Run(ctx, reg) }()
	defer func() { cancel(); <-runDone }()
	spec := revision.DefaultSpec()
	spec.Hosts, spec.Port = []string{"demo.example.com"}, int32(port)
	reg.Upsert(demo, spec)
	reg.SetBackends(demo, []revision.Backend{{Address: "127.0.0.1", Port: int32(port), Ready: true}})
	reg.SetSynced()

	got := make(chan result, 1)
	go func() {
		p, rel, err := act.Acquire(ctx, demo)
		got <- result{p, rel, err}
	}()
	// The backend fails its probe: the request stays held. Checked once
	// the request is held and the probe failed three times (bounded wait).
	for i := 0; i < 5000 && (heldCount(act) == 0 || probes.Load() < 3); i++ {
		time.Sleep(2 * time.Millisecond)
	}
	if probes.Load() < 3 {
		t.Fatalf("backend probed %d times in 10s, want >= 3", probes.Load())
	}
	select {
	case r := <-got:
		t.Fatalf("request served (%+v, %v) before the backend answered its probe", r.pod, r.err)
	default:
	}
	healthy.Store(true)
	select {
	case r := <-got:
		if r.err != nil || r.pod.Address != "127.0.0.1:"+strconv.Itoa(port) {
			t.Fatalf("Acquire = %+v, %v", r.pod, r.err)
		}
		r.release()
	case <-time.After(10 * time.Second):
		t.Fatal("request still held 10s after the backend became healthy")
	}
}

func heldCount(a *Activator) int {
	if t := a.throttler(demo); t != nil {
		return int(t.waiting.Load())
	}
	return 0
}

func TestProbeOnceTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	o := ProbeOptions{}.withDefaults()
	if err := o.probeOnce(context.Background(), nil, addr); err != nil {
		t.Fatalf("TCP probe of a listening port: %v", err)
	}
	ln.Close()
	if err := o.probeOnce(context.Background(), nil, addr); err == nil {
		t.Fatal("TCP probe of a closed port succeeded")
	}
}
