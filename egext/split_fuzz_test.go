package egext

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// FuzzParseSplit: any bytes EG could hand over never panic the hooks; an
// accepted split has 1..16 members whose percents sum to 100, and its
// route and clusters validate.
func FuzzParseSplit(f *testing.F) {
	f.Add(splitJSON(f, "a", member("v1", 90, ""), member("v2", 10, "canary")))
	f.Add(splitJSON(f, "a", member("v1", 100, "")))
	f.Add([]byte(`{"apiVersion":"thaw.dev/v1alpha1","kind":"RevisionSplit","metadata":{"name":"a","namespace":"b"},"spec":{"traffic":[{"revisionName":"x","percent":4294967396}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSplit(b)
		if err != nil {
			return
		}
		var sum uint32
		for _, m := range s.Members {
			sum += m.Percent
		}
		if n := len(s.Members); n == 0 || n > maxSplitMembers || sum != 100 {
			t.Fatalf("accepted %+v: %d members, sum %d", s, n, sum)
		}
		if _, err := SplitRoute(egRoute(nil, nil), s, testOptions()); err != nil {
			t.Fatalf("SplitRoute(%+v): %v", s, err)
		}
		c, err := SplitCluster(egCluster(), s)
		if err != nil {
			t.Fatalf("SplitCluster(%+v): %v", s, err)
		}
		if _, _, err := Translate([]*clusterv3.Cluster{c}, nil, testOptions()); err != nil {
			t.Fatalf("Translate(%+v): %v", s, err)
		}
	})
}
