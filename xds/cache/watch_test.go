package cache

import (
	"maps"
	"slices"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestDeltaCacheNeverWritesReturnedResources: the returned-resources map
// go-control-plane hands the cache is the same, entry for entry, after
// every call; changes reach the stream as a new map in the response.
func TestDeltaCacheNeverWritesReturnedResources(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	v := setCLAs(t, c, revision.ModeProxy, "a", "b")
	initial := maps.Clone(v)
	s := &edsStream{t: t, c: c, ch: make(chan cachev3.DeltaResponse, 4),
		sub: stream.NewDeltaSubscription([]string{"a", "b"}, nil, initial, true)}
	check := func(step string, before map[string]string, lib map[string]string) {
		t.Helper()
		if !maps.Equal(before, lib) {
			t.Fatalf("%s: the subscription's returned resources changed: %v, were %v", step, lib, before)
		}
	}
	before := maps.Clone(s.sub.ReturnedResources())
	lib := s.sub.ReturnedResources()
	if r := s.request(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType,
		ResourceNamesSubscribe: []string{"a", "b"}, InitialResourceVersions: initial}); r != nil {
		t.Fatalf("reconnect with current versions sent %v", gotNames(r))
	}
	check("parked watch", before, lib)
	setCLAs(t, c, revision.ModeServe, "a")
	check("update answering the watch", before, lib)
	r := s.take()
	if r == nil || !slices.Equal(gotNames(r), []string{"a"}) {
		t.Fatalf("flip of a sent %v, want a", r)
	}
	check("response taken", before, lib)
	before, lib = maps.Clone(s.sub.ReturnedResources()), s.sub.ReturnedResources()
	setCLAs(t, c, revision.ModeServe, "b")
	if r := s.ack(); r == nil || !slices.Equal(gotNames(r), []string{"b"}) {
		t.Fatalf("ACK after a change sent %v, want b", r)
	}
	check("immediate answer", before, lib)
}

// TestDeltaCacheCancelledResponseIsResent: a response whose watch was
// cancelled between the update that answered it and its send is never
// sent, and the stream's record stays as it was: the next watch sends the
// change.
func TestDeltaCacheCancelledResponseIsResent(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	setCLAs(t, c, revision.ModeProxy, "a", "b")
	s, _ := newEDSStream(t, c, []string{"a", "b"}, nil)
	if r := s.ack(); r != nil {
		t.Fatalf("ACK answered with %v", gotNames(r))
	}
	ch := newChange(resourcev3.EndpointType)
	cla, err := translate.ServeLoadAssignment("b", []revision.Backend{ready("10.0.0.1", 80)}, 80)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.add("b", cla); err != nil {
		t.Fatal(err)
	}
	fired, err := c.apply(ch.upd, ch.enc, ch.ver, nil, nil) // update without its sends
	if err != nil || len(fired) != 1 {
		t.Fatalf("update answered %d watches (%v), want 1", len(fired), err)
	}
	s.cancel() // a request (or the stream's end) cancels the watch first
	fired[0].w.send(fired[0].resp)
	if r := s.take(); r != nil {
		t.Fatalf("a cancelled watch was sent %v", gotNames(r))
	}
	s.cancel = nil
	if r := s.ack(); r == nil || !slices.Equal(gotNames(r), []string{"b"}) {
		t.Fatalf("the next watch sent %v, want b", r)
	}
	if r := s.ack(); r != nil {
		t.Fatalf("second ACK sent %v", gotNames(r))
	}
}

// TestDeltaCacheResponseQueuedBeforeRequest: go-control-plane drains its
// channel before it handles a request; a response an update sends after
// that reaches the stream only after the request's new watch, which then
// sees the map from before that response. The watch is served (the
// response will be delivered), without sending the change twice.
func TestDeltaCacheResponseQueuedBeforeRequest(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	setCLAs(t, c, revision.ModeProxy, "a", "b")
	s, _ := newEDSStream(t, c, []string{"a", "b"}, nil)
	if r := s.ack(); r != nil {
		t.Fatalf("ACK answered with %v", gotNames(r))
	}
	setCLAs(t, c, revision.ModeServe, "b") // answers the parked watch: queued
	s.cancel()
	cancel, err := c.CreateDeltaWatch(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResponseNonce: "n"}, s.sub, s.ch)
	if err != nil {
		t.Fatalf("a request before the queued response was taken: %v", err)
	}
	s.cancel = cancel
	if r := s.take(); r == nil || !slices.Equal(gotNames(r), []string{"b"}) {
		t.Fatalf("queued response %v, want b", r)
	}
	if r := s.take(); r != nil {
		t.Fatalf("the request's watch sent %v, want it parked", gotNames(r))
	}
	if r := s.ack(); r != nil {
		t.Fatalf("ACK sent %v", gotNames(r))
	}
}

