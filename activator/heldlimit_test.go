package activator

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thaw-dev/thaw/revision"
)

// TestHeldLimit: past Options.MaxHeld, over all revisions, a request that
// would be held is refused at once with ErrHeldLimit and counted; a
// request served at once is not; SetMaxHeld(0) lifts the bound; the held
// requests are served when a backend appears.
func TestHeldLimit(t *testing.T) {
	bubble(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		e := newEnv(t, Options{MaxHeld: 2, Registerer: reg})
		other := revision.Key{Namespace: "default", Name: "other"}
		e.upsert(demo, 0, time.Minute, 100)
		e.upsert(other, 0, time.Minute, 100)
		synctest.Wait()
		chs := []<-chan result{e.acquireAsync(context.Background(), demo), e.acquireAsync(context.Background(), other)}
		synctest.Wait()
		_, _, err := e.act.Acquire(context.Background(), demo)
		wantErr(t, err, ErrHeldLimit)
		_, _, err = e.act.Acquire(context.Background(), other)
		wantErr(t, err, ErrHeldLimit)
		if n := histogramCount(t, reg, "held_limit"); n != 2 {
			t.Errorf("held_limit observations = %d, want 2", n)
		}

		e.act.SetMaxHeld(0)
		if e.act.MaxHeld() != 0 {
			t.Fatalf("MaxHeld = %d after SetMaxHeld(0)", e.act.MaxHeld())
		}
		chs = append(chs, e.acquireAsync(context.Background(), demo))
		synctest.Wait()
		if held, _ := e.act.Stats(demo); held != 2 {
			t.Fatalf("held = %d, want 2 once the bound is lifted", held)
		}

		e.act.SetMaxHeld(1)
		e.backends(demo, "127.0.0.1")
		e.backends(other, "127.0.0.2")
		for i, ch := range chs {
			r := <-ch
			if r.err != nil {
				t.Fatalf("held request %d: %v", i, r.err)
			}
			r.release()
		}
		// Served at once: not held, so not bounded.
		_, rel := mustAcquire(t, e.act, demo)
		rel()
	})
}

// histogramCount returns the sample count of thaw_activator_hold_duration_seconds{outcome}.
func histogramCount(t *testing.T, reg *prometheus.Registry, outcome string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "thaw_activator_hold_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
