package cache

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/ondemand"
)

// lazyHosts sets, on a VHDS cache on demand with the real policy, lazily
// encoded hosts thaw_http/<h> for h.example.com, counting their builds,
// and returns each one's eager encoding.
func lazyHosts(t *testing.T, c *Delta, builds *atomic.Int32, hosts ...string) map[string]*encoded.Resource {
	t.Helper()
	upd := map[string]types.Resource{}
	lazy := map[string]*encoded.Resource{}
	want := map[string]*encoded.Resource{}
	for _, h := range hosts {
		name := "thaw_http/" + h
		vh := &routev3.VirtualHost{Name: name, Domains: []string{h + ".example.com", "*." + h + ".example.com"},
			Routes: []*routev3.Route{{Name: h}}}
		e, err := encoded.Encode(vh)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = e
		upd[name] = nil
		lazy[name] = encoded.NewLazy(vh.Domains, func() (types.Resource, error) {
			builds.Add(1)
			return vh, nil
		})
	}
	if err := c.UpdateLazy(upd, nil, nil, lazy, nil); err != nil {
		t.Fatal(err)
	}
	return want
}

func newLazyCache(t *testing.T) (*Delta, *ondemand.Policy) {
	c := NewDelta(resourcev3.VirtualHostType, 64)
	p := ondemand.NewPolicy("thaw_http", time.Minute)
	c.SetDemand(p, 8)
	return c, p
}

func sameAs(t *testing.T, r *discoveryv3.Resource, want *encoded.Resource) {
	t.Helper()
	if r.GetVersion() != want.Version || !bytes.Equal(r.GetResource().GetValue(), want.Bytes) {
		t.Fatalf("%s: sent version %s, %d bytes; want the eager build's %s, %d bytes", r.GetName(), r.GetVersion(),
			len(r.GetResource().GetValue()), want.Version, len(want.Bytes))
	}
}

// TestLazyHostIndexedNeverEncoded: the index resolves a host from the
// domains it was set with, and a stream's first answer, the versions
// read for the resident hosts and the resolution encode nothing.
func TestLazyHostIndexedNeverEncoded(t *testing.T) {
	c, p := newLazyCache(t)
	var builds atomic.Int32
	lazyHosts(t, c, &builds, "a", "b")
	for alias, want := range map[string]string{"thaw_http/a.example.com": "thaw_http/a", "thaw_http/x.b.example.com": "thaw_http/b"} {
		if n, ok := p.Resolve(alias); !ok || n != want {
			t.Errorf("Resolve(%s) = %q, %v; want %s", alias, n, ok, want)
		}
	}
	newVHStream(t, c)
	if v := c.VersionsWhere(p.Resident); len(v) != 0 {
		t.Errorf("resident versions = %v, want none", v)
	}
	if v := c.EncodedVersionsOf([]string{"thaw_http/a", "thaw_http/b"}); len(v) != 0 {
		t.Errorf("encoded versions = %v, want none", v)
	}
	if n := builds.Load(); n != 0 {
		t.Fatalf("%d hosts encoded, want 0", n)
	}
	// Deleting a never-encoded host takes its domains out of the index.
	if err := c.Update(nil, nil, nil, []string{"thaw_http/a"}); err != nil {
		t.Fatal(err)
	}
	if n, ok := p.Resolve("thaw_http/a.example.com"); ok {
		t.Errorf("deleted host still resolves to %s", n)
	}
	if n := builds.Load(); n != 0 {
		t.Fatalf("%d hosts encoded, want 0", n)
	}
}

// TestLazyHostTwoStreamsAtOnce: two streams asking for the same host,
// never encoded, at the same time get the same bytes and version, those
// of the eager build, and it is encoded once. Run with -race.
func TestLazyHostTwoStreamsAtOnce(t *testing.T) {
	c, _ := newLazyCache(t)
	var builds atomic.Int32
	want := lazyHosts(t, c, &builds, "a", "b")["thaw_http/a"]
	s1, _ := newVHStream(t, c)
	s2, _ := newVHStream(t, c)
	var wg sync.WaitGroup
	got := make([]*discoveryv3.DeltaDiscoveryResponse, 2)
	for i, s := range []*vhStream{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.sub.UpdateResourceSubscriptions([]string{"thaw_http/a.example.com"}, nil)
			cancel, err := c.CreateDeltaWatch(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.VirtualHostType, ResponseNonce: "n",
				ResourceNamesSubscribe: []string{"thaw_http/a.example.com"}}, s.sub, s.ch)
			if err != nil {
				t.Error(err)
				return
			}
			defer cancel()
			r, err := (<-s.ch).GetDeltaDiscoveryResponse()
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = r
		}()
	}
	wg.Wait()
	for i, r := range got {
		if len(r.GetResources()) != 1 {
			t.Fatalf("stream %d: %d resources, want 1", i, len(r.GetResources()))
		}
		sameAs(t, r.GetResources()[0], want)
		if a := r.GetResources()[0].GetAliases(); !slices.Equal(a, []string{"thaw_http/a.example.com"}) {
			t.Errorf("stream %d: aliases %v", i, a)
		}
	}
	if n := builds.Load(); n != 1 {
		t.Fatalf("host encoded %d times, want once (b never)", n)
	}
}

// TestLazyHostResidency: a never-encoded host that becomes resident is
// sent to every stream (encoded then, as the eager build), and removed
// from them when its residency ends; another host stays unencoded.
func TestLazyHostResidency(t *testing.T) {
	c, p := newLazyCache(t)
	var builds atomic.Int32
	want := lazyHosts(t, c, &builds, "a", "b")["thaw_http/a"]
	s, _ := newVHStream(t, c)
	if r := s.ackVH(); r != nil {
		t.Fatalf("ACK answered with %v", names(r))
	}
	now := time.Unix(1000, 0)
	added := p.SetAwake(map[string]bool{"thaw_http/a": true}, now)
	c.Recheck(added)
	r := s.take()
	if got := names(r); !slices.Equal(got, []string{"thaw_http/a"}) {
		t.Fatalf("on residency sent %v, want thaw_http/a", got)
	}
	sameAs(t, r.GetResources()[0], want)
	// A stream opened now gets it in its first answer.
	_, first := newVHStream(t, c)
	if got := names(first); !slices.Equal(got, []string{"thaw_http/a"}) {
		t.Fatalf("new stream's first answer %v, want thaw_http/a", got)
	}
	sameAs(t, first.GetResources()[0], want)
	if r := s.ackVH(); r != nil {
		t.Fatalf("ACK answered with %v", names(r))
	}
	p.SetAwake(map[string]bool{}, now)
	c.Recheck(p.Expire(now.Add(time.Minute)))
	r = s.take()
	if !slices.Equal(r.GetRemovedResources(), []string{"thaw_http/a"}) {
		t.Fatalf("on eviction removed %v, want thaw_http/a", r.GetRemovedResources())
	}
	if n := builds.Load(); n != 1 {
		t.Fatalf("%d encodings, want 1 (thaw_http/a once, b never)", n)
	}
	if v := c.VersionsOf([]string{"thaw_http/a"}); v["thaw_http/a"] != want.Version {
		t.Errorf("version held %q, want %s", v["thaw_http/a"], want.Version)
	}
}
