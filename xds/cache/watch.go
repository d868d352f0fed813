package cache

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// subState is the Delta's own record of one delta stream's
// subscription: the version of each resource the stream was sent (known),
// and the cache sequence number known is up to date with (seq; 0 before
// the first answer).
//
// go-control-plane keeps a returned-resources map per subscription: it
// sets it from each response (GetReturnedResources), writes into it when
// a request unsubscribes names, and hands it to the next watch. The cache
// only reads it: at a stream's first request it is Envoy's
// initial_resource_versions, copied into known once; each response hands
// go-control-plane a new empty map (handed), so what it writes there
// later is exactly its record of the names unsubscribed since, which the
// cache applies to known (unsubscribed). A request may find the map
// before handed (prev): go-control-plane takes a response sent after it
// drained its channel only after that request's watch.
type subState struct {
	seq    uint64
	known  map[string]string
	handed map[string]string
	prev   map[string]string
	// demand is the stream's on-demand state (ondemand.go); nil until it
	// fetched something.
	demand *demandState
}

// stream returns ch's state, creating it at the stream's first request.
// It fails when a later request finds no state (forgotten while idle) or a
// returned-resources map the cache did not hand out. Call under c.mu.
func (c *Delta) stream(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (*subState, error) {
	returned := sub.ReturnedResources()
	st := c.subs[ch]
	delete(c.idle, ch)
	if st == nil {
		if req.GetResponseNonce() != "" {
			return nil, errors.New("delta cache " + c.typeURL + ": no state for this stream (forgotten while idle); reconnect")
		}
		st = &subState{known: maps.Clone(returned), handed: returned}
		c.subs[ch] = st
		return st, nil
	}
	if !sameMap(returned, st.handed) && (st.prev == nil || !sameMap(returned, st.prev)) {
		delete(c.subs, ch)
		return nil, errors.New("delta cache " + c.typeURL + ": the subscription's returned resources are not the map the cache handed out; reconnect")
	}
	st.unsubscribed(req.GetResourceNamesUnsubscribe(), returned)
	return st, nil
}

// unsubscribed applies to known what go-control-plane recorded for the
// names a request unsubscribed: no entry (forget the version) or an empty
// version (a wildcard stream unsubscribing a name it had also asked for by
// name: the name is sent again, or reported removed).
func (s *subState) unsubscribed(names []string, returned map[string]string) {
	for _, name := range names {
		if v, ok := returned[name]; ok {
			s.known[name] = v
		} else {
			delete(s.known, name)
		}
	}
}

// sent records in known a response the stream was sent. Call under the
// cache's lock.
func (s *subState) sent(r *deltaResponse) {
	for _, e := range r.resources {
		s.known[e.name] = e.version
	}
	for _, name := range r.removed {
		delete(s.known, name)
	}
	s.seq, s.prev, s.handed = r.seq, s.handed, r.returned
	s.answered(r)
}

// forgetIdle forgets the streams idle for idleUpdates updates and idleFor.
// Call under c.mu.
func (c *Delta) forgetIdle() {
	now := c.now()
	for ch, since := range c.idle {
		if c.seq-since.seq >= idleUpdates && now.Sub(since.at) >= idleFor {
			delete(c.subs, ch)
			delete(c.idle, ch)
		}
	}
}

// sameMap reports whether a and b are the same map (not equal contents).
func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// deltaWatch is one delta watch: parked in the cache's watches (id set)
// until an update answers it, or answered at once.
type deltaWatch struct {
	c     *Delta
	id    uint64 // 0 when answered at creation
	req   *cachev3.DeltaRequest
	sub   cachev3.Subscription
	ch    chan cachev3.DeltaResponse
	state *subState

	// sendMu orders send and cancel: go-control-plane closes ch after
	// cancelling, so no send may start once cancel has returned.
	sendMu    sync.Mutex
	cancelled bool
}

// send delivers resp on the watch's channel unless the watch was
// cancelled, then records it in the stream's state (a response never sent
// leaves the state as it was). It is called without the cache's lock
// held: the channel's buffer (go-control-plane's, one slot per type) never
// makes it wait, and if it did, the cache would still serve every other
// stream. The stream's next watch waits for the record: go-control-plane
// cancels this watch first.
func (w *deltaWatch) send(resp *deltaResponse) {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	if w.cancelled {
		return
	}
	w.ch <- resp
	w.c.mu.Lock()
	w.state.sent(resp)
	w.c.mu.Unlock()
}

// cancel forgets the watch (go-control-plane calls it before re-creating
// the watch on a request, and when the stream ends) and marks the stream
// idle until its next watch.
func (w *deltaWatch) cancel() {
	w.sendMu.Lock()
	w.cancelled = true
	w.sendMu.Unlock()
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.id != 0 {
		delete(c.watches, w.id)
	}
	if c.subs[w.ch] == w.state {
		c.idle[w.ch] = idleSince{seq: c.seq, at: c.now()}
	}
}

// deltaResponse is a delta xDS response of one type.
type deltaResponse struct {
	typeURL   string
	req       *cachev3.DeltaRequest
	resources []*Entry
	removed   []string
	seq       uint64
	version   string
	// returned is handed to go-control-plane as the subscription's
	// returned resources: empty (see subState).
	returned map[string]string
	// aliases are the names each resource was asked for by on demand
	// (sent in its aliases); unresolved the aliases naming nothing, each
	// sent as a resource of that name without a body, as Envoy's VHDS
	// expects.
	aliases    map[string][]string
	unresolved []string

	once  sync.Once
	built *discoveryv3.DeltaDiscoveryResponse
}

var _ cachev3.DeltaResponse = (*deltaResponse)(nil)

func (r *deltaResponse) GetDeltaDiscoveryResponse() (*discoveryv3.DeltaDiscoveryResponse, error) {
	r.once.Do(func() {
		res := make([]*discoveryv3.Resource, len(r.resources), len(r.resources)+len(r.unresolved))
		for i, e := range r.resources {
			res[i] = &discoveryv3.Resource{Name: e.name, Version: e.version, Aliases: r.aliases[e.name],
				Resource: &anypb.Any{TypeUrl: r.typeURL, Value: e.bytes}}
		}
		for _, alias := range r.unresolved {
			res = append(res, &discoveryv3.Resource{Name: alias, Aliases: []string{alias}})
		}
		r.built = &discoveryv3.DeltaDiscoveryResponse{Resources: res, RemovedResources: r.removed,
			TypeUrl: r.typeURL, SystemVersionInfo: r.version}
	})
	return r.built, nil
}

func (r *deltaResponse) GetDeltaRequest() *discoveryv3.DeltaDiscoveryRequest { return r.req }

func (r *deltaResponse) GetSystemVersion() (string, error) { return r.version, nil }

func (r *deltaResponse) GetResponseVersion() string { return r.version }

func (r *deltaResponse) GetNextVersionMap() map[string]string { return r.returned }

func (r *deltaResponse) GetReturnedResources() map[string]string { return r.returned }

func (r *deltaResponse) GetContext() context.Context { return context.Background() }
