package autoscaler

import (
	"errors"
	"math"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// refModel recomputes the collector's documented semantics naively from
// the whole sample list (no ring, no incremental sums).
type refModel struct {
	expiry  int64
	samples []Sample
}

func (m *refModel) perSecond() (conc, reqs map[int64]float64, first, last int64) {
	conc, reqs = map[int64]float64{}, map[int64]float64{}
	type acc struct{ sum, n float64 }
	bySource := map[string]map[int64]*acc{}
	newest := map[string]int64{}
	first, last = math.MaxInt64, math.MinInt64
	for _, s := range m.samples {
		sec := s.Time.Unix()
		first, last = min(first, sec), max(last, sec)
		reqs[sec] += clean(s.Requests)
		secs := bySource[s.Source]
		if secs == nil {
			secs = map[int64]*acc{}
			bySource[s.Source] = secs
		} else if sec < newest[s.Source] {
			continue // out of order: concurrency ignored
		}
		newest[s.Source] = sec
		if secs[sec] == nil {
			secs[sec] = &acc{}
		}
		secs[sec].sum += clean(s.Concurrency)
		secs[sec].n++
	}
	for _, secs := range bySource {
		for sec, a := range secs {
			v := a.sum / a.n
			conc[sec] += v
			// Hold until the source's next reported second, at most expiry.
			for t := sec + 1; t <= sec+m.expiry && t <= last; t++ {
				if secs[t] != nil {
					break
				}
				conc[t] += v
			}
		}
	}
	return conc, reqs, first, last
}

func (m *refModel) window(nowSec, n int64, weighted bool) (conc, rps float64, values []float64, ok bool) {
	c, r, first, last := m.perSecond()
	if len(m.samples) == 0 {
		return 0, 0, nil, false
	}
	ref := nowSec
	if last < nowSec {
		ref--
	}
	start, end := max(ref-n+1, first), min(ref, last)
	if end < start {
		return 0, 0, nil, false
	}
	var cs, rs, ws float64
	for t := start; t <= end; t++ {
		w := 1.0
		if weighted {
			w = math.Pow(DecayFloor, float64(end-t)/float64(n))
		}
		cs += w * c[t]
		rs += w * r[t]
		ws += w
		values = append(values, c[t])
	}
	return cs / ws, rs / ws, values, true
}

// FuzzCollector feeds arbitrary sample sequences (4 bytes each: source,
// time, concurrency, requests) and checks the collector against refModel
// and the bounds of its inputs. `go test` runs only the seeds below.
func FuzzCollector(f *testing.F) {
	f.Add([]byte{0, 0, 10, 1, 0, 1, 10, 1, 1, 1, 20, 2}, uint8(3), uint8(5), uint8(2), false, false)
	f.Add([]byte{0, 7, 5, 0, 1, 0, 200, 3, 0, 2, 9, 9, 2, 6, 0, 0}, uint8(7), uint8(8), uint8(1), true, false)
	f.Add([]byte{0, 3, 1, 1, 0, 3, 255, 0, 0, 1, 4, 2}, uint8(9), uint8(10), uint8(10), false, false)
	f.Add([]byte{0, 200, 1, 1, 1, 3, 8, 0, 2, 100, 4, 2}, uint8(120), uint8(10), uint8(3), false, true)
	f.Fuzz(func(t *testing.T, data []byte, nowOff, stableS, panicS uint8, weighted, wide bool) {
		alg := AlgorithmLinear
		if weighted {
			alg = AlgorithmWeightedExponential
		}
		clk := testingclock.NewFakePassiveClock(at(1e6))
		c := NewCollector(CollectorOptions{Clock: clk, SourceExpiry: 2 * time.Second, Algorithm: alg, Window: 10 * time.Second})
		ref := &refModel{expiry: 2}
		maxBySource := map[string]float64{}
		for i := 0; i+4 <= len(data); i += 4 {
			src := string(rune('a' + data[i]%3))
			// Narrow: seconds 0..7 (exact comparison); wide: -64..191.
			sec := float64(data[i+1]%8) + float64(data[i+1]%5)/5
			if wide {
				sec = float64(int(data[i+1])-64) + 0.25
			}
			s := Sample{Revision: keyA, Source: src, Time: at(sec), Concurrency: float64(data[i+2]), Requests: float64(data[i+3] % 16)}
			c.Record(s)
			ref.samples = append(ref.samples, s)
			maxBySource[src] = max(maxBySource[src], s.Concurrency)
		}
		ns := int64(stableS%12) + 1
		np := min(int64(panicS%12)+1, ns)
		nowSec := int64(nowOff % 12)
		if wide {
			nowSec = int64(nowOff) - 64
		}
		got, err := c.StableAndPanic(keyA, at(float64(nowSec)+0.5), time.Duration(ns)*time.Second, time.Duration(np)*time.Second)
		if err != nil && !errors.Is(err, ErrNoData) {
			t.Fatalf("unexpected error %v", err)
		}
		var ceiling float64
		for _, m := range maxBySource {
			ceiling += m
		}
		for _, v := range []float64{got.StableConcurrency, got.PanicConcurrency, got.StableRPS, got.PanicRPS} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("non-finite or negative average in %+v", got)
			}
		}
		if got.StableConcurrency > ceiling+1e-6 || got.PanicConcurrency > ceiling+1e-6 {
			t.Fatalf("concurrency %+v above the sum of the sources' maxima %v", got, ceiling)
		}
		if wide {
			return // drops and ring resets are not modelled
		}
		wantC, wantR, values, ok := ref.window(t0.Unix()+nowSec, ns, weighted)
		if ok != (err == nil) {
			t.Fatalf("err = %v, reference has data = %v", err, ok)
		}
		if !ok {
			return
		}
		if !approxEqual(got.StableConcurrency, wantC) || !approxEqual(got.StableRPS, wantR) {
			t.Fatalf("stable = (%v, %v), reference (%v, %v)", got.StableConcurrency, got.StableRPS, wantC, wantR)
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range values {
			lo, hi = min(lo, v), max(hi, v)
		}
		if got.StableConcurrency < lo-1e-6 || got.StableConcurrency > hi+1e-6 {
			t.Fatalf("stable concurrency %v outside the window's per-second range [%v, %v]", got.StableConcurrency, lo, hi)
		}
		if pc, pr, _, pok := ref.window(t0.Unix()+nowSec, np, weighted); pok {
			if !approxEqual(got.PanicConcurrency, pc) || !approxEqual(got.PanicRPS, pr) {
				t.Fatalf("panic = (%v, %v), reference (%v, %v)", got.PanicConcurrency, got.PanicRPS, pc, pr)
			}
		} else if got.PanicConcurrency != 0 || got.PanicRPS != 0 {
			t.Fatalf("empty panic window averaged to %+v", got)
		}
	})
}

func approxEqual(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }
