package autoscaler

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/revision"
)

var (
	t0     = time.Unix(1_700_000_000, 0)
	keyA   = revision.Key{Namespace: "ns", Name: "a"}
	keyB   = revision.Key{Namespace: "ns", Name: "b"}
	approx = 1e-9
)

// at returns t0 plus sec seconds.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

type sampleAt struct {
	src        string
	sec        float64
	conc, reqs float64
}

func record(t *testing.T, c *Collector, key revision.Key, samples ...sampleAt) {
	t.Helper()
	for _, s := range samples {
		c.Record(Sample{Revision: key, Source: s.src, Time: at(s.sec), Concurrency: s.conc, Requests: s.reqs})
	}
}

// every returns one sample per second in [from, to] from src.
func every(src string, from, to int, conc, reqs float64) []sampleAt {
	var out []sampleAt
	for s := from; s <= to; s++ {
		out = append(out, sampleAt{src, float64(s) + 0.5, conc, reqs})
	}
	return out
}

func concat(parts ...[]sampleAt) []sampleAt {
	var out []sampleAt
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func newTestCollector(alg Algorithm) (*Collector, *testingclock.FakePassiveClock) {
	clk := testingclock.NewFakePassiveClock(at(1000))
	return NewCollector(CollectorOptions{Clock: clk, SourceExpiry: 2 * time.Second, Algorithm: alg, Window: 10 * time.Second}), clk
}

func assertStats(t *testing.T, want, got WindowStats) {
	t.Helper()
	pairs := []struct {
		name      string
		want, got float64
	}{
		{"StableConcurrency", want.StableConcurrency, got.StableConcurrency},
		{"PanicConcurrency", want.PanicConcurrency, got.PanicConcurrency},
		{"StableRPS", want.StableRPS, got.StableRPS},
		{"PanicRPS", want.PanicRPS, got.PanicRPS},
	}
	for _, p := range pairs {
		if math.Abs(p.want-p.got) > approx*math.Max(1, math.Abs(p.want)) {
			t.Errorf("%s = %v, want %v", p.name, p.got, p.want)
		}
	}
}

func TestCollectorWindows(t *testing.T) {
	w := math.Pow(DecayFloor, 0.5) // weight of the older second of a 2 s window
	tests := []struct {
		name    string
		alg     Algorithm
		samples []sampleAt
		now     float64
		stable  time.Duration
		panic   time.Duration
		want    WindowStats
		wantErr error
	}{{
		name:    "steady single source",
		samples: every("e1", 0, 9, 10, 5),
		now:     9.5, stable: 10 * time.Second, panic: 2 * time.Second,
		want: WindowStats{StableConcurrency: 10, PanicConcurrency: 10, StableRPS: 5, PanicRPS: 5},
	}, {
		name: "samples of one source in one second are averaged, sources summed, requests summed",
		samples: []sampleAt{
			{"e1", 0.1, 4, 1}, {"e1", 0.9, 8, 2}, {"e2", 0.5, 10, 3},
		},
		now: 0.9, stable: 10 * time.Second, panic: time.Second,
		want: WindowStats{StableConcurrency: 16, PanicConcurrency: 16, StableRPS: 6, PanicRPS: 6},
	}, {
		name:    "a silent source holds its value for the expiry, then gaps count as zero",
		samples: []sampleAt{{"e1", 0.5, 10, 0}, {"e1", 9.5, 10, 0}},
		now:     9.5, stable: 10 * time.Second, panic: 2 * time.Second,
		// seconds 0,1,2 = 10 (1 and 2 held), 3..8 = 0, 9 = 10; panic: 8 = 0, 9 = 10.
		want: WindowStats{StableConcurrency: 4, PanicConcurrency: 5},
	}, {
		name:    "a source behind the newest second counts with its last value",
		samples: concat(every("e1", 0, 9, 1, 0), every("e2", 0, 7, 2, 0)),
		now:     9.5, stable: 10 * time.Second, panic: 2 * time.Second,
		want: WindowStats{StableConcurrency: 3, PanicConcurrency: 3},
	}, {
		name:    "an expired source stops counting",
		samples: concat(every("e1", 0, 9, 1, 0), every("e2", 0, 2, 5, 0)),
		now:     9.5, stable: 10 * time.Second, panic: 2 * time.Second,
		// e2 counts in seconds 0..4 (2 reported + 2 held).
		want: WindowStats{StableConcurrency: (10 + 5*5) / 10.0, PanicConcurrency: 1},
	}, {
		name:    "window starts at the first sample",
		samples: every("e1", 5, 9, 7, 1),
		now:     9.5, stable: 10 * time.Second, panic: 2 * time.Second,
		want: WindowStats{StableConcurrency: 7, PanicConcurrency: 7, StableRPS: 1, PanicRPS: 1},
	}, {
		name:    "window ends at the newest reported second; an empty panic window is 0",
		samples: every("e1", 0, 5, 3, 2),
		now:     9.5, stable: 10 * time.Second, panic: 2 * time.Second,
		want: WindowStats{StableConcurrency: 3, StableRPS: 2},
	}, {
		name:    "the current second without a report yet is left out",
		samples: concat(every("e1", 0, 7, 4, 0), every("e1", 8, 8, 8, 0)),
		now:     9.5, stable: 10 * time.Second, panic: time.Second,
		want: WindowStats{StableConcurrency: (8*4 + 8) / 9.0, PanicConcurrency: 8},
	}, {
		name:    "older than the stable window is no data",
		samples: every("e1", 0, 5, 3, 2),
		now:     16, stable: 10 * time.Second, panic: 2 * time.Second,
		wantErr: ErrNoData,
	}, {
		name: "unknown revision is no data",
		now:  1, stable: 10 * time.Second, panic: 2 * time.Second,
		wantErr: ErrNoData,
	}, {
		name:    "an out-of-order sample adds requests but not concurrency",
		samples: []sampleAt{{"e1", 1.5, 4, 1}, {"e1", 0.5, 100, 3}},
		now:     1.5, stable: 10 * time.Second, panic: time.Second,
		// second 0 holds 0 concurrency and 3 requests; second 1 holds 4 and 1.
		want: WindowStats{StableConcurrency: 2, PanicConcurrency: 4, StableRPS: 2, PanicRPS: 1},
	}, {
		name:    "negative, NaN and infinite values count as 0",
		samples: []sampleAt{{"e1", 0.5, -3, math.NaN()}, {"e2", 0.5, math.Inf(1), -1}},
		now:     0.5, stable: 10 * time.Second, panic: time.Second,
		want: WindowStats{},
	}, {
		name:    "weighted exponential weighs newer seconds more",
		alg:     AlgorithmWeightedExponential,
		samples: []sampleAt{{"e1", 0.5, 0, 0}, {"e1", 1.5, 10, 4}},
		now:     1.5, stable: 2 * time.Second, panic: time.Second,
		want: WindowStats{StableConcurrency: 10 / (1 + w), PanicConcurrency: 10, StableRPS: 4 / (1 + w), PanicRPS: 4},
	}, {
		name:    "weighted exponential of a constant is the constant",
		alg:     AlgorithmWeightedExponential,
		samples: every("e1", 0, 9, 6, 3),
		now:     9.5, stable: 10 * time.Second, panic: 3 * time.Second,
		want: WindowStats{StableConcurrency: 6, PanicConcurrency: 6, StableRPS: 3, PanicRPS: 3},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			alg := tc.alg
			if alg == "" {
				alg = AlgorithmLinear
			}
			c, _ := newTestCollector(alg)
			record(t, c, keyA, tc.samples...)
			got, err := c.StableAndPanic(keyA, at(tc.now), tc.stable, tc.panic)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			assertStats(t, tc.want, got)
		})
	}
}

