package autoscaler

import (
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/thaw-dev/thaw/revision"
)

// handleTarget is a fakeTarget that hands out ScaleReaders for the keys in
// handled; others have none (GetScale).
type handleTarget struct {
	*fakeTarget
	handled map[revision.Key]bool
	reads   atomic.Int64
}

type fakeReader struct {
	t   *handleTarget
	key revision.Key
}

func (r fakeReader) Scale() (int32, int32, error) {
	r.t.reads.Add(1)
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	return r.t.current[r.key], r.t.ready[r.key], nil
}

func (h *handleTarget) ScaleHandle(key revision.Key) (ScaleReader, bool) {
	if !h.handled[key] {
		return nil, false
	}
	return fakeReader{t: h, key: key}, true
}

// TestMultiscalerReadsThroughScaleHandles checks that a target's handles
// replace GetScale for the revisions they cover (and only those), with
// the same decisions.
func TestMultiscalerReadsThroughScaleHandles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ht *handleTarget
		h := newHarness(t, func(o *MultiscalerOptions) {
			ht = &handleTarget{fakeTarget: o.Target.(*fakeTarget), handled: map[revision.Key]bool{keyA: true}}
			o.Target = ht
		})
		h.target.set(keyA, 1, 1)
		h.target.set(keyB, 1, 1)
		h.reg.Upsert(keyA, testSpec())
		h.reg.Upsert(keyB, testSpec(func(s *revision.Spec) { s.Hosts = []string{"b.example.com"} }))
		h.start()
		synctest.Wait()
		h.load(keyA, 50, 3)
		synctest.Wait()
		if got := h.target.scale(keyA); got != 5 {
			t.Errorf("scale of %s (read through its handle) = %d, want 5", keyA, got)
		}
		if d, _ := h.ms.Status(keyB); d.CurrentScale != 1 {
			t.Errorf("%s status %+v, want current 1 from GetScale", keyB, d)
		}
		h.stop()
		_, gets := h.target.calls()
		reads := ht.reads.Load()
		// keyA is decided once at the start and once per second of load
		// (ticks and pokes); keyB only through GetScale.
		if reads == 0 || gets == 0 {
			t.Errorf("%d handle reads, %d GetScale calls; want both (keyA by handle, keyB by GetScale)", reads, gets)
		}
	})
}
