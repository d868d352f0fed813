package autoscaler

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// dormantHarness starts a Multiscaler whose target counts GetScale per
// revision (one per decision), with keyA at zero replicas and no stats.
func dormantHarness(t *testing.T, spec revision.Spec) (*harness, *countingTarget) {
	t.Helper()
	counts := &countingTarget{fakeTarget: newFakeTarget(), n: map[revision.Key]int{}}
	h := newHarness(t, func(o *MultiscalerOptions) { o.Target = counts })
	counts.set(keyA, 0, 0)
	h.reg.Upsert(keyA, spec)
	h.start()
	return h, counts
}

// tick moves fake time by n tick intervals and waits for the loops.
func tick(n int) {
	time.Sleep(time.Duration(n) * DefaultTickInterval)
	synctest.Wait()
}

// TestDormantCostsNoDecisionOverTicks: a revision at zero with no stats
// leaves the decision loop after its first tick (it is counted as dormant)
// and is not decided again over 100 ticks, while an awake revision beside
// it is decided on every one of them.
func TestDormantCostsNoDecisionOverTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, counts := dormantHarness(t, testSpec())
		counts.set(keyB, 1, 1) // awake: no data keeps its scale
		h.reg.Upsert(keyB, testSpec(func(s *revision.Spec) { s.Hosts = []string{"b.example.com"} }))
		synctest.Wait()
		if h.ms.Dormant(keyA) {
			t.Fatal("dormant before its first tick")
		}
		tick(1)
		if !h.ms.Dormant(keyA) || h.ms.Dormant(keyB) {
			t.Fatalf("after one tick: dormant a=%v b=%v, want a only", h.ms.Dormant(keyA), h.ms.Dormant(keyB))
		}
		if got, _ := metricValue(t, h.promReg, MetricRevisionsDormant, nil); got != 1 {
			t.Errorf("%s = %v, want 1", MetricRevisionsDormant, got)
		}
		a0, b0 := counts.get(keyA), counts.get(keyB)
		dec0, _ := metricValue(t, h.promReg, MetricDecisions, nil)
		tick(100)
		if got := counts.get(keyA) - a0; got != 0 {
			t.Errorf("dormant revision decided %d times over 100 ticks, want 0", got)
		}
		if got := counts.get(keyB) - b0; got != 100 {
			t.Errorf("awake revision decided %d times over 100 ticks, want 100", got)
		}
		if dec, _ := metricValue(t, h.promReg, MetricDecisions, nil); dec-dec0 != 100 {
			t.Errorf("%s grew by %v over 100 ticks, want 100 (the awake revision's)", MetricDecisions, dec-dec0)
		}
		if d, ok := h.ms.Status(keyA); !ok || d.DesiredScale != 0 || !d.WantZero {
			t.Errorf("dormant status = %+v (ok %v), want desired 0 and WantZero", d, ok)
		}
		h.stop()
	})
}

// TestDormantWokenByEachInput: every input that can change a dormant
// revision's decision wakes it, and it is decided at once (no tick
// waited for): a sample (new series, watched series, a stats sink batch
// through its Ref), a held count from the module's report, a poke, a spec
// change and a change of its backends; each also for a revision sleeping
// in its loop's heap until its warm window opens.
func TestDormantWokenByEachInput(t *testing.T) {
	cases := []wokenByInputCase{
		{name: "sample creates its series", input: func(s *wokenSetup) {
			s.h.col.Record(Sample{Revision: keyA, Source: "e1", Time: time.Now(), Concurrency: 50, Requests: 50})
		}, wantScale: 5},
		{name: "sample into the watched series", series: true, input: func(s *wokenSetup) {
			s.h.col.Record(Sample{Revision: keyA, Source: "e1", Time: time.Now(), Concurrency: 30, Requests: 30})
		}, wantScale: 3},
		{name: "sample after its series expired", series: true, expire: true, input: func(s *wokenSetup) {
			s.h.col.RecordBatch(&Batch{Source: "e1", Time: time.Now(),
				Samples: []BatchSample{{Revision: keyA, Concurrency: 40, Requests: 40, Ref: s.ref}}})
		}, wantScale: 4},
		{name: "stats sink batch through its ref", series: true, input: func(s *wokenSetup) {
			s.h.col.RecordBatch(&Batch{Source: "e1", Time: time.Now(),
				Samples: []BatchSample{{Revision: keyA, Concurrency: 20, Requests: 20, Ref: s.ref}}})
		}, wantScale: 2},
		{name: "held count from the module's report", input: func(s *wokenSetup) {
			s.h.col.Record(Sample{Revision: keyA, Source: "module/envoy-0", Time: time.Now(), Concurrency: 1})
		}, wantScale: 1},
		{name: "zero sample: data turns valid", input: func(s *wokenSetup) {
			s.h.col.Record(Sample{Revision: keyA, Source: "e1", Time: time.Now()})
		}, check: func(t *testing.T, s *wokenSetup) {
			if d, _ := s.h.ms.Status(keyA); !d.Valid {
				t.Errorf("status after a zero sample = %+v, want valid", d)
			}
		}},
		{name: "poke", input: func(s *wokenSetup) { s.h.ms.Poke(keyA) }, wantScale: 1},
		{name: "spec change", input: func(s *wokenSetup) {
			s.h.reg.Upsert(keyA, testSpec(func(sp *revision.Spec) { sp.MinScale = 2 }))
		}, wantScale: 2},
		{name: "backends change", input: func(s *wokenSetup) {
			s.h.reg.SetBackends(keyA, []revision.Backend{{Address: "127.0.0.1", Port: 8081, Ready: true}})
		}, settles: true},
	}
	for _, warm := range []bool{false, true} {
		for _, c := range cases {
			name := c.name
			if warm {
				name += " (sleeping until its warm window)"
			}
			t.Run(name, func(t *testing.T) { wokenByInput(t, c, warm) })
		}
	}
}

