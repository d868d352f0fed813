package autoscaler

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// Fake time in a synctest bubble starts at 2000-01-01 00:00:00 UTC, a
// Saturday (winter: Europe/Paris is UTC+1).
var bubbleStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// warmPolicy compiles a wake policy of the given windows (min scale 1).
func warmPolicy(t *testing.T, windows ...wake.WindowConfig) *wake.Policy {
	t.Helper()
	for i := range windows {
		windows[i].Name, windows[i].MinScale = fmt.Sprint("w", i), 1
	}
	p, errs := wake.Compile(&wake.Config{Schedule: windows})
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	return p
}

// heapSizes stops h and returns how many revisions each loop's due heap
// holds (read once the loops have ended).
func heapSizes(h *harness) []int {
	h.ms.mu.RLock()
	shards := h.ms.shards
	h.ms.mu.RUnlock()
	h.stop()
	var n []int
	for _, sh := range shards {
		n = append(n, len(sh.due))
	}
	return n
}

// TestWarmWindowSleepsUntilItsAlarm: a revision at zero whose wake policy
// has warm windows is dormant after one tick and is not decided again
// until its policy's next change (in the window's time zone), when it is
// decided at that very second and scaled to the window's minimum. A
// policy that never changes again, or one changed to no windows, leaves
// it dormant out of the heap; a policy changed while it sleeps (a
// registry change, which wakes it) sets the new alarm.
func TestWarmWindowSleepsUntilItsAlarm(t *testing.T) {
	daily := wake.WindowConfig{Start: "0 8 * * *", Duration: "1h"}
	cases := []struct {
		name   string
		window wake.WindowConfig
		// change, when set, replaces the policy at 01:00 (nil: no windows).
		change   func(t *testing.T) *wake.Policy
		wantWake time.Time // zero: never
	}{
		{name: "daily at 08:00 UTC", window: daily, wantWake: bubbleStart.Add(8 * time.Hour)},
		{name: "daily at 08:00 Paris (07:00 UTC in winter)",
			window:   wake.WindowConfig{Start: "0 8 * * *", Duration: "1h", TimeZone: "Europe/Paris"},
			wantWake: bubbleStart.Add(7 * time.Hour)},
		{name: "weekdays, seen on a Saturday: Monday 08:00",
			window:   wake.WindowConfig{Start: "0 8 * * 1-5", Duration: "10h"},
			wantWake: time.Date(2000, 1, 3, 8, 0, 0, 0, time.UTC)},
		{name: "never opens (30 February): no alarm",
			window: wake.WindowConfig{Start: "0 0 30 2 *", Duration: "1h"}},
		{name: "changed while sleeping to an earlier window", window: daily,
			change: func(t *testing.T) *wake.Policy {
				return warmPolicy(t, wake.WindowConfig{Start: "0 3 * * *", Duration: "1h"})
			},
			wantWake: bubbleStart.Add(3 * time.Hour)},
		{name: "changed while sleeping to no windows", window: daily,
			change: func(*testing.T) *wake.Policy { return nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// No Recorder: a published decision does not change the
				// registry, so nothing but the alarm wakes the revision.
				counts := &countingTarget{fakeTarget: newFakeTarget(), n: map[revision.Key]int{}}
				h := newHarness(t, func(o *MultiscalerOptions) { o.Target, o.Recorder = counts, nil })
				counts.set(keyA, 0, 0)
				h.reg.Upsert(keyA, testSpec(func(s *revision.Spec) { s.Wake = warmPolicy(t, c.window) }))
				h.start()
				tick(1)
				if !h.ms.Dormant(keyA) {
					t.Fatal("not dormant at zero with its windows closed")
				}
				if c.change != nil {
					time.Sleep(time.Until(bubbleStart.Add(time.Hour)))
					n := counts.get(keyA)
					h.reg.Upsert(keyA, testSpec(func(s *revision.Spec) { s.Wake = c.change(t) }))
					synctest.Wait()
					if counts.get(keyA) == n || !h.ms.Dormant(keyA) {
						t.Fatalf("policy change: decided %d times, dormant %v; want decided and dormant again",
							counts.get(keyA)-n, h.ms.Dormant(keyA))
					}
				}
				n0 := counts.get(keyA)
				if c.wantWake.IsZero() {
					time.Sleep(72 * time.Hour)
					synctest.Wait()
					if got := counts.get(keyA) - n0; got != 0 || !h.ms.Dormant(keyA) {
						t.Errorf("over 72 h: decided %d times, dormant %v; want 0 and dormant", got, h.ms.Dormant(keyA))
					}
					if sizes := heapSizes(h); sizes[0] != 0 {
						t.Errorf("due heap holds %d revisions, want 0 (no alarm)", sizes[0])
					}
					return
				}
				time.Sleep(time.Until(c.wantWake.Add(-time.Second)))
				synctest.Wait()
				if got := counts.get(keyA) - n0; got != 0 || !h.ms.Dormant(keyA) || counts.scale(keyA) != 0 {
					t.Fatalf("a second before %v: decided %d times, dormant %v, scale %d; want 0, dormant, 0",
						c.wantWake, got, h.ms.Dormant(keyA), counts.scale(keyA))
				}
				time.Sleep(time.Second)
				synctest.Wait()
				if counts.scale(keyA) != 1 || h.ms.Dormant(keyA) {
					t.Errorf("at %v: scale %d, dormant %v; want 1 and awake", time.Now(), counts.scale(keyA), h.ms.Dormant(keyA))
				}
				if sizes := heapSizes(h); sizes[0] != 1 {
					t.Errorf("due heap holds %d revisions, want 1", sizes[0])
				}
			})
		})
	}
}

