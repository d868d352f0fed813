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

// TestDecodeRouteConfigFastPath: thaw's own shapes take the fast path;
// anything else (escapes, other fields or order, non-ASCII, trailing
// bytes) is left to the strict decoder, and both paths agree.
func TestDecodeRouteConfigFastPath(t *testing.T) {
	for _, tt := range []struct {
		in   string
		fast bool
	}{
		{`{"revision":"ns/a"}`, true},
		{`{"revision":"ns/a","cluster":"rev_ns_a"}`, true},
		{`{"revision":"ns/a","cluster":""}`, true},
		{`{"cluster":"rev_ns_a","revision":"ns/a"}`, false},
		{`{"revision":"ns/\u0061"}`, false},
		{`{"revision":"ns/a"} `, false},
		{`{"revision":"ns/a","other":1}`, false},
		{`{"revision":"ns/é"}`, false},
		{`{"revision":"ns/a`, false},
		{`{"revision":"ns/a","cluster":"rev_ns_a"`, false},
	} {
		fast, ok := decodeRouteConfigFast([]byte(tt.in))
		if ok != tt.fast {
			t.Errorf("%s: fast path %v, want %v", tt.in, ok, tt.fast)
		}
		if ok {
			if slow, err := decodeRouteConfigJSON([]byte(tt.in)); err != nil || slow != fast {
				t.Errorf("%s: fast %+v, strict %+v, %v", tt.in, fast, slow, err)
			}
		}
	}
	thaws := []byte(`{"revision":"ns/a","cluster":"rev_ns_a"}`)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := DecodeRouteConfig(thaws); err != nil {
			t.Fatal(err)
		}
	}); n > 2 {
		t.Errorf("DecodeRouteConfig of thaw's shape: %.0f allocations, want at most 2 (its strings)", n)
	}
}
