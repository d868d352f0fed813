package cache

import (
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"google.golang.org/protobuf/proto"
)

// fakeDemand resolves "thaw_http/<host>" by an exact table and keeps a
// resident set: the pure logic the cache relies on (the real one is
// xds/ondemand.Policy, tested there and in the e2e tests).
type fakeDemand struct {
	hosts    map[string]string
	resident map[string]bool
}

func (d *fakeDemand) Resident(name string) bool { return d.resident[name] }
func (d *fakeDemand) Resolve(alias string) (string, bool) {
	n, ok := d.hosts[strings.TrimPrefix(alias, "thaw_http/")]
	return n, ok
}
func (d *fakeDemand) Set(string, []byte, []byte) {}
func (d *fakeDemand) Delete(string, []byte)      {}
func (d *fakeDemand) Anchor() string             { return "thaw_http/anchor.invalid" }

// vhStream is a wildcard VHDS stream as Envoy opens it.
type vhStream struct{ edsStream }

func newVHStream(t *testing.T, c *Delta) (*vhStream, *discoveryv3.DeltaDiscoveryResponse) {
	s := &vhStream{edsStream{t: t, c: c, ch: make(chan cachev3.DeltaResponse, 4),
		sub: stream.NewDeltaSubscription(nil, nil, nil, true)}}
	return s, s.request(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.VirtualHostType})
}

// fetch subscribes to aliases as Envoy's on_demand filter does.
func (s *vhStream) fetch(aliases ...string) *discoveryv3.DeltaDiscoveryResponse {
	s.sub.UpdateResourceSubscriptions(aliases, nil)
	return s.request(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.VirtualHostType, ResponseNonce: "n",
		ResourceNamesSubscribe: aliases})
}

func (s *vhStream) ackVH() *discoveryv3.DeltaDiscoveryResponse {
	return s.request(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.VirtualHostType, ResponseNonce: "n"})
}

func setVHosts(t *testing.T, c *Delta, names ...string) {
	t.Helper()
	upd := map[string]types.Resource{}
	enc := map[string][]byte{}
	ver := map[string]string{}
	for _, n := range names {
		vh := &routev3.VirtualHost{Name: n, Domains: []string{strings.TrimPrefix(n, "thaw_http/") + ".example.com"}}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(vh)
		if err != nil {
			t.Fatal(err)
		}
		upd[n], enc[n], ver[n] = vh, b, cachev3.HashResource(b)
	}
	if err := c.Update(upd, enc, ver, nil); err != nil {
		t.Fatal(err)
	}
}

func names(r *discoveryv3.DeltaDiscoveryResponse) (got []string) {
	for _, res := range r.GetResources() {
		got = append(got, res.GetName())
	}
	slices.Sort(got)
	return got
}

func TestDemandWildcardGetsResidentOnly(t *testing.T) {
	c := NewDelta(resourcev3.VirtualHostType, 64)
	d := &fakeDemand{hosts: map[string]string{"a.example.com": "thaw_http/a"}, resident: map[string]bool{"thaw_http/b": true}}
	c.SetDemand(d, 2)
	setVHosts(t, c, "thaw_http/a", "thaw_http/b", "thaw_http/c")
	s, first := newVHStream(t, c)
	if got := names(first); !slices.Equal(got, []string{"thaw_http/b"}) {
		t.Fatalf("first response = %v, want only the resident host", got)
	}
	if r := s.ackVH(); r != nil {
		t.Fatalf("ACK answered with %v", names(r))
	}
	// A new resident host reaches the stream; a non-resident one does not.
	d.resident["thaw_http/c"] = true
	c.Recheck([]string{"thaw_http/c"})
	if r := s.take(); !slices.Equal(names(r), []string{"thaw_http/c"}) {
		t.Fatalf("after Recheck: %v, want thaw_http/c", names(r))
	}
}

func TestDemandFetchAliasAndUnknown(t *testing.T) {
	c := NewDelta(resourcev3.VirtualHostType, 64)
	d := &fakeDemand{hosts: map[string]string{"a.example.com": "thaw_http/a"}, resident: map[string]bool{}}
	c.SetDemand(d, 2)
	setVHosts(t, c, "thaw_http/a", "thaw_http/b")
	s, first := newVHStream(t, c)
	// Nothing resident: the first answer carries the anchor, body-less.
	if rs := first.GetResources(); len(rs) != 1 || rs[0].GetName() != "thaw_http/anchor.invalid" || rs[0].GetResource() != nil {
		t.Fatalf("first response with nothing resident = %v, want the body-less anchor", rs)
	}
	s.ackVH()
	r := s.fetch("thaw_http/a.example.com", "thaw_http/nope.example.com")
	if r == nil {
		t.Fatal("on-demand fetch not answered")
	}
	var found, unknown *discoveryv3.Resource
	for _, res := range r.GetResources() {
		switch res.GetName() {
		case "thaw_http/a":
			found = res
		case "thaw_http/nope.example.com":
			unknown = res
		}
	}
	if found == nil || !slices.Equal(found.GetAliases(), []string{"thaw_http/a.example.com"}) || found.GetResource() == nil {
		t.Fatalf("fetched host = %v, want thaw_http/a with alias thaw_http/a.example.com", found)
	}
	if unknown == nil || unknown.GetResource() != nil || !slices.Equal(unknown.GetAliases(), []string{"thaw_http/nope.example.com"}) {
		t.Fatalf("unknown host = %v, want a body-less resource named and aliased by the request", unknown)
	}
	if len(r.GetResources()) != 2 {
		t.Fatalf("response = %v, want the fetched host and the unknown alias only", names(r))
	}
	// Asking again (another worker's request raced the first answer) is
	// answered again, though the stream holds the host.
	if r := s.fetch("thaw_http/a.example.com"); !slices.Equal(names(r), []string{"thaw_http/a"}) {
		t.Fatalf("second fetch = %v, want thaw_http/a again", names(r))
	}
	// A fetched host follows updates like a resident one.
	setVHosts(t, c, "thaw_http/a")
	s.ackVH()
	if got := c.DemandCounts(); !slices.Equal(got, []int{1}) {
		t.Fatalf("fetched per stream = %v, want [1]", got)
	}
}

