package control

import (
	"context"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

type fakeConfirmer struct {
	mu        sync.Mutex
	confirmed map[revision.Key]uint64 // highest generation confirmed
}

func (f *fakeConfirmer) ConfirmedEverywhere(key revision.Key, gen uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.confirmed[key] >= gen
}

func (f *fakeConfirmer) confirm(key revision.Key, gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.confirmed[key] = gen
}

func newSpec() revision.Spec {
	s := revision.DefaultSpec()
	s.Hosts = []string{"a.example.com"}
	return s
}

func TestControllerFlipsAndConfirms(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	reg := revision.NewRegistry(revision.RegistryOptions{})
	conf := &fakeConfirmer{confirmed: map[revision.Key]uint64{}}
	c := New(Options{Clock: clk, Registry: reg, Confirmer: conf})
	key := revision.Key{Namespace: "ns", Name: "a"}
	reg.Upsert(key, newSpec())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()

	// Backends appear: serve mode (no decision yet).
	reg.SetBackends(key, []revision.Backend{{Address: "127.0.0.1", Port: 1, Ready: true}})
	waitMode(t, reg, key, revision.ModeServe)
	if _, ok := c.ProxyConfirmedSince(key); ok {
		t.Fatal("confirmed while in serve mode")
	}

	// The decider wants zero: proxy mode, not confirmed until Envoy ACKs.
	c.RecordDecision(autoscaler.Decision{Key: key, Valid: true, WantZero: true, DesiredScale: 1})
	waitMode(t, reg, key, revision.ModeProxy)
	if _, ok := c.ProxyConfirmedSince(key); ok {
		t.Fatal("confirmed before any ACK")
	}
	gen := reg.Snapshot().Get(key).Generation
	conf.confirm(key, gen)
	since, ok := c.ProxyConfirmedSince(key)
	if !ok || !since.Equal(clk.Now()) {
		t.Fatalf("ProxyConfirmedSince = %v, %v; want now, true", since, ok)
	}
	clk.Step(10 * time.Second)
	// A backend change in proxy mode keeps the original confirmation time.
	reg.SetBackends(key, nil)
	if since2, ok := c.ProxyConfirmedSince(key); !ok || !since2.Equal(since) {
		t.Errorf("after backend change = %v, %v; want %v, true", since2, ok, since)
	}

	// Back to serve, then proxy again: a new clock.
	reg.SetBackends(key, []revision.Backend{{Address: "127.0.0.1", Port: 1, Ready: true}})
	c.RecordDecision(autoscaler.Decision{Key: key, Valid: true, ExcessBurstCapacity: 5, DesiredScale: 1})
	waitMode(t, reg, key, revision.ModeServe)
	c.RecordDecision(autoscaler.Decision{Key: key, Valid: true, WantZero: true, DesiredScale: 1})
	waitMode(t, reg, key, revision.ModeProxy)
	if _, ok := c.ProxyConfirmedSince(key); ok {
		t.Error("new proxy period confirmed by the old ACK")
	}
	cancel()
	<-done
}

func waitMode(t *testing.T, reg *revision.Registry, key revision.Key, want revision.Mode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := reg.WaitFor(ctx, func(s *revision.Snapshot) bool {
		r := s.Get(key)
		return r != nil && r.Mode == want
	}); err != nil {
		t.Fatalf("mode never became %v: now %+v", want, reg.Snapshot().Get(key))
	}
}

// TestConfirmationKeyedByGeneration bounces a confirmed proxy-mode revision
// through serve mode and back between two ProxyConfirmedSince calls (within
// one autoscaler tick, without the controller seeing the serve period): the
// old confirmation must not count for the new proxy period.
func TestConfirmationKeyedByGeneration(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	reg := revision.NewRegistry(revision.RegistryOptions{})
	conf := &fakeConfirmer{confirmed: map[revision.Key]uint64{}}
	c := New(Options{Clock: clk, Registry: reg, Confirmer: conf})
	key := revision.Key{Namespace: "ns", Name: "a"}
	reg.Upsert(key, newSpec())
	reg.SetBackends(key, []revision.Backend{{Address: "127.0.0.1", Port: 1, Ready: true}})

	first := reg.Snapshot().Get(key)
	if first.Mode != revision.ModeProxy {
		t.Fatalf("new revision in mode %v, want proxy", first.Mode)
	}
	conf.confirm(key, first.Generation)
	since, ok := c.ProxyConfirmedSince(key)
	if !ok || !since.Equal(clk.Now()) {
		t.Fatalf("first period: ProxyConfirmedSince = %v, %v; want now, true", since, ok)
	}

	clk.Step(time.Second)
	reg.SetMode(key, revision.ModeServe)
	reg.SetMode(key, revision.ModeProxy)
	bounced := reg.Snapshot().Get(key)
	if bounced.Generation <= first.Generation || bounced.ModeGeneration != bounced.Generation {
		t.Fatalf("after bounce: generation %d, mode generation %d; want both > %d and equal",
			bounced.Generation, bounced.ModeGeneration, first.Generation)
	}
	if _, ok := c.ProxyConfirmedSince(key); ok {
		t.Fatal("new proxy period confirmed by the previous period's ACK")
	}

	// A backend change within the new period: the period's ACK still counts.
	conf.confirm(key, bounced.Generation)
	since2, ok := c.ProxyConfirmedSince(key)
	if !ok || !since2.Equal(clk.Now()) {
		t.Fatalf("new period after its ACK: ProxyConfirmedSince = %v, %v; want now, true", since2, ok)
	}
	clk.Step(time.Second)
	reg.SetBackends(key, nil)
	if since3, ok := c.ProxyConfirmedSince(key); !ok || !since3.Equal(since2) {
		t.Errorf("after backend change: ProxyConfirmedSince = %v, %v; want %v, true", since3, ok, since2)
	}
}

// TestRecordDecisionIsOneRegistryUpdate checks that a decision that changes
// both the desired scale and the mode reaches the registry as one update
// (one publication with holdoff 0), and that a decision for a revision the
// registry no longer has leaves nothing behind.
func TestRecordDecisionIsOneRegistryUpdate(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	c := New(Options{Registry: reg, Confirmer: &fakeConfirmer{confirmed: map[revision.Key]uint64{}}})
	key := revision.Key{Namespace: "ns", Name: "a"}
	reg.Upsert(key, newSpec())
	reg.SetBackends(key, []revision.Backend{{Address: "127.0.0.1", Port: 1, Ready: true}})
	reg.SetMode(key, revision.ModeServe)

	before := reg.Snapshot()
	c.RecordDecision(autoscaler.Decision{Key: key, Valid: true, WantZero: true, DesiredScale: 0})
	after := reg.Snapshot()
	rev := after.Get(key)
	if after.Version != before.Version+1 {
		t.Errorf("versions %d -> %d: want one publication for desired scale and mode", before.Version, after.Version)
	}
	if rev.Mode != revision.ModeProxy || rev.DesiredScale != 0 || rev.ModeGeneration != rev.Generation {
		t.Errorf("after the decision: %+v, want proxy mode, desired 0, mode changed at this generation", rev)
	}
	// The same decision again changes nothing.
	c.RecordDecision(autoscaler.Decision{Key: key, Valid: true, WantZero: true, DesiredScale: 0})
	if v := reg.Snapshot().Version; v != after.Version {
		t.Errorf("a repeated decision published version %d", v)
	}
	// Desired scale alone does not bump the generation Envoy follows.
	c.RecordDecision(autoscaler.Decision{Key: key, Valid: true, WantZero: true, DesiredScale: 1})
	if r := reg.Snapshot().Get(key); r.DesiredScale != 1 || r.Generation != rev.Generation {
		t.Errorf("desired 1: %+v, want generation %d kept", r, rev.Generation)
	}

	reg.Delete(key)
	c.RecordDecision(autoscaler.Decision{Key: key, Valid: true, DesiredScale: 2})
	c.mu.Lock()
	n := len(c.recs)
	c.mu.Unlock()
	if n != 0 || reg.Snapshot().Get(key) != nil {
		t.Errorf("a decision for a deleted revision left %d recommendations, revision %+v", n, reg.Snapshot().Get(key))
	}
}