// wokenByInputCase is one case of TestDormantWokenByEachInput.
type wokenByInputCase struct {
	name string
	// series records a zero sample before the revision goes dormant
	// (it then watches an existing series).
	series bool
	// expire drops that series (Collector.Expire) while dormant: the
	// sample then creates a new one.
	expire    bool
	input     func(s *wokenSetup)
	wantScale int32
	check     func(t *testing.T, s *wokenSetup)
	// settles: the input changes nothing, so the revision is decided
	// once and goes dormant again.
	settles bool
}

type wokenSetup struct {
	h      *harness
	counts *countingTarget
	ref    *Ref
}

// wokenByInput runs c on a dormant revision; warm gives it a daily warm
// window (closed meanwhile), so it sleeps in its loop's heap until then.
func wokenByInput(t *testing.T, c wokenByInputCase, warm bool) {
	synctest.Test(t, func(t *testing.T) {
		spec := testSpec()
		if warm {
			spec.Wake = warmPolicy(t, wake.WindowConfig{Start: "0 8 * * *", Duration: "1h"})
		}
		h, counts := dormantHarness(t, spec)
		s := &wokenSetup{h: h, counts: counts, ref: &Ref{}}
		if c.series {
			h.col.RecordBatch(&Batch{Source: "e1", Time: time.Now(),
				Samples: []BatchSample{{Revision: keyA, Ref: s.ref}}})
			tick(5) // past the 6 s stable window: no data left in reach
		}
		tick(1)
		if !h.ms.Dormant(keyA) {
			t.Fatal("not dormant before the input")
		}
		if c.expire {
			tick(40) // the 67 s ring holds nothing of it any more
			h.col.Expire(time.Now())
			if h.col.series(keyA, false) != nil {
				t.Fatal("series not expired")
			}
		}
		n0 := counts.get(keyA)
		c.input(s)
		synctest.Wait() // no time passes: decided at once
		if h.ms.Dormant(keyA) != c.settles {
			t.Errorf("dormant after the input = %v, want %v", h.ms.Dormant(keyA), c.settles)
		}
		if got := counts.get(keyA) - n0; got < 1 {
			t.Errorf("decided %d times at the input, want at least 1", got)
		}
		if got := counts.scale(keyA); got != c.wantScale {
			t.Errorf("scale after the input = %d, want %d", got, c.wantScale)
		}
		if c.check != nil {
			c.check(t, s)
		}
		n1 := counts.get(keyA)
		tick(1)
		want := 1 // back on its loop
		if c.settles {
			want = 0
		}
		if got := counts.get(keyA) - n1; got != want {
			t.Errorf("decided %d times in the tick after waking, want %d", got, want)
		}
		h.stop()
	})
}