func TestDemandResidencyEviction(t *testing.T) {
	c := NewDelta(resourcev3.VirtualHostType, 64)
	d := &fakeDemand{hosts: map[string]string{"a.example.com": "thaw_http/a"},
		resident: map[string]bool{"thaw_http/a": true, "thaw_http/b": true}}
	c.SetDemand(d, 2)
	setVHosts(t, c, "thaw_http/a", "thaw_http/b")
	s, first := newVHStream(t, c)
	if !slices.Equal(names(first), []string{"thaw_http/a", "thaw_http/b"}) {
		t.Fatalf("first = %v", names(first))
	}
	s.ackVH()
	// The stream asks for a (a request reached it before... or after
	// anything): it keeps a for the life of the stream.
	s.fetch("thaw_http/a.example.com")
	s.ackVH()
	// Both leave residency: b (never asked for) is removed, a is kept.
	d.resident = map[string]bool{}
	c.Recheck([]string{"thaw_http/a", "thaw_http/b"})
	r := s.take()
	if r == nil || !slices.Equal(r.GetRemovedResources(), []string{"thaw_http/b"}) || len(r.GetResources()) != 0 {
		t.Fatalf("after residency ended: %v removed %v, want b removed only", names(r), r.GetRemovedResources())
	}
	s.ackVH()
	// b asked for later: sent again.
	d.hosts["b.example.com"] = "thaw_http/b"
	if r := s.fetch("thaw_http/b.example.com"); !slices.Equal(names(r), []string{"thaw_http/b"}) {
		t.Fatalf("b fetched after its eviction: %v", names(r))
	}
}

func TestDemandAliasFollowsChanges(t *testing.T) {
	c := NewDelta(resourcev3.VirtualHostType, 64)
	d := &fakeDemand{hosts: map[string]string{}, resident: map[string]bool{}}
	c.SetDemand(d, 2)
	setVHosts(t, c, "thaw_http/a")
	s, _ := newVHStream(t, c)
	s.ackVH()
	// Asked before any revision claims the host: not found.
	r := s.fetch("thaw_http/new.example.com")
	if len(r.GetResources()) != 1 || r.GetResources()[0].GetResource() != nil {
		t.Fatalf("unknown alias: %v", r.GetResources())
	}
	s.ackVH()
	// A revision with that host appears: the stream, which still has the
	// alias subscribed (Envoy answers repeats itself), is sent it.
	d.hosts["new.example.com"] = "thaw_http/new"
	setVHosts(t, c, "thaw_http/new")
	r = s.take()
	if r == nil || !slices.Equal(names(r), []string{"thaw_http/new"}) ||
		!slices.Equal(r.GetResources()[0].GetAliases(), []string{"thaw_http/new.example.com"}) {
		t.Fatalf("after the host was added: %v", r)
	}
	s.ackVH()
	// The bound (2 aliases): older aliases are forgotten, not the
	// resources they fetched.
	d.hosts["x.example.com"], d.hosts["y.example.com"] = "thaw_http/a", "thaw_http/a"
	s.fetch("thaw_http/x.example.com")
	s.ackVH()
	s.fetch("thaw_http/y.example.com")
	s.ackVH()
	if got := c.DemandCounts(); !slices.Equal(got, []int{2}) {
		t.Fatalf("fetched = %v, want [2] (new and a)", got)
	}
	setVHosts(t, c, "thaw_http/b") // unrelated: nothing to answer again
	if r := s.take(); r != nil {
		t.Fatalf("unrelated host added: sent %v", names(r))
	}
}

func TestDemandOffSendsEverything(t *testing.T) {
	c := NewDelta(resourcev3.VirtualHostType, 64)
	setVHosts(t, c, "thaw_http/a", "thaw_http/b")
	_, first := newVHStream(t, c)
	if got := names(first); !slices.Equal(got, []string{"thaw_http/a", "thaw_http/b"}) {
		t.Fatalf("without Demand: %v, want every host", got)
	}
}
