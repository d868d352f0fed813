package ondemand

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkIndexLiveHeap100k reports live-MiB, what an Index of 100,000
// virtual hosts (one domain each, as thaw's translation of scale100k's
// fleet) keeps after a collection; ns/op is indexing them.
func BenchmarkIndexLiveHeap100k(b *testing.B) {
	const n = 100000
	names := make([]string, n)
	encs := make([][]byte, n)
	for i := range n {
		names[i] = fmt.Sprintf("thaw_http/ns-%d/app-%d", i%50, i)
		encs[i] = encodeVH(b, names[i], fmt.Sprintf("app-%d.ns-%d.example.com", i, i%50))
	}
	var live float64
	for b.Loop() {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		x := NewIndex()
		for i := range n {
			x.Set(names[i], nil, encs[i])
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		live += float64(m1.HeapAlloc) - float64(m0.HeapAlloc)
		runtime.KeepAlive(x)
	}
	b.ReportMetric(live/float64(b.N)/(1<<20), "live-MiB")
}
