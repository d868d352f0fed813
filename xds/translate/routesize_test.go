package translate

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// BenchmarkRouteConfigSize10k reports, at 10,000 revisions, the size of
// the one route configuration holding every virtual host (route-config-bytes,
// Config.InlineRoutes: what each host change resends to a
// state-of-the-world Envoy) and its marshal time (ns/op); the size of
// thaw_http when its virtual hosts come over VHDS (vhds-route-config-bytes,
// sent once); and the mean size of one virtual host (vhost-bytes: what
// adding or removing a revision's host sends over VHDS).
func BenchmarkRouteConfigSize10k(b *testing.B) {
	snap := benchSnapshot(10000)
	cfg := testConfig()
	cfg.InlineRoutes = true
	inline, err := Translate(snap, cfg)
	if err != nil {
		b.Fatal(err)
	}
	vhds, err := Translate(snap, testConfig())
	if err != nil {
		b.Fatal(err)
	}
	rc := inline.Routes[0]
	var n int
	for b.Loop() {
		out, err := proto.Marshal(rc)
		if err != nil {
			b.Fatal(err)
		}
		n = len(out)
	}
	var vhBytes int
	for _, vh := range vhds.VirtualHosts {
		vhBytes += proto.Size(vh)
	}
	b.ReportMetric(float64(n), "route-config-bytes")
	b.ReportMetric(float64(proto.Size(vhds.Routes[0])), "vhds-route-config-bytes")
	b.ReportMetric(float64(vhBytes)/float64(len(vhds.VirtualHosts)), "vhost-bytes")
}
