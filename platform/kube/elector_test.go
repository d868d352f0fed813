package kube

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

func TestNewElectorValidates(t *testing.T) {
	c := fake.NewClientset()
	tests := []struct {
		name string
		opts ElectorOptions
	}{
		{"no client", ElectorOptions{Namespace: "thaw-system", Identity: "a"}},
		{"no namespace", ElectorOptions{Client: c, Identity: "a"}},
		{"no identity", ElectorOptions{Client: c, Namespace: "thaw-system"}},
		{"renew >= lease", ElectorOptions{Client: c, Namespace: "thaw-system", Identity: "a",
			LeaseDuration: 5 * time.Second, RenewDeadline: 5 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewElector(tt.opts); err == nil {
				t.Error("accepted")
			}
		})
	}
	if _, err := NewElector(ElectorOptions{Client: c, Namespace: "thaw-system", Identity: "a"}); err != nil {
		t.Errorf("defaults rejected: %v", err)
	}
}

// TestElectorHandsOver runs two electors on a fake clientset: one leads,
// and when its context ends the other takes over (the Lease is released on
// cancel). The real-apiserver version lives in e2e/kube_test.go.
func TestElectorHandsOver(t *testing.T) {
	c := fake.NewClientset()
	newE := func(id string) *Elector {
		e, err := NewElector(ElectorOptions{Client: c, Namespace: "thaw-system", Identity: id,
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	var leaders atomic.Int32
	started := make(chan string, 4)
	stopped := make(chan string, 4)
	var obsMu sync.Mutex
	observed := map[string][]bool{}
	run := func(ctx context.Context, id string) chan struct{} {
		done := make(chan struct{})
		e := newE(id)
		e.Observe(func(leading bool) {
			obsMu.Lock()
			observed[id] = append(observed[id], leading)
			obsMu.Unlock()
		})
		go func() {
			defer close(done)
			e.Run(ctx, func(ctx context.Context) {
				if n := leaders.Add(1); n != 1 {
					t.Errorf("%d leaders at once", n)
				}
				obsMu.Lock()
				if o := observed[id]; len(o) == 0 || !o[len(o)-1] {
					t.Errorf("%s: onStartedLeading before Observe(true): %v", id, o)
				}
				obsMu.Unlock()
				started <- id
				<-ctx.Done()
				leaders.Add(-1)
			}, func() { stopped <- id })
		}()
		return done
	}
	ctxA, cancelA := context.WithCancel(t.Context())
	ctxB, cancelB := context.WithCancel(t.Context())
	defer cancelB()
	doneA := run(ctxA, "a")
	first := recv(t, started)
	if first != "a" {
		t.Fatalf("first leader %q, want a (b not started)", first)
	}
	doneB := run(ctxB, "b")
	cancelA()
	<-doneA
	if got := recv(t, stopped); got != "a" {
		t.Errorf("stopped %q, want a", got)
	}
	if got := recv(t, started); got != "b" {
		t.Errorf("second leader %q, want b", got)
	}
	cancelB()
	<-doneB
	if got := recv(t, stopped); got != "b" {
		t.Errorf("stopped %q, want b", got)
	}
	for _, id := range []string{"a", "b"} {
		if o := observed[id]; len(o) != 2 || !o[0] || o[1] {
			t.Errorf("%s observed %v, want [true false]", id, o)
		}
	}
}

func recv(t *testing.T, ch chan string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("timed out (deadlock guard)")
		return ""
	}
}
