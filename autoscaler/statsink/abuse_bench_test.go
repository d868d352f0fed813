package statsink

import (
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// BenchmarkAbuseUnknownClusters feeds one node messages of invented
// revision cluster names (issue 13: 800k names took thaw to 2.11 GB) into
// a sink and a real collector that know one revision, and reports the heap
// both retain afterwards (after GC) per invented name: it must stay near 0.
func BenchmarkAbuseUnknownClusters(b *testing.B) {
	const names = 100_000
	known := func(k revision.Key) bool { return k == demo }
	col := autoscaler.NewCollector(autoscaler.CollectorOptions{Clock: clocktesting.NewFakePassiveClock(t0), Known: known})
	sink := New(Options{Recorder: col, Clock: clocktesting.NewFakeClock(t0), Limits: Limits{Known: known}})
	n, err := sink.connect("abuser")
	if err != nil {
		b.Fatal(err)
	}
	raw, err := proto.Marshal(envoyMsg("abuser", ts(0), append(fakeClusters(names), gauge("upstream_rq_active", demoCluster, 1))...))
	if err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		n.ingest(raw, at(i))
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	retained := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	b.ReportMetric(retained/names, "retained-B/name")
	b.ReportMetric(float64(names), "names/msg")
	if got := col.DroppedUnknown(); got != 0 {
		b.Fatalf("the collector saw %d samples of unknown revisions: the sink should drop them first", got)
	}
	runtime.KeepAlive(raw)
}
