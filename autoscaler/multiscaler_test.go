package autoscaler

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	"k8s.io/utils/ptr"

	"github.com/thaw-dev/thaw/revision"
)

// metricValue returns the value of the series of family name whose labels
// include want, and whether it exists.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue metrics
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

func TestMultiscalerScalesUpOnLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.target.set(keyA, 1, 1)
		h.reg.Upsert(keyA, testSpec())
		h.start()
		synctest.Wait() // first decision: no data yet
		if d, ok := h.ms.Status(keyA); !ok || d.Valid || d.DesiredScale != 1 {
			t.Fatalf("first status = %+v (ok=%v), want invalid at scale 1", d, ok)
		}
		h.load(keyA, 50, 3)
		synctest.Wait()
		if got := h.target.scale(keyA); got != 5 {
			t.Fatalf("scale = %d, want 5", got)
		}
		d, _ := h.ms.Status(keyA)
		if !d.Valid || !d.InPanic || d.DesiredScale != 5 || d.StableConcurrency != 50 {
			t.Errorf("status = %+v, want valid, panicking, 5 pods, stable 50", d)
		}
		if got := h.reg.Snapshot().Get(keyA).DesiredScale; got != 5 {
			t.Errorf("registry desired scale = %d, want 5", got)
		}
		lbl := map[string]string{"revision": keyA.String()}
		for name, want := range map[string]float64{
			MetricDesiredPods: 5, MetricPanicMode: 1, MetricStableConcurrency: 50,
			MetricTarget: 10, MetricScaleChanges: 1,
		} {
			if got, ok := metricValue(t, h.promReg, name, lbl); !ok || got != want {
				t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
			}
		}
		var infos []string
		for _, e := range h.logs.FilterLevelExact(zapcore.InfoLevel).All() {
			infos = append(infos, e.Message)
		}
		if len(infos) != 2 || infos[0] != "scaled" || infos[1] != "entering panic mode" {
			t.Errorf("info logs = %q, want [scaled, entering panic mode]", infos)
		}
		h.stop()
	})
}

func TestMultiscalerPublishesOnlyOnChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.target.set(keyA, 1, 1)
		h.reg.Upsert(keyA, testSpec())
		h.col.Record(Sample{Revision: keyA, Source: "e1", Time: time.Now(), Concurrency: 5})
		h.start()
		h.load(keyA, 5, 9) // ticks at 0, 2, 4, 6, 8: same scale, EBC negative
		synctest.Wait()
		if got := h.published(); len(got) != 1 || got[0].DesiredScale != 1 || got[0].ExcessBurstCapacity >= 0 {
			t.Fatalf("published %+v, want one decision at scale 1 with negative EBC", got)
		}
		// Data turning valid is published even at the same scale.
		h.target.set(keyB, 1, 1)
		h.reg.Upsert(keyB, testSpec(func(s *revision.Spec) { s.Hosts = []string{"b.example.com"} }))
		synctest.Wait()
		h.load(keyB, 5, 1)
		time.Sleep(time.Second)
		synctest.Wait()
		var forB []Decision
		for _, d := range h.published() {
			if d.Key == keyB {
				forB = append(forB, d)
			}
		}
		if len(forB) != 2 || forB[0].Valid || !forB[1].Valid || forB[1].DesiredScale != forB[0].DesiredScale {
			t.Fatalf("published for b: %+v, want invalid then valid at the same scale", forB)
		}
		h.reg.Delete(keyB)
		synctest.Wait()
		h.mu.Lock()
		h.decisions = h.decisions[:1]
		h.mu.Unlock()
		// TBC 0 makes EBC 0: the sign changes, so it is published.
		h.reg.Upsert(keyA, testSpec(func(s *revision.Spec) { s.TargetBurstCapacity = 0 }))
		h.load(keyA, 5, 3)
		synctest.Wait()
		got := h.published()
		if len(got) != 2 || got[1].ExcessBurstCapacity != 0 || got[1].DesiredScale != 1 {
			t.Fatalf("published %+v, want a second decision with EBC 0", got)
		}
		if d, _ := h.ms.Status(keyA); !d.Time.After(got[1].Time) {
			t.Errorf("status time %v not after the last published %v: ticks stopped?", d.Time, got[1].Time)
		}
		h.stop()
	})
}

func TestMultiscalerPokeWakesFromZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.target.set(keyA, 0, 0)
		h.confirmer.confirm(keyA, time.Now())
		h.reg.Upsert(keyA, testSpec(func(s *revision.Spec) { s.ActivationScale = 2 }))
		h.start()
		synctest.Wait()
		if d, ok := h.ms.Status(keyA); !ok || !d.WantZero || d.DesiredScale != 0 {
			t.Fatalf("status at zero = %+v, want WantZero at 0", d)
		}
		start := time.Now()
		h.ms.Poke(keyA)
		synctest.Wait()
		sets, gets := h.target.calls()
		if len(sets) != 1 || sets[0] != (scaleCall{keyA, 2}) {
			t.Fatalf("sets = %+v, want one SetScale(2)", sets)
		}
		if !time.Now().Equal(start) {
			t.Fatalf("the poke waited for a tick (%v)", time.Since(start))
		}
		h.ms.Poke(keyA) // not at zero any more: ignored
		h.ms.Poke(revision.Key{Namespace: "ns", Name: "unknown"})
		synctest.Wait()
		if _, gets2 := h.target.calls(); gets2 != gets {
			t.Errorf("a poke while not at zero ran a decision (%d gets, want %d)", gets2, gets)
		}
		h.stop()
	})
}

func TestMultiscalerScaleToZeroWaitsForProxyMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.target.set(keyA, 1, 1)
		h.reg.Upsert(keyA, testSpec())
		h.col.Record(Sample{Revision: keyA, Source: "e1", Time: time.Now()})
		start := time.Now()
		h.start()
		h.load(keyA, 0, 9) // idle for the 6 s stable window, proxy mode unconfirmed
		synctest.Wait()
		d, _ := h.ms.Status(keyA)
		if !d.WantZero || d.DesiredScale != 1 || d.Recommended != 0 || d.Reason != ReasonProxyUnconfirmed {
			t.Fatalf("status = %+v, want WantZero held at 1 waiting for proxy mode", d)
		}
		confirmed := time.Now()
		h.confirmer.confirm(keyA, confirmed)
		h.load(keyA, 0, 8)
		synctest.Wait()
		if got := h.target.scale(keyA); got != 0 {
			t.Fatalf("scale = %d, want 0", got)
		}
		pub := h.published()
		last := pub[len(pub)-1]
		if last.DesiredScale != 0 || last.Time.Sub(confirmed) < 4*time.Second {
			t.Errorf("zero published at %v after confirmation (%+v), want after the 4 s grace", last.Time.Sub(confirmed), last)
		}
		var sawHold bool
		for _, d := range pub {
			sawHold = sawHold || (d.WantZero && d.DesiredScale == 1 && d.Time.Sub(start) >= 6*time.Second)
		}
		if !sawHold {
			t.Errorf("published %+v: no WantZero decision held at 1 after the stable window", pub)
		}
		h.stop()
	})
}

func TestMultiscalerScaleToZeroDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(o *MultiscalerOptions) { o.EnableScaleToZero = ptr.To(false) })
		h.target.set(keyA, 1, 1)
		h.confirmer.confirm(keyA, time.Now())
		h.reg.Upsert(keyA, testSpec())
		h.start()
		h.load(keyA, 0, 20)
		synctest.Wait()
		if d, _ := h.ms.Status(keyA); d.DesiredScale != 1 || d.WantZero || h.target.scale(keyA) != 1 {
			t.Errorf("status = %+v, scale %d; want 1 without WantZero", d, h.target.scale(keyA))
		}
		h.stop()
	})
}

func TestMultiscalerErrorsArePerRevision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		keyC := revision.Key{Namespace: "ns", Name: "c"}
		for _, k := range []revision.Key{keyA, keyB, keyC} {
			h.target.set(k, 1, 1)
			h.reg.Upsert(k, testSpec(func(s *revision.Spec) { s.Hosts = []string{k.Name + ".example.com"} }))
		}
		h.target.setErrors(keyA, errors.New("apiserver down"), nil)
		h.target.setErrors(keyC, nil, errors.New("forbidden"))
		h.start()
		for range 5 {
			for _, k := range []revision.Key{keyA, keyB, keyC} {
				h.col.Record(Sample{Revision: k, Source: "e1", Time: time.Now(), Concurrency: 30})
			}
			time.Sleep(time.Second)
		}
		synctest.Wait()
		if got := h.target.scale(keyB); got != 3 {
			t.Errorf("B scale = %d, want 3 despite A and C failing", got)
		}
		if got := h.target.scale(keyC); got != 1 {
			t.Errorf("C scale = %d, want 1 (its SetScale fails)", got)
		}
		if _, ok := h.ms.Status(keyA); ok {
			t.Errorf("A has a status although GetScale always failed")
		}
		for _, c := range []struct {
			key revision.Key
			op  string
		}{{keyA, "get"}, {keyC, "set"}} {
			v, ok := metricValue(t, h.promReg, MetricScaleErrors, map[string]string{"revision": c.key.String(), "op": c.op})
			if !ok || v < 2 {
				t.Errorf("%s errors for %s = %v, want >= 2 (one per tick)", c.op, c.key, v)
			}
		}
		if n := h.logs.FilterLevelExact(zapcore.ErrorLevel).Len(); n != 2 {
			t.Errorf("%d error logs, want 2 (one per failing revision, not per tick)", n)
		}
		h.stop()
	})
}

func TestMultiscalerFollowsRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		h.target.set(keyA, 1, 1)
		h.start()
		synctest.Wait()
		if _, ok := h.ms.Status(keyA); ok {
			t.Fatal("status for a revision not in the registry")
		}
		h.reg.Upsert(keyA, testSpec(func(s *revision.Spec) { s.MaxScale = 2 }))
		h.load(keyA, 50, 3)
		synctest.Wait()
		if got := h.target.scale(keyA); got != 2 {
			t.Fatalf("scale = %d, want 2 (max scale)", got)
		}
		h.reg.Upsert(keyA, testSpec(func(s *revision.Spec) { s.MaxScale = 4 }))
		h.load(keyA, 50, 3)
		synctest.Wait()
		if got := h.target.scale(keyA); got != 4 {
			t.Fatalf("scale = %d, want 4 after the max scale changed", got)
		}
		h.reg.Delete(keyA)
		synctest.Wait()
		if _, ok := h.ms.Status(keyA); ok {
			t.Error("status kept after the revision was deleted")
		}
		if _, ok := metricValue(t, h.promReg, MetricDesiredPods, map[string]string{"revision": keyA.String()}); ok {
			t.Error("metrics kept after the revision was deleted")
		}
		if _, err := h.col.StableAndPanic(keyA, time.Now(), time.Minute, time.Second); !errors.Is(err, ErrNoData) {
			t.Errorf("collector data kept after delete: err = %v", err)
		}
		if err := h.ms.Run(t.Context(), h.reg); err == nil {
			t.Error("a second concurrent Run returned nil")
		}
		h.stop()
	})
}

// TestMultiscalerPublishesActivationTimeout: a wake-up without a ready pod
// for the activation timeout publishes a decision with ActivationTimedOut
// (mode control's wake failure), even when the scale it applies does not
// change (bounds keep it from zero), and a later decision clears it: once
// back at zero, or once a pod is ready.
func TestMultiscalerPublishesActivationTimeout(t *testing.T) {
	for _, tt := range []struct {
		name   string
		toZero bool
	}{
		{"scaled back to zero", true},
		{"bounds keep a pod until it is ready", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, func(o *MultiscalerOptions) { o.EnableScaleToZero = ptr.To(tt.toZero) })
				h.target.followReady = false
				h.target.set(keyA, 0, 0)
				h.confirmer.confirm(keyA, time.Now())
				h.reg.Upsert(keyA, testSpec(func(s *revision.Spec) { s.ActivationTimeout = 10 * time.Second }))
				h.start()
				defer h.stop()
				synctest.Wait()
				h.ms.Poke(keyA)
				synctest.Wait()
				if got := h.target.scale(keyA); got != 1 {
					t.Fatalf("scale after the poke = %d, want 1", got)
				}
				timedOut := func() (n int, last Decision) {
					for _, d := range h.published() {
						if d.ActivationTimedOut {
							n++
						}
						last = d
					}
					return n, last
				}
				time.Sleep(9 * time.Second)
				synctest.Wait()
				if n, _ := timedOut(); n != 0 {
					t.Fatalf("timed out before the activation timeout")
				}
				time.Sleep(2 * time.Second) // the tick at 10 s
				synctest.Wait()
				n, last := timedOut()
				if n != 1 || !last.ActivationTimedOut || last.Reason != ReasonActivationTimeout {
					t.Fatalf("published %+v: want one last decision with ActivationTimedOut", h.published())
				}
				if !tt.toZero {
					h.target.set(keyA, 1, 1)
				}
				time.Sleep(4 * time.Second)
				synctest.Wait()
				n2, last := timedOut()
				if n2 != n || last.ActivationTimedOut {
					t.Fatalf("published %+v: want the timeout cleared by the last decision", h.published())
				}
				if v, ok := metricValue(t, h.promReg, MetricActivationTimeouts, nil); !ok || v != 1 {
					t.Fatalf("%s = %v (present %v), want 1", MetricActivationTimeouts, v, ok)
				}
				if want := map[bool]int32{true: 0, false: 1}[tt.toZero]; h.target.scale(keyA) != want {
					t.Fatalf("scale = %d, want %d", h.target.scale(keyA), want)
				}
			})
		})
	}
}
