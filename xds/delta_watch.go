package xds

import (
	"context"
	"reflect"
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// subState is the deltaCache's own record of one delta stream's
// subscription: the returned-resources map it last handed the stream
// (held for its identity only, never written) and the cache sequence
// number that map is up to date with.
type subState struct {
	seq      uint64
	returned map[string]string
}

// seen records that returned is up to date with seq. Call under the
// cache's lock.
func (s *subState) seen(seq uint64, returned map[string]string) {
	s.seq, s.returned = seq, returned
}

// upTo returns the sequence number the subscription's returned resources
// are up to date with, or ok false when they are not the map this state
// describes (a new stream, a response cancelled before it was sent, or a
// go-control-plane that copies the map): the caller then compares every
// name.
func (s *subState) upTo(returned map[string]string) (seq uint64, ok bool) {
	if s.returned == nil || reflect.ValueOf(s.returned).UnsafePointer() != reflect.ValueOf(returned).UnsafePointer() {
		return 0, false
	}
	return s.seq, true
}

// deltaWatch is one delta watch: parked in the cache's watches (id set)
// until an update answers it, or answered at once.
type deltaWatch struct {
	c     *deltaCache
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
// cancelled. It is called without the cache's lock held: the channel's
// buffer (go-control-plane's, one slot per type) never makes it wait, and
// if it did, the cache would still serve every other stream.
func (w *deltaWatch) send(resp *deltaResponse) {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	if !w.cancelled {
		w.ch <- resp
	}
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
		c.idle[w.ch] = true
	}
}

// deltaResponse is a delta xDS response of one type.
type deltaResponse struct {
	typeURL   string
	req       *cachev3.DeltaRequest
	resources []*deltaEntry
	removed   []string
	known     map[string]string
	version   string

	once  sync.Once
	built *discoveryv3.DeltaDiscoveryResponse
}

var _ cachev3.DeltaResponse = (*deltaResponse)(nil)

func (r *deltaResponse) GetDeltaDiscoveryResponse() (*discoveryv3.DeltaDiscoveryResponse, error) {
	r.once.Do(func() {
		res := make([]*discoveryv3.Resource, len(r.resources))
		for i, e := range r.resources {
			res[i] = &discoveryv3.Resource{Name: e.name, Version: e.version,
				Resource: &anypb.Any{TypeUrl: r.typeURL, Value: e.bytes}}
		}
		r.built = &discoveryv3.DeltaDiscoveryResponse{Resources: res, RemovedResources: r.removed,
			TypeUrl: r.typeURL, SystemVersionInfo: r.version}
	})
	return r.built, nil
}

func (r *deltaResponse) GetDeltaRequest() *discoveryv3.DeltaDiscoveryRequest { return r.req }

func (r *deltaResponse) GetSystemVersion() (string, error) { return r.version, nil }

func (r *deltaResponse) GetResponseVersion() string { return r.version }

func (r *deltaResponse) GetNextVersionMap() map[string]string { return r.known }

func (r *deltaResponse) GetReturnedResources() map[string]string { return r.known }

func (r *deltaResponse) GetContext() context.Context { return context.Background() }
