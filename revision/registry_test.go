package revision

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"
)

func TestRegistryPublishesImmutableSnapshots(t *testing.T) {
	r := NewRegistry(RegistryOptions{})
	k := Key{"default", "hello"}
	first := r.Snapshot()
	if first.Synced || first.Revisions.Len() != 0 {
		t.Fatalf("first snapshot = %+v, want empty and not synced", first)
	}
	r.Upsert(k, validSpec())
	s1 := r.Snapshot()
	rev := s1.Get(k)
	if rev == nil || rev.Mode != ModeProxy || rev.DesiredScale != -1 {
		t.Fatalf("new revision = %+v, want proxy mode and desired -1", rev)
	}
	gen := rev.Generation

	r.SetBackends(k, []Backend{{Address: "127.0.0.2", Port: 80, Ready: true}, {Address: "127.0.0.1", Port: 80}})
	r.SetMode(k, ModeServe)
	s2 := r.Snapshot()
	rev2 := s2.Get(k)
	if rev2.Backends[0].Address != "127.0.0.1" || rev2.Mode != ModeServe || rev2.Generation <= gen {
		t.Errorf("after update = %+v", rev2)
	}
	if len(rev2.ReadyBackends()) != 1 {
		t.Errorf("ReadyBackends = %v", rev2.ReadyBackends())
	}
	if s1.Get(k).Mode != ModeProxy || len(s1.Get(k).Backends) != 0 {
		t.Errorf("old snapshot changed: %+v", s1.Get(k))
	}
	if s2.Version <= s1.Version {
		t.Errorf("versions %d then %d, want increasing", s1.Version, s2.Version)
	}

	// Desired scale does not change what Envoy sees.
	g := rev2.Generation
	r.SetDesiredScale(k, 3)
	if rev3 := r.Snapshot().Get(k); rev3.DesiredScale != 3 || rev3.Generation != g {
		t.Errorf("after SetDesiredScale = %+v, want desired 3, generation %d", rev3, g)
	}

	// No-op updates publish nothing.
	v := r.Snapshot().Version
	r.SetMode(k, ModeServe)
	r.Upsert(k, validSpec())
	if r.Snapshot().Version != v {
		t.Errorf("no-op updates published a snapshot")
	}

	r.SetInvalid(k, ErrInvalidSpec)
	if s := r.Snapshot(); s.Get(k) != nil || s.Invalid[k] == nil {
		t.Errorf("invalid revision still served: %+v", s)
	}
	r.Delete(k)
	if s := r.Snapshot(); len(s.Invalid) != 0 || s.Revisions.Len() != 0 {
		t.Errorf("after delete = %+v", s)
	}
}

func TestRegistryHoldoffBatchesAndWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRegistry(RegistryOptions{Clock: clock.RealClock{}, Holdoff: 100 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go r.Run(ctx)

		var wg sync.WaitGroup
		var got *Snapshot
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, _ = r.WaitFor(ctx, func(s *Snapshot) bool { return s.Synced && s.Revisions.Len() == 3 })
		}()
		for _, n := range []string{"a", "b", "c"} {
			r.Upsert(Key{"ns", n}, validSpec())
		}
		r.SetSynced()
		synctest.Wait()
		if r.Snapshot().Version != 0 {
			t.Fatalf("published before the holdoff elapsed")
		}
		time.Sleep(100 * time.Millisecond)
		wg.Wait()
		if got == nil || got.Version != 1 {
			t.Fatalf("WaitFor got %+v, want the one batched snapshot (version 1)", got)
		}
	})
}

func TestRegistryWaitForHonoursContext(t *testing.T) {
	r := NewRegistry(RegistryOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := r.WaitFor(ctx, func(*Snapshot) bool { return false }); err == nil {
		t.Fatal("WaitFor returned nil error after the context ended")
	}
}

func TestRegistrySetModeSeesUnpublishedChanges(t *testing.T) {
	r := NewRegistry(RegistryOptions{Clock: clock.RealClock{}, Holdoff: time.Hour}) // Run not started: nothing publishes
	k := Key{"ns", "a"}
	if _, ok := r.SetMode(k, ModeServe); ok {
		t.Fatal("SetMode of an unknown revision reported ok")
	}
	r.Upsert(k, validSpec())
	if prev, ok := r.SetMode(k, ModeServe); !ok || prev != ModeProxy {
		t.Fatalf("SetMode = %v, %v; want previous proxy, true", prev, ok)
	}
	if prev, ok := r.SetMode(k, ModeServe); !ok || prev != ModeServe {
		t.Fatalf("second SetMode = %v, %v; want previous serve (unpublished), true", prev, ok)
	}
	if r.Snapshot().Get(k) != nil {
		t.Fatal("snapshot published despite the holdoff")
	}
}
