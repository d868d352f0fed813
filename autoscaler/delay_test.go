package autoscaler

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestMaxWindow(t *testing.T) {
	var w maxWindow
	steps := []struct {
		at     float64
		v      int32
		window time.Duration
		want   int32
	}{
		{at: 0, v: 5, window: 10 * time.Second, want: 5},
		{at: 2, v: 1, window: 10 * time.Second, want: 5},
		{at: 4, v: 3, window: 10 * time.Second, want: 5},
		{at: 10, v: 1, window: 10 * time.Second, want: 3},
		{at: 14, v: 1, window: 10 * time.Second, want: 1},
		{at: 15, v: 7, window: 10 * time.Second, want: 7},
		{at: 16, v: 2, window: 0, want: 2}, // no delay: forget everything
		{at: 17, v: 1, window: 10 * time.Second, want: 1},
	}
	for i, st := range steps {
		if got := w.Record(at(st.at), st.v, st.window); got != st.want {
			t.Errorf("step %d: Record(t=%v, %d) = %d, want %d", i, st.at, st.v, got, st.want)
		}
	}
	// A decreasing run is all the window keeps: an increasing sequence
	// leaves one entry however long it is.
	for i := range 1000 {
		w.Record(at(100+float64(i)), int32(i), time.Hour)
	}
	if n := len(w.entries); n != 1 {
		t.Errorf("%d entries after an increasing sequence, want 1", n)
	}
}

func TestMultiscalerDecisionsSorted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		for _, k := range []keyScale{{keyB, 2}, {keyA, 3}} {
			h.target.set(k.key, k.scale, k.scale)
			h.reg.Upsert(k.key, revisionFor(k.key).Spec)
		}
		h.start()
		synctest.Wait()
		got := h.ms.Decisions()
		if len(got) != 2 || got[0].Key != keyA || got[1].Key != keyB || got[0].DesiredScale != 3 || got[1].DesiredScale != 2 {
			t.Errorf("Decisions() = %+v, want a (3) then b (2)", got)
		}
		h.stop()
	})
}
