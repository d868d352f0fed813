package autoscaler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/revision"
)

// TestCollectorKnownOnly: samples of revisions Known rejects create no
// window and are counted; the known revision is unaffected.
func TestCollectorKnownOnly(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(at(1000))
	c := NewCollector(CollectorOptions{Clock: clk, Window: 10 * time.Second,
		Known: func(k revision.Key) bool { return k == keyA }})
	reg := prometheus.NewRegistry()
	if err := c.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		c.Record(Sample{Revision: revision.Key{Namespace: "fake", Name: string(rune('a'+i%26)) + "x"}, Source: "e1",
			Time: at(1000), Concurrency: 5})
	}
	record(t, c, keyA, every("e1", 990, 1000, 2, 0)...)
	if got := c.DroppedUnknown(); got != 1000 {
		t.Errorf("DroppedUnknown() = %d, want 1000", got)
	}
	n := 0
	for i := range c.shards {
		n += len(c.shards[i].m)
	}
	if n != 1 {
		t.Errorf("collector holds %d revisions, want 1", n)
	}
	if _, err := c.StableAndPanic(revision.Key{Namespace: "fake", Name: "ax"}, at(1000.5), 10*time.Second, time.Second); !errors.Is(err, ErrNoData) {
		t.Errorf("StableAndPanic(unknown) error = %v, want ErrNoData", err)
	}
	got, err := c.StableAndPanic(keyA, at(1000.5), 10*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	assertStats(t, WindowStats{StableConcurrency: 2, PanicConcurrency: 2}, got)
	want := `
# HELP thaw_autoscaler_samples_dropped_total Load samples the collector dropped, by reason.
# TYPE thaw_autoscaler_samples_dropped_total counter
thaw_autoscaler_samples_dropped_total{reason="time"} 0
thaw_autoscaler_samples_dropped_total{reason="unknown_revision"} 1000
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "thaw_autoscaler_samples_dropped_total"); err != nil {
		t.Error(err)
	}
}
