package xds

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// hostList returns the "ip:port" of cla's socket-address endpoints, sorted.
func hostList(cla *endpointv3.ClusterLoadAssignment) []string {
	var out []string
	for h := range lbHosts(cla) {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

func lbEndpoint(hostPort string) *endpointv3.LbEndpoint {
	host, port, _ := net.SplitHostPort(hostPort)
	p, _ := strconv.Atoi(port)
	return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)}}}}}}}
}

func claOf(hosts ...string) *endpointv3.ClusterLoadAssignment {
	var lbs []*endpointv3.LbEndpoint
	for _, h := range hosts {
		lbs = append(lbs, lbEndpoint(h))
	}
	return &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: lbs}}}
}

// TestRemovalOnly: a ClusterLoadAssignment that removes a host and adds
// another is split into the removal alone; pure additions or removals go
// out whole, unless an earlier removal is still pending (force).
func TestRemovalOnly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		held, next *endpointv3.ClusterLoadAssignment
		force      bool
		want       []string
		wantSplit  bool
	}{
		{name: "swap one", held: claOf("10.0.0.1:80", "10.0.0.2:80"), next: claOf("10.0.0.1:80", "10.0.0.3:80"),
			want: []string{"10.0.0.1:80"}, wantSplit: true},
		{name: "swap all", held: claOf("10.0.0.2:80"), next: claOf("10.0.0.3:80"), want: nil, wantSplit: true},
		{name: "add only", held: claOf("10.0.0.1:80"), next: claOf("10.0.0.1:80", "10.0.0.3:80"),
			want: []string{"10.0.0.1:80", "10.0.0.3:80"}},
		{name: "remove only", held: claOf("10.0.0.1:80", "10.0.0.2:80"), next: claOf("10.0.0.1:80"),
			want: []string{"10.0.0.1:80"}},
		{name: "new assignment", next: claOf("10.0.0.1:80"), want: []string{"10.0.0.1:80"}},
		{name: "add while a removal is pending", held: claOf("10.0.0.1:80"), next: claOf("10.0.0.1:80", "10.0.0.3:80"),
			force: true, want: []string{"10.0.0.1:80"}, wantSplit: true},
		{name: "pending, nothing added", held: claOf("10.0.0.1:80", "10.0.0.2:80"), next: claOf("10.0.0.1:80"),
			force: true, want: []string{"10.0.0.1:80"}},
		{name: "same port, other ip", held: claOf("10.0.0.1:80"), next: claOf("10.0.0.2:80"), want: nil, wantSplit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []string
			if tc.next != nil {
				before = hostList(tc.next)
			}
			got, split := removalOnly(tc.held, tc.next, tc.force)
			if split != tc.wantSplit {
				t.Errorf("split = %v, want %v", split, tc.wantSplit)
			}
			if err := got.ValidateAll(); err != nil {
				t.Errorf("result invalid: %v", err)
			}
			if h := hostList(got); !slices.Equal(h, tc.want) {
				t.Errorf("hosts = %v, want %v", h, tc.want)
			}
			if !slices.Equal(hostList(tc.next), before) {
				t.Errorf("next modified: %v, was %v", hostList(tc.next), before)
			}
		})
	}
}

// recvHosts receives the next endpoint update on c and returns its hosts.
func recvHosts(t *testing.T, c *deltaClient) ([]string, func()) {
	t.Helper()
	r := c.recvType(resourcev3.EndpointType)
	if len(r.GetResources()) != 1 {
		t.Fatalf("got %d assignments, want 1", len(r.GetResources()))
	}
	return hostList(cla(t, r.GetResources()[0])), func() { c.ack(r) }
}

