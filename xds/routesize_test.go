package xds

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// BenchmarkRouteConfigSize10k reports the size of the one route
// configuration at 10,000 revisions: what a flip done at the route (RDS)
// instead of the ClusterLoadAssignment would resend, and its marshal time.
func BenchmarkRouteConfigSize10k(b *testing.B) {
	res, err := Translate(benchSnapshot(10000), testConfig())
	if err != nil {
		b.Fatal(err)
	}
	rc := res.Routes[0]
	var n int
	for b.Loop() {
		out, err := proto.Marshal(rc)
		if err != nil {
			b.Fatal(err)
		}
		n = len(out)
	}
	b.ReportMetric(float64(n), "route-config-bytes")
	b.ReportMetric(float64(len(rc.GetVirtualHosts())), "virtual-hosts")
}