// TestNeverDormantWithSomethingPending: a revision with replicas, a pending
// timer, a clock-driven bound, data in reach, a failing read or a wake-up
// in progress keeps being decided on every tick.
func TestNeverDormantWithSomethingPending(t *testing.T) {
	// Open from the bubble's start (midnight) for an hour.
	night, errs := wake.Compile(&wake.Config{Schedule: []wake.WindowConfig{
		{Name: "night", Start: "0 0 * * *", Duration: "1h", MinScale: 1},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cases := []struct {
		name    string
		spec    func(*revision.Spec)
		opts    func(*MultiscalerOptions)
		prepare func(h *harness, c *countingTarget)
		// during runs at every tick (samples that keep data in reach).
		during func(h *harness)
	}{
		{name: "min scale 1", spec: func(s *revision.Spec) { s.MinScale = 1 }},
		{name: "scale to zero disabled", opts: func(o *MultiscalerOptions) { o.EnableScaleToZero = new(bool) }},
		{name: "initial scale on a new revision", spec: func(s *revision.Spec) { s.InitialScale = 2 },
			prepare: func(_ *harness, c *countingTarget) {
				c.set(keyA, 2, 0)
				c.fakeTarget.followReady = false
			}},
		{name: "one replica waiting for the grace period (proxy mode never confirmed)",
			prepare: func(_ *harness, c *countingTarget) { c.set(keyA, 1, 1) }},
		{name: "scale-down delay holding a replica", spec: func(s *revision.Spec) { s.ScaleDownDelay = time.Hour },
			prepare: func(h *harness, c *countingTarget) { c.set(keyA, 1, 1) },
			during:  func(h *harness) { h.col.Record(Sample{Revision: keyA, Source: "e1", Time: time.Now()}) }},
		{name: "warm window open", spec: func(s *revision.Spec) { s.Wake = night }},
		{name: "stats in the window (zero samples every second)",
			during: func(h *harness) {
				h.col.Record(Sample{Revision: keyA, Source: "e1", Time: time.Now()})
				time.Sleep(time.Second)
				h.col.Record(Sample{Revision: keyA, Source: "e1", Time: time.Now()})
			}},
		{name: "ready pods still draining at zero", prepare: func(_ *harness, c *countingTarget) { c.set(keyA, 0, 1) }},
		{name: "reading the scale target fails",
			prepare: func(_ *harness, c *countingTarget) { c.setErrors(keyA, errors.New("api down"), nil) }},
		{name: "waking: the scale-up fails",
			prepare: func(h *harness, c *countingTarget) {
				c.setErrors(keyA, nil, errors.New("forbidden"))
				h.ms.Poke(keyA)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				counts := &countingTarget{fakeTarget: newFakeTarget(), n: map[revision.Key]int{}}
				h := newHarness(t, func(o *MultiscalerOptions) {
					o.Target = counts
					if c.opts != nil {
						c.opts(o)
					}
				})
				counts.set(keyA, 0, 0)
				spec := testSpec()
				if c.spec != nil {
					c.spec(&spec)
				}
				h.reg.Upsert(keyA, spec)
				h.start()
				synctest.Wait()
				if c.prepare != nil {
					c.prepare(h, counts)
					synctest.Wait()
				}
				const ticks = 20
				n0 := counts.get(keyA)
				for range ticks {
					if c.during != nil {
						c.during(h)
					}
					time.Sleep(time.Until(time.Now().Truncate(DefaultTickInterval).Add(DefaultTickInterval)))
					synctest.Wait()
					if h.ms.Dormant(keyA) {
						t.Errorf("dormant at %v (scale %d)", time.Now(), counts.scale(keyA))
						break
					}
				}
				if got := counts.get(keyA) - n0; got < ticks {
					t.Errorf("decided %d times over %d ticks, want at least %d", got, ticks, ticks)
				}
				h.stop()
			})
		})
	}
}

// TestDormantWakeCycle: a dormant revision is poked awake (one replica at
// once), serves, returns to zero through the usual stable window and grace
// period on Envoy's zero samples, and goes dormant again once those
// samples are out of reach: it is never left above zero.
func TestDormantWakeCycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, counts := dormantHarness(t, testSpec())
		h.confirmer.confirm(keyA, time.Now())
		tick(1)
		if !h.ms.Dormant(keyA) {
			t.Fatal("not dormant at zero")
		}
		h.ms.Poke(keyA)
		synctest.Wait()
		if got := counts.scale(keyA); got != 1 {
			t.Fatalf("scale after the poke = %d, want 1 at once", got)
		}
		for i := 0; i < 30 && counts.scale(keyA) != 0; i++ {
			h.load(keyA, 0, 1) // Envoy's zero samples while the replica idles
			synctest.Wait()
			if h.ms.Dormant(keyA) {
				t.Fatalf("dormant at %d replicas", counts.scale(keyA))
			}
		}
		if got := counts.scale(keyA); got != 0 {
			t.Fatalf("scale after 30 idle seconds = %d, want 0", got)
		}
		tick(5) // the samples leave the stable window
		if !h.ms.Dormant(keyA) {
			t.Error("not dormant again once back at zero with no stats in reach")
		}
		h.stop()
	})
}