func TestCollectorDropsFutureAndTooOldSamples(t *testing.T) {
	c, clk := newTestCollector(AlgorithmLinear)
	clk.SetTime(at(10))
	record(t, c, keyA, sampleAt{"e1", 10 + MaxFutureSkew.Seconds() + 1, 50, 50})
	if got := c.Dropped(); got != 1 {
		t.Fatalf("Dropped() = %d after a future sample, want 1", got)
	}
	record(t, c, keyA, every("e1", 0, 10, 1, 0)...)
	record(t, c, keyA, sampleAt{"e1", -100, 50, 50}) // far older than the ring
	if got := c.Dropped(); got != 2 {
		t.Fatalf("Dropped() = %d after a too-old sample, want 2", got)
	}
	got, err := c.StableAndPanic(keyA, at(10.5), 10*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	assertStats(t, WindowStats{StableConcurrency: 1, PanicConcurrency: 1}, got)
}

func TestCollectorForgetAndExpire(t *testing.T) {
	c, _ := newTestCollector(AlgorithmLinear)
	record(t, c, keyA, every("e1", 0, 3, 1, 1)...)
	record(t, c, keyB, every("e1", 0, 3, 1, 1)...)
	c.Forget(keyA)
	if _, err := c.StableAndPanic(keyA, at(3), 10*time.Second, time.Second); !errors.Is(err, ErrNoData) {
		t.Fatalf("after Forget: err = %v, want ErrNoData", err)
	}
	c.Expire(at(4))
	if _, err := c.StableAndPanic(keyB, at(3), 10*time.Second, time.Second); err != nil {
		t.Fatalf("Expire dropped a recent revision: %v", err)
	}
	c.Expire(at(100))
	if _, err := c.StableAndPanic(keyB, at(3), 10*time.Second, time.Second); !errors.Is(err, ErrNoData) {
		t.Fatalf("after Expire: err = %v, want ErrNoData", err)
	}
}

// TestCollectorCachedSeriesFollowsForgetAndExpire checks that a decision
// loop's cached series is looked up again once the collector dropped it:
// it never answers from a forgotten or expired series.
func TestCollectorCachedSeriesFollowsForgetAndExpire(t *testing.T) {
	c, _ := newTestCollector(AlgorithmLinear)
	var cached *series
	ask := func(sec float64) (WindowStats, error) {
		return c.stableAndPanicCached(&cached, keyA, at(sec), 10*time.Second, time.Second)
	}
	if _, err := ask(0); !errors.Is(err, ErrNoData) || cached != nil {
		t.Fatalf("before any sample: err %v, cached %v; want ErrNoData, nothing cached", err, cached)
	}
	record(t, c, keyA, every("e1", 0, 3, 4, 4)...)
	st, err := ask(3)
	first := cached
	if err != nil || first == nil || math.Abs(st.PanicConcurrency-4) > approx {
		t.Fatalf("after samples: %+v, %v, cached %v; want panic concurrency 4 and a cached series", st, err, first)
	}
	c.Forget(keyA)
	if _, err := ask(3); !errors.Is(err, ErrNoData) {
		t.Fatalf("after Forget: err = %v, want ErrNoData (the cached series was dropped)", err)
	}
	record(t, c, keyA, every("e1", 4, 6, 2, 2)...)
	if st, err := ask(6); err != nil || cached == first || math.Abs(st.PanicConcurrency-2) > approx {
		t.Fatalf("after new samples: %+v, %v; want the new series (panic concurrency 2)", st, err)
	}
	c.Expire(at(200))
	if _, err := ask(6); !errors.Is(err, ErrNoData) {
		t.Fatalf("after Expire: err = %v, want ErrNoData", err)
	}
}

func TestCollectorGrowsRingForLongerWindow(t *testing.T) {
	c, _ := newTestCollector(AlgorithmLinear) // 10 s initial window
	record(t, c, keyA, every("e1", 0, 4, 2, 0)...)
	// The first query with a 30 s window grows the ring, keeping seconds 0..4.
	if _, err := c.StableAndPanic(keyA, at(4.5), 30*time.Second, time.Second); err != nil {
		t.Fatal(err)
	}
	record(t, c, keyA, every("e1", 5, 29, 2, 0)...)
	got, err := c.StableAndPanic(keyA, at(29.5), 30*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	assertStats(t, WindowStats{StableConcurrency: 2, PanicConcurrency: 2}, got)
}

func TestCollectorConcurrentRecord(t *testing.T) {
	c, _ := newTestCollector(AlgorithmLinear)
	const workers, perWorker = 4, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := string(rune('a' + w))
			for i := range perWorker {
				c.Record(Sample{Revision: keyA, Source: src, Time: at(float64(i%10) + 0.5), Concurrency: 1, Requests: 1})
				if i%50 == 0 {
					_, _ = c.StableAndPanic(keyA, at(9.5), 10*time.Second, time.Second)
				}
			}
		}()
	}
	wg.Wait()
	got, err := c.StableAndPanic(keyA, at(9.5), 10*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Each worker wrote 50 samples in every second 0..9, in order per second
	// only for its own source; the total request count is exact.
	if want := float64(workers*perWorker) / 10; math.Abs(got.StableRPS-want) > approx {
		t.Errorf("StableRPS = %v, want %v", got.StableRPS, want)
	}
}