// TestDeltaCacheUnsubscribeForgetsVersion: names a stream unsubscribes
// leave the stream's record, so subscribing again sends them again.
func TestDeltaCacheUnsubscribeForgetsVersion(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	setCLAs(t, c, revision.ModeProxy, "a", "b")
	s, _ := newEDSStream(t, c, []string{"a", "b"}, nil)
	s.ack()
	s.sub.UpdateResourceSubscriptions(nil, []string{"b"})
	if r := s.request(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResponseNonce: "n",
		ResourceNamesUnsubscribe: []string{"b"}}); r != nil {
		t.Fatalf("unsubscribing b sent %v", gotNames(r))
	}
	s.sub.UpdateResourceSubscriptions([]string{"b"}, nil)
	if r := s.request(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResponseNonce: "n",
		ResourceNamesSubscribe: []string{"b"}}); r == nil || !slices.Equal(gotNames(r), []string{"b"}) {
		t.Fatalf("subscribing b again sent %v, want b", r)
	}
}

// TestDeltaCacheForgetsClosedStreams: a stream whose last watch was
// cancelled (it closed) is forgotten after idleUpdates updates and idleFor;
// a request on it after that ends the stream (its Envoy reconnects and
// says what it holds) instead of being answered from a guess.
func TestDeltaCacheForgetsClosedStreams(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	setCLAs(t, c, revision.ModeProxy, "a", "b")
	s, _ := newEDSStream(t, c, []string{"a", "b"}, nil)
	s.ack()
	s.cancel()
	for i := range idleUpdates {
		setCLAs(t, c, revision.Mode(i%2), "a")
	}
	if len(c.subs) != 1 {
		t.Fatalf("stream forgotten after %d updates within %s", idleUpdates, idleFor)
	}
	now = now.Add(idleFor)
	if len(c.subs) != 1 {
		t.Fatal("stream forgotten without an update")
	}
	setCLAs(t, c, revision.ModeServe, "b")
	if len(c.subs) != 0 || len(c.idle) != 0 {
		t.Fatalf("after the stream closed, %s and %d updates: %d states, %d idle, want none", idleFor, idleUpdates+1, len(c.subs), len(c.idle))
	}
	req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResponseNonce: "n"}
	if _, err := c.CreateDeltaWatch(req, s.sub, s.ch); err == nil {
		t.Fatal("a request on a forgotten stream was answered")
	}
}

// TestDeltaCacheSendsAfterUnlocking: while an update's response waits on
// a full watch channel, the cache still answers other calls.
func TestDeltaCacheSendsAfterUnlocking(t *testing.T) {
	c := NewDelta(resourcev3.EndpointType, ChangeLogSize)
	setCLAs(t, c, revision.ModeProxy, "a")
	s, _ := newEDSStream(t, c, []string{"a"}, nil)
	s.ack()
	for len(s.ch) < cap(s.ch) { // fill the buffer: the next send waits
		s.ch <- nil
	}
	ch := newChange(resourcev3.EndpointType)
	cla, err := translate.ServeLoadAssignment("a", []revision.Backend{ready("10.0.0.1", 80)}, 80)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.add("a", cla); err != nil {
		t.Fatal(err)
	}
	updated := make(chan error, 1)
	go func() { updated <- c.Update(ch.upd, ch.enc, ch.ver, nil) }()
	// The update has answered the watch once the cache holds a's new
	// version and no parked watch: the cache answering these calls while
	// the update waits to send shows the send is outside the lock.
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for i := 0; i < 100000; i++ {
			if c.VersionsOf([]string{"a"})["a"] == ch.ver["a"] && parkedWatches(c) == 0 {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the cache did not answer while a send waited (lock held while sending?)")
	}
	for range cap(s.ch) {
		if r := <-s.ch; r != nil {
			t.Fatal("the update's response came before the filler")
		}
	}
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	if r := s.take(); r == nil || !slices.Equal(gotNames(r), []string{"a"}) {
		t.Fatalf("the update sent %v, want a", r)
	}
}

func parkedWatches(c *Delta) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watches)
}