// TestWarmWindowCycle: woken by its window, the revision holds one
// replica while the window is open, returns to zero on Envoy's zero
// samples once it closes, sleeps again, and is woken by the next day's
// window without a decision in between.
func TestWarmWindowCycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, counts := dormantHarness(t, testSpec(func(s *revision.Spec) {
			s.Wake = warmPolicy(t, wake.WindowConfig{Start: "0 8 * * *", Duration: "1h"})
		}))
		h.confirmer.confirm(keyA, time.Now())
		tick(1)
		time.Sleep(time.Until(bubbleStart.Add(8 * time.Hour)))
		synctest.Wait()
		if counts.scale(keyA) != 1 {
			t.Fatalf("scale at 08:00 = %d, want 1", counts.scale(keyA))
		}
		for time.Now().Before(bubbleStart.Add(9 * time.Hour)) {
			h.load(keyA, 0, 60) // Envoy's zero samples while the replica idles
			if counts.scale(keyA) != 1 || h.ms.Dormant(keyA) {
				t.Fatalf("at %v (window open): scale %d, dormant %v", time.Now(), counts.scale(keyA), h.ms.Dormant(keyA))
			}
		}
		for i := 0; i < 60 && counts.scale(keyA) != 0; i++ {
			h.load(keyA, 0, 1)
		}
		if counts.scale(keyA) != 0 {
			t.Fatalf("scale a minute after the window closed = %d, want 0", counts.scale(keyA))
		}
		tick(5) // the zero samples leave the stable window
		if !h.ms.Dormant(keyA) {
			t.Fatal("not dormant again after the window closed")
		}
		n0 := counts.get(keyA)
		next := bubbleStart.Add(32 * time.Hour) // the next day, 08:00
		time.Sleep(time.Until(next.Add(-time.Second)))
		synctest.Wait()
		if got := counts.get(keyA) - n0; got != 0 {
			t.Errorf("decided %d times while waiting for the next window, want 0", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if counts.scale(keyA) != 1 {
			t.Errorf("scale at the next day's 08:00 = %d, want 1", counts.scale(keyA))
		}
		h.stop()
	})
}

// TestWarmWindowDeletedWhileSleeping: a revision deleted while it waits
// for its alarm leaves its loop's heap at once.
func TestWarmWindowDeletedWhileSleeping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := dormantHarness(t, testSpec(func(s *revision.Spec) {
			s.Wake = warmPolicy(t, wake.WindowConfig{Start: "0 8 * * *", Duration: "1h"})
		}))
		tick(1)
		if !h.ms.Dormant(keyA) {
			t.Fatal("not dormant")
		}
		h.reg.Delete(keyA)
		synctest.Wait()
		if sizes := heapSizes(h); sizes[0] != 0 {
			t.Errorf("due heap holds %d revisions after the delete, want 0", sizes[0])
		}
	})
}

