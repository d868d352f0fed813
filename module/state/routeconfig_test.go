package state

import (
	"errors"
	"strings"
	"testing"
)

// TestDecodeRouteConfigCluster: a route configuration may name the
// revision's cluster (the module writes it into ClusterHeader, so it
// must be a plain cluster name); anything else is refused.
func TestDecodeRouteConfigCluster(t *testing.T) {
	for _, tt := range []struct {
		in      string
		cluster string
		ok      bool
	}{
		{in: `{"revision":"ns/a"}`, ok: true},
		{in: `{"revision":"ns/a","cluster":"rev_ns_a"}`, cluster: "rev_ns_a", ok: true},
		{in: `{"revision":"ns/a","cluster":"revx_abc-1.2"}`, cluster: "revx_abc-1.2", ok: true},
		{in: `{"revision":"ns/a","cluster":"rev\r\nx-evil: 1"}`},
		{in: `{"revision":"ns/a","cluster":"rev ns"}`},
		{in: `{"revision":"ns/a","cluster":"` + strings.Repeat("a", maxClusterName+1) + `"}`},
		{in: `{"cluster":"rev_ns_a"}`},
	} {
		c, err := DecodeRouteConfig([]byte(tt.in))
		if tt.ok && (err != nil || c.Cluster != tt.cluster) {
			t.Errorf("%.60s: got %+v, %v; want cluster %q", tt.in, c, err, tt.cluster)
		}
		if !tt.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("%.60s: err = %v, want ErrInvalid", tt.in, err)
		}
	}
}
