package autoscaler

import "time"

// maxWindow is a sliding-window maximum over time, used for the scale-down
// delay: a value recorded at t counts until t+window. It keeps only values
// that can still become the maximum (a decreasing run), so its size is
// bounded by the number of decisions within one window.
type maxWindow struct {
	entries []timedValue
}

type timedValue struct {
	t time.Time
	v int32
}

// Record adds v at now and returns the largest value recorded within
// (now-window, now]. A window ≤ 0 forgets everything and returns v.
func (w *maxWindow) Record(now time.Time, v int32, window time.Duration) int32 {
	if window <= 0 {
		w.entries = w.entries[:0]
		return v
	}
	cut := now.Add(-window)
	drop := 0
	for drop < len(w.entries) && !w.entries[drop].t.After(cut) {
		drop++
	}
	if drop > 0 {
		n := copy(w.entries, w.entries[drop:])
		w.entries = w.entries[:n]
	}
	for len(w.entries) > 0 && w.entries[len(w.entries)-1].v <= v {
		w.entries = w.entries[:len(w.entries)-1]
	}
	w.entries = append(w.entries, timedValue{t: now, v: v})
	return w.entries[0].v
}
