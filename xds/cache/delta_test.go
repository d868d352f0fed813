package cache

import (
	"maps"
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/internal/xdstest"
	"github.com/thaw-dev/thaw/xds/translate"
)

// edsStream plays the delta server for one subscription: it creates
// watches like go-control-plane's server does and keeps the returned map.
type edsStream struct {
	t      *testing.T
	c      *Delta
	sub    stream.Subscription
	ch     chan cachev3.DeltaResponse
	cancel func()
	nonce  int
}

func newEDSStream(t *testing.T, c *Delta, names []string, initial map[string]string) (*edsStream, *discoveryv3.DeltaDiscoveryResponse) {
	s := &edsStream{t: t, c: c, ch: make(chan cachev3.DeltaResponse, 4),
		sub: stream.NewDeltaSubscription(names, nil, initial, true)}
	return s, s.request(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: names,
		InitialResourceVersions: initial})
}

// request creates a watch for req and returns the immediate answer, or nil
// when the watch was parked.
func (s *edsStream) request(req *discoveryv3.DeltaDiscoveryRequest) *discoveryv3.DeltaDiscoveryResponse {
	s.t.Helper()
	if s.cancel != nil {
		s.cancel()
	}
	cancel, err := s.c.CreateDeltaWatch(req, s.sub, s.ch)
	if err != nil {
		s.t.Fatal(err)
	}
	s.cancel = cancel
	return s.take()
}

// take returns a pending response (and records its versions), or nil.
func (s *edsStream) take() *discoveryv3.DeltaDiscoveryResponse {
	s.t.Helper()
	select {
	case r := <-s.ch:
		s.sub.SetReturnedResources(r.GetReturnedResources())
		out, err := r.GetDeltaDiscoveryResponse()
		if err != nil {
			s.t.Fatal(err)
		}
		s.nonce++
		return out
	default:
		return nil
	}
}

// ack re-arms the watch as an ACK does.
func (s *edsStream) ack() *discoveryv3.DeltaDiscoveryResponse {
	return s.request(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResponseNonce: "n"})
}

func setCLAs(t *testing.T, c *Delta, mode revision.Mode, names ...string) map[string]string {
	t.Helper()
	ch := newChange(resourcev3.EndpointType)
	for _, n := range names {
		var r types.Resource
		var err error
		if mode == revision.ModeProxy {
			r, err = translate.ProxyLoadAssignment(n, nil, 0)
		} else {
			r, err = translate.ServeLoadAssignment(n, []revision.Backend{ready("10.0.0.1", 80)}, 80)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.add(n, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Update(ch.upd, ch.enc, ch.ver, nil); err != nil {
		t.Fatal(err)
	}
	return ch.ver
}

func gotNames(r *discoveryv3.DeltaDiscoveryResponse) []string {
	var out []string
	for _, res := range r.GetResources() {
		out = append(out, res.GetName())
	}
	slices.Sort(out)
	return out
}

func TestEndpointCacheSendsOnlyChanges(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	setCLAs(t, c, revision.ModeProxy, "a", "b", "c")
	s, first := newEDSStream(t, c, []string{"a", "b"}, nil)
	if got := gotNames(first); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first response %v, want a b", got)
	}
	if r := s.ack(); r != nil {
		t.Fatalf("ACK answered with %v, want a parked watch", gotNames(r))
	}
	setCLAs(t, c, revision.ModeServe, "c") // not subscribed
	if r := s.take(); r != nil {
		t.Fatalf("change of an unsubscribed name sent %v", gotNames(r))
	}
	setCLAs(t, c, revision.ModeServe, "b")
	if r := s.take(); r == nil || !slices.Equal(gotNames(r), []string{"b"}) {
		t.Fatalf("flip of b sent %v, want b", gotNames(r))
	}
	// Changes while no watch is open are sent when the ACK re-arms it.
	setCLAs(t, c, revision.ModeServe, "a")
	if r := s.ack(); r == nil || !slices.Equal(gotNames(r), []string{"a"}) {
		t.Fatalf("ACK after a change sent %v, want a", gotNames(r))
	}
	// Removal of a subscribed name.
	if err := c.Update(nil, nil, nil, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if r := s.ack(); r == nil || !slices.Equal(r.GetRemovedResources(), []string{"a"}) || len(r.GetResources()) != 0 {
		t.Fatalf("ACK after removing a sent %v", r)
	}
	if r := s.ack(); r != nil {
		t.Fatalf("ACK after the removal sent %v", r)
	}
}

func TestEndpointCacheOldSubscriptionFallsBack(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, 4)
	names := []string{"a", "b", "c", "d", "e", "f"}
	setCLAs(t, c, revision.ModeProxy, names...)
	s, _ := newEDSStream(t, c, names, nil)
	// No watch open (response not ACKed) while more changes than the log
	// holds happen.
	setCLAs(t, c, revision.ModeServe, names...)
	if r := s.ack(); r == nil || !slices.Equal(gotNames(r), names) {
		t.Fatalf("ACK after the log overflowed sent %v, want all %v", gotNames(r), names)
	}
	if r := s.ack(); r != nil {
		t.Fatalf("second ACK sent %v", gotNames(r))
	}
}

func TestEndpointCacheReconnectSendsOnlyStale(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	v := setCLAs(t, c, revision.ModeProxy, "a", "b")
	setCLAs(t, c, revision.ModeServe, "b")
	// Envoy reconnects knowing a and the old b.
	_, first := newEDSStream(t, c, []string{"a", "b"}, maps.Clone(v))
	if got := gotNames(first); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("reconnect sent %v, want only b", got)
	}
}

func TestEndpointCacheSubscribeMore(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	setCLAs(t, c, revision.ModeProxy, "a", "b")
	s, _ := newEDSStream(t, c, []string{"a"}, nil)
	s.ack()
	s.sub.UpdateResourceSubscriptions([]string{"b"}, nil)
	r := s.request(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: []string{"b"}})
	if got := gotNames(r); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("subscribing b sent %v, want b", got)
	}
}