// TestRemovalFirstWaitsForEveryEnvoy reproduces the module's equal-count
// case (docs/activator.md, *Removal ordering*): backend B removed and C
// added in one registry change. Envoy must never get {A, C} while a
// module may still hold {A, B}: it gets {A} first; C follows once every
// Envoy ACKed {A}; the revision's generation is confirmed (modsvc sends C
// to the modules) only after {A, C} is ACKed.
func TestRemovalFirstWaitsForEveryEnvoy(t *testing.T) {
	cfg := componentConfig()
	cfg.RemovalFirst = true
	f := startFixture(t, cfg)
	a, b, c := ready("10.0.0.1", 80), ready("10.0.0.2", 80), ready("10.0.0.3", 80)
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, a, b)
	f.reg.SetSynced()
	c1, c2 := dialSyncedPair(t, f.addr)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := f.srv.WaitConfirmed(ctx, keyA, generation(f, keyA)); err != nil {
		t.Fatal(err)
	}

	f.reg.SetBackends(keyA, []revision.Backend{a, c})
	gen := generation(f, keyA)
	h1, ack1 := recvHosts(t, c1)
	h2, ack2 := recvHosts(t, c2)
	for i, h := range [][]string{h1, h2} {
		if !slices.Equal(h, []string{"10.0.0.1:80"}) {
			t.Fatalf("envoy-%d got %v first, want the removal alone [10.0.0.1:80]", i+1, h)
		}
	}
	ack1()
	waitFor(t, "envoy-1's ACK recorded", func() bool {
		return f.srv.tracker.AckedBy("envoy-1", resourcev3.EndpointType, revision.ClusterName(keyA),
			f.srv.deltas[resourcev3.EndpointType].VersionsOf([]string{revision.ClusterName(keyA)})[revision.ClusterName(keyA)])
	})
	if f.srv.ConfirmedBy("envoy-1", keyA, gen) {
		t.Fatal("generation confirmed for envoy-1 while its Envoy lacks C")
	}
	ack2() // every Envoy has the removal: the addition goes out
	h1, ack1 = recvHosts(t, c1)
	h2, ack2 = recvHosts(t, c2)
	for i, h := range [][]string{h1, h2} {
		if !slices.Equal(h, []string{"10.0.0.1:80", "10.0.0.3:80"}) {
			t.Fatalf("envoy-%d got %v second, want [10.0.0.1:80 10.0.0.3:80]", i+1, h)
		}
	}
	if f.srv.ConfirmedBy("envoy-1", keyA, gen) {
		t.Fatal("confirmed before the addition's ACK")
	}
	ack1()
	ack2()
	if err := f.srv.WaitConfirmed(ctx, keyA, gen); err != nil {
		t.Fatal(err)
	}
	for outcome, want := range map[string]float64{"split": 1, "acked": 1, "timeout": 0} {
		if got := testutil.ToFloat64(f.srv.metrics.removalFirst.WithLabelValues(outcome)); got != want {
			t.Errorf("thaw_xds_removal_first_total{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
}

// TestRemovalFirstTimesOut: an Envoy that never ACKs the removal holds
// the addition back for StageTimeout at most (short here; what is
// asserted is that the addition comes, not when).
func TestRemovalFirstTimesOut(t *testing.T) {
	cfg := componentConfig()
	cfg.StageTimeout = 200 * time.Millisecond
	cfg.RemovalFirst = true
	f := startFixture(t, cfg)
	a, b, c := ready("10.0.0.1", 80), ready("10.0.0.2", 80), ready("10.0.0.3", 80)
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, a, b)
	f.reg.SetSynced()
	c1, c2 := dialSyncedPair(t, f.addr)

	f.reg.SetBackends(keyA, []revision.Backend{a, c})
	h1, ack1 := recvHosts(t, c1)
	if !slices.Equal(h1, []string{"10.0.0.1:80"}) {
		t.Fatalf("envoy-1 got %v first, want [10.0.0.1:80]", h1)
	}
	recvHosts(t, c2) // envoy-2 never ACKs it
	ack1()
	h1, _ = recvHosts(t, c1)
	if !slices.Equal(h1, []string{"10.0.0.1:80", "10.0.0.3:80"}) {
		t.Fatalf("envoy-1 got %v after the timeout, want [10.0.0.1:80 10.0.0.3:80]", h1)
	}
	if got := testutil.ToFloat64(f.srv.metrics.removalFirst.WithLabelValues("timeout")); got != 1 {
		t.Errorf("thaw_xds_removal_first_total{outcome=\"timeout\"} = %v, want 1", got)
	}
}

// TestRemovalFirstOnlyWithModule: without the activator module (ext_proc
// pins nothing) a swap of every backend goes out in one step, so a
// serve-mode cluster never has zero hosts in between; with Module set,
// removal first is on without asking.
func TestRemovalFirstOnlyWithModule(t *testing.T) {
	a, b := ready("10.0.0.1", 80), ready("10.0.0.2", 80)
	for _, tc := range []struct {
		name   string
		module bool
		first  []string
	}{
		{"ext_proc", false, []string{"10.0.0.2:80"}},
		{"module", true, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := componentConfig()
			if tc.module {
				cfg.Module = &translate.ModuleConfig{Path: "/opt/thaw/thaw-activator.so", StateURL: "http://127.0.0.1:9901/activator/v1/state",
					ReportURL: "http://127.0.0.1:9901/activator/v1/report", Node: "envoy-1"}
			}
			f := startFixture(t, cfg)
			f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, a)
			f.reg.SetSynced()
			c := dialDelta(t, f.addr, "envoy-1")
			syncAll(t, c)
			f.reg.SetBackends(keyA, []revision.Backend{b})
			h, _ := recvHosts(t, c)
			if !slices.Equal(h, tc.first) {
				t.Fatalf("first endpoints after swapping A for B = %v, want %v", h, tc.first)
			}
		})
	}
}
