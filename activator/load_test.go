package activator

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// Backends come and go and container concurrency changes while 32 workers
// hammer the revision: no backend ever has more requests than the limit in
// force, every request is served, and the counts return to zero.
func TestCapacityUpdatesUnderLoad(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	act := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); act.Run(ctx, reg) }()
	defer func() { cancel(); <-runDone }()

	spec := revision.DefaultSpec()
	spec.Hosts, spec.Port, spec.ContainerConcurrency, spec.HoldTimeout = []string{"demo.example.com"}, 8080, 2, time.Minute
	reg.Upsert(demo, spec)
	all := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"}
	setBackends := func(addrs ...string) {
		bs := make([]revision.Backend, 0, len(addrs))
		for _, a := range addrs {
			bs = append(bs, revision.Backend{Address: a, Port: 8080, Ready: true})
		}
		reg.SetBackends(demo, bs)
	}
	setBackends(all[0])
	reg.SetSynced()

	var mu sync.Mutex
	current := map[string]int{}
	var violations, served atomic.Int64
	const workers, perWorker = 32, 300
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
				pod, release, err := act.Acquire(rctx, demo)
				rcancel()
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				mu.Lock()
				current[pod.Address]++
				if current[pod.Address] > 2 { // the highest limit used below
					violations.Add(1)
				}
				mu.Unlock()
				runtime.Gosched() // let others run while this request is "in flight"
				mu.Lock()
				current[pod.Address]--
				mu.Unlock()
				served.Add(1)
				release()
			}
		}()
	}
	// Churn: bounded number of backend and limit changes while workers run.
	churnDone := make(chan struct{})
	go func() {
		defer close(churnDone)
		for i := 0; i < 200; i++ {
			n := 1 + i%len(all)
			setBackends(all[:n]...)
			if i%10 == 0 {
				s := spec
				s.ContainerConcurrency = 1 + i%2
				reg.Upsert(demo, s)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	<-churnDone
	if v := violations.Load(); v != 0 {
		t.Errorf("%d times a backend had more than 2 requests in flight", v)
	}
	if got := served.Load(); got != workers*perWorker {
		t.Errorf("served %d requests, want %d", got, workers*perWorker)
	}
	if held, inFlight := act.Stats(demo); held != 0 || inFlight != 0 {
		t.Errorf("after the load: %d held, %d in flight; want 0, 0", held, inFlight)
	}
	for _, p := range act.throttler(demo).state.Load().pods {
		if n := p.inFlight.Load(); n != 0 {
			t.Errorf("tracker %s still counts %d in flight", p.addr, n)
		}
	}
}

// With container concurrency 1, the tracker counts themselves never exceed
// 1 even with many more requests than slots.
func TestContainerConcurrencyOneStrict(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	act := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); act.Run(ctx, reg) }()
	defer func() { cancel(); <-runDone }()
	spec := revision.DefaultSpec()
	spec.Hosts, spec.Port, spec.ContainerConcurrency = []string{"demo.example.com"}, 8080, 1
	reg.Upsert(demo, spec)
	reg.SetBackends(demo, []revision.Backend{{Address: "127.0.0.1", Port: 8080, Ready: true}, {Address: "127.0.0.2", Port: 8080, Ready: true}})
	reg.SetSynced()

	per := map[string]*atomic.Int64{"127.0.0.1:8080": {}, "127.0.0.2:8080": {}}
	var maxSeen atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				pod, release, err := act.Acquire(ctx, demo)
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				c := per[pod.Address]
				if c == nil {
					t.Errorf("unknown pod %q", pod.Address)
					return
				}
				n := c.Add(1)
				for {
					m := maxSeen.Load()
					if n <= m || maxSeen.CompareAndSwap(m, n) {
						break
					}
				}
				runtime.Gosched()
				c.Add(-1)
				release()
			}
		}()
	}
	wg.Wait()
	if m := maxSeen.Load(); m != 1 {
		t.Fatalf("max concurrent requests seen on one backend = %d, want 1", m)
	}
}