func TestEndpointCacheStateOfTheWorldCacheIsLazy(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	setCLAs(t, c, revision.ModeProxy, "a", "b")
	if c.sotw != nil {
		t.Fatal("a state-of-the-world cache exists before any such watch")
	}
	ch := make(chan cachev3.Response, 1)
	req := &cachev3.Request{TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"a", "b"}}
	if _, err := c.CreateWatch(req, stream.NewSotwSubscription(req.GetResourceNames(), true), ch); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(c.sotw.GetResources())); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("state-of-the-world cache holds %v, want the current a and b", got)
	}
	setCLAs(t, c, revision.ModeServe, "c")
	if err := c.Update(nil, nil, nil, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(c.sotw.GetResources())); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("after adding c and removing a: %v", got)
	}
}

// TestDeltaCacheWildcardSendsOnlyChanges: a wildcard subscription (Envoy's
// clusters and virtual hosts) gets everything once, then only what was
// added, changed or removed.
func TestDeltaCacheWildcardSendsOnlyChanges(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	setCLAs(t, c, revision.ModeProxy, "a", "b")
	s, first := newEDSStream(t, c, nil, nil)
	if got := gotNames(first); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first response %v, want a b", got)
	}
	if r := s.ack(); r != nil {
		t.Fatalf("ACK answered with %v, want a parked watch", gotNames(r))
	}
	setCLAs(t, c, revision.ModeProxy, "c")
	if r := s.take(); r == nil || !slices.Equal(gotNames(r), []string{"c"}) {
		t.Fatalf("adding c sent %v, want c only", r)
	}
	if err := c.Update(nil, nil, nil, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if r := s.ack(); r == nil || !slices.Equal(r.GetRemovedResources(), []string{"b"}) || len(r.GetResources()) != 0 {
		t.Fatalf("removing b sent %v", r)
	}
}

// TestDeltaCacheServesItsOwnType: a cluster cache answers cluster requests
// with the cluster type URL and refuses other types.
func TestDeltaCacheServesItsOwnType(t *testing.T) {
	c := NewDelta(resourcev3.ClusterType, ChangeLogSize)
	ch := newChange(resourcev3.ClusterType)
	cfg := translate.DefaultConfig()
	cl, err := translate.RevisionCluster(translate.RevisionClusterParams{Name: "rev_default_a", Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.add("rev_default_a", cl); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ch.upd, ch.enc, ch.ver, nil); err != nil {
		t.Fatal(err)
	}
	out := make(chan cachev3.DeltaResponse, 1)
	wrong := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType}
	if _, err := c.CreateDeltaWatch(wrong, stream.NewDeltaSubscription(nil, nil, nil, true), out); err == nil {
		t.Fatal("an endpoint request was accepted by the cluster cache")
	}
	req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.ClusterType}
	if _, err := c.CreateDeltaWatch(req, stream.NewDeltaSubscription(nil, nil, nil, true), out); err != nil {
		t.Fatal(err)
	}
	resp, err := (<-out).GetDeltaDiscoveryResponse()
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetTypeUrl() != resourcev3.ClusterType || len(resp.GetResources()) != 1 ||
		resp.GetResources()[0].GetResource().GetTypeUrl() != resourcev3.ClusterType {
		t.Fatalf("response %v", resp)
	}
	var got clusterv3.Cluster
	if err := resp.GetResources()[0].GetResource().UnmarshalTo(&got); err != nil || got.GetName() != "rev_default_a" {
		t.Fatalf("resource %v (%v)", got.GetName(), err)
	}
}

// ready is xdstest.Ready.
var ready = xdstest.Ready

// testChange is an update for Update, built as the server builds one.
type testChange struct {
	upd map[string]types.Resource
	enc map[string][]byte
	ver map[string]string
}

func newChange(string) *testChange {
	return &testChange{upd: map[string]types.Resource{}, enc: map[string][]byte{}, ver: map[string]string{}}
}

// add records a new or changed resource with its encoding and version.
func (c *testChange) add(name string, r types.Resource) error {
	b, v, err := encoded.Hash(r)
	if err != nil {
		return err
	}
	c.upd[name], c.enc[name], c.ver[name] = r, b, v
	return nil
}

// GetResources returns the resources by name, as LinearCache's does
// (Messages; it panics on an encoding that does not decode).
func (c *Delta) GetResources() map[string]types.Resource {
	out, err := c.Messages()
	if err != nil {
		panic(err)
	}
	return out
}