// TestDormantSeesExternalResizeThroughBackends: replicas added by someone
// else (kubectl scale) to a dormant revision are seen when their pods get
// ready and its backends change in the registry: it is decided at once
// with the new scale and ticks again.
func TestDormantSeesExternalResizeThroughBackends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, counts := dormantHarness(t, testSpec())
		tick(1)
		if !h.ms.Dormant(keyA) {
			t.Fatal("not dormant")
		}
		n0 := counts.get(keyA)
		counts.set(keyA, 3, 2) // the platform's /scale and ready pods
		h.reg.SetBackends(keyA, []revision.Backend{
			{Address: "127.8.0.1", Port: 8080, Ready: true}, {Address: "127.8.0.2", Port: 8080, Ready: true}})
		synctest.Wait() // no time passes
		if counts.get(keyA) == n0 || h.ms.Dormant(keyA) {
			t.Fatalf("after the backends changed: decided %d times, dormant %v; want decided and awake",
				counts.get(keyA)-n0, h.ms.Dormant(keyA))
		}
		if d, _ := h.ms.Status(keyA); d.CurrentScale != 3 || d.ReadyPods != 2 {
			t.Errorf("decision = current %d ready %d, want 3 and 2", d.CurrentScale, d.ReadyPods)
		}
		n1 := counts.get(keyA)
		tick(1)
		if got := counts.get(keyA) - n1; got != 1 {
			t.Errorf("decided %d times in the next tick, want 1", got)
		}
		h.stop()
	})
}

// timerCountingClock is the real clock (fake time in a bubble) counting
// the timers and tickers made from it.
type timerCountingClock struct {
	clock.RealClock
	mu     sync.Mutex
	timers int
}

func (c *timerCountingClock) count() {
	c.mu.Lock()
	c.timers++
	c.mu.Unlock()
}

func (c *timerCountingClock) made() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timers
}

func (c *timerCountingClock) NewTimer(d time.Duration) clock.Timer {
	c.count()
	return c.RealClock.NewTimer(d)
}

func (c *timerCountingClock) NewTicker(d time.Duration) clock.Ticker {
	c.count()
	return c.RealClock.NewTicker(d)
}

func (c *timerCountingClock) After(d time.Duration) <-chan time.Time {
	c.count()
	return c.RealClock.After(d)
}

func (c *timerCountingClock) Tick(d time.Duration) <-chan time.Time {
	c.count()
	return c.RealClock.Tick(d)
}

func (c *timerCountingClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.count()
	return c.RealClock.AfterFunc(d, f)
}

// TestWarmWindowManySleepers: 1,000 revisions with windows opening at
// five different minutes sleep on two loops with no timer or goroutine of
// their own (the loops' two timers and Run's expiry ticker are all the
// clock makes); at each minute exactly that minute's revisions are woken
// and scaled, in the same second, and the later minutes' ones still
// sleep.
func TestWarmWindowManySleepers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &timerCountingClock{}
		counts := &countingTarget{fakeTarget: newFakeTarget(), n: map[revision.Key]int{}}
		h := newHarness(t, func(o *MultiscalerOptions) { o.Target, o.Clock, o.Shards = counts, clk, 2 })
		const n, hours = 1000, 5
		keys := make([]revision.Key, n)
		policies := make([]*wake.Policy, hours)
		for i := range policies {
			policies[i] = warmPolicy(t, wake.WindowConfig{Start: fmt.Sprintf("%d 0 * * *", i+1), Duration: "30m"})
		}
		for i := range keys {
			keys[i] = revision.Key{Namespace: "ns", Name: fmt.Sprintf("r%04d", i)}
			counts.set(keys[i], 0, 0)
			h.reg.Upsert(keys[i], testSpec(func(s *revision.Spec) {
				s.Hosts, s.Wake = []string{keys[i].Name + ".example.com"}, policies[i%hours]
			}))
		}
		goroutines := runtime.NumGoroutine()
		h.start()
		tick(1)
		if got, _ := metricValue(t, h.promReg, MetricRevisionsDormant, nil); got != n {
			t.Fatalf("%s = %v, want %d", MetricRevisionsDormant, got, n)
		}
		if got := runtime.NumGoroutine() - goroutines; got > 10 {
			t.Errorf("%d goroutines more while %d revisions sleep, want at most 10 (none per revision)", got, n)
		}
		for m := 1; m <= hours; m++ {
			time.Sleep(time.Until(bubbleStart.Add(time.Duration(m) * time.Minute)))
			synctest.Wait()
			for i, k := range keys {
				want := int32(0)
				if i%hours == m-1 {
					want = 1
				}
				if i%hours >= m-1 { // earlier minutes' revisions are deleted
					if got := counts.scale(k); got != want {
						t.Fatalf("00:%02d: %s (window at 00:%02d) scale %d, want %d", m, k, i%hours+1, got, want)
					}
				}
				if want == 1 {
					h.reg.Delete(k) // checked: out of the way of the next minutes
				}
			}
		}
		if got := clk.made(); got > 2+1 {
			t.Errorf("the clock made %d timers and tickers, want at most 3 (one per loop, Run's expiry ticker)", got)
		}
		h.stop()
	})
}
