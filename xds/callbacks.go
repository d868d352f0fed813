package xds

import (
	"context"
	"errors"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// callbacks feeds go-control-plane stream events into the tracker. The
// server calls them synchronously on each stream's goroutine.
type callbacks struct{ s *Server }

var _ serverv3.Callbacks = (*callbacks)(nil)

func (c *callbacks) OnStreamOpen(ctx context.Context, id int64, typeURL string) error {
	return c.s.streamOpened(ctx, streamKey{delta: false, id: id}, typeURL == resourcev3.EndpointType)
}

func (c *callbacks) OnStreamClosed(id int64, _ *corev3.Node) {
	c.s.streamClosed(streamKey{delta: false, id: id})
}

func (c *callbacks) OnDeltaStreamOpen(ctx context.Context, id int64, typeURL string) error {
	return c.s.streamOpened(ctx, streamKey{delta: true, id: id}, typeURL == resourcev3.EndpointType)
}

func (c *callbacks) OnDeltaStreamClosed(id int64, _ *corev3.Node) {
	c.s.streamClosed(streamKey{delta: true, id: id})
}

func (c *callbacks) OnStreamRequest(id int64, req *discoveryv3.DiscoveryRequest) error {
	return c.s.request(streamKey{delta: false, id: id}, req.GetNode(), req.GetResponseNonce(), req.GetErrorDetail())
}

func (c *callbacks) OnStreamResponse(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
	r := &sentResponse{typeURL: resp.GetTypeUrl(), sentAt: c.s.clock.Now()}
	for _, a := range resp.GetResources() {
		m, err := a.UnmarshalNew()
		if err != nil {
			c.s.log.Error("decode own xDS response", zap.String("type", resp.GetTypeUrl()), zap.Error(err))
			continue
		}
		r.names = append(r.names, cachev3.GetResourceName(m))
		r.versions = append(r.versions, cachev3.HashResource(a.GetValue()))
	}
	c.s.responded(streamKey{delta: false, id: id}, resp.GetNonce(), r, proto.Size(resp))
}

func (c *callbacks) OnStreamDeltaRequest(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
	k := streamKey{delta: true, id: id}
	if err := c.s.request(k, req.GetNode(), req.GetResponseNonce(), req.GetErrorDetail()); err != nil {
		return err
	}
	if v := req.GetInitialResourceVersions(); len(v) > 0 {
		c.s.resumed(k, req.GetTypeUrl(), v)
	}
	return nil
}

func (c *callbacks) OnStreamDeltaResponse(id int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
	r := &sentResponse{typeURL: resp.GetTypeUrl(), removed: resp.GetRemovedResources(), sentAt: c.s.clock.Now(),
		names: make([]string, 0, len(resp.GetResources())), versions: make([]string, 0, len(resp.GetResources()))}
	for _, res := range resp.GetResources() {
		r.names = append(r.names, res.GetName())
		r.versions = append(r.versions, res.GetVersion())
	}
	c.s.responded(streamKey{delta: true, id: id}, resp.GetNonce(), r, proto.Size(resp))
}

func (c *callbacks) OnFetchRequest(context.Context, *discoveryv3.DiscoveryRequest) error {
	return errors.New("xds: REST fetch is not supported")
}

func (c *callbacks) OnFetchResponse(*discoveryv3.DiscoveryRequest, *discoveryv3.DiscoveryResponse) {}

// streamOpened records a new stream; eds marks a non-ADS EDS stream (the
// EndpointDiscoveryService, typeURL fixed by the service).
func (s *Server) streamOpened(ctx context.Context, k streamKey, eds bool) error {
	if err := s.admitStream(eds); err != nil {
		return err
	}
	s.tracker.open(k, eds, s.clock.Now(), closerOf(ctx))
	s.metrics.connectedNodes.Set(float64(s.tracker.count()))
	return nil
}

func (s *Server) streamClosed(k streamKey) {
	node := s.tracker.nodeID(k)
	s.tracker.close(k)
	s.metrics.connectedNodes.Set(float64(s.tracker.count()))
	s.log.Info("xDS stream closed", zap.String("node", node), zap.Int64("stream", k.id), zap.Bool("delta", k.delta))
	// The closed stream may have been the last one a flip waited for.
	s.completeFlips(nil)
	s.notify.broadcast()
}

// request handles one request: the node on the first one, then ACK or
// NACK of the response named by nonce. An error (a node limit refused the
// stream) makes go-control-plane close the stream.
func (s *Server) request(k streamKey, node *corev3.Node, nonce string, errDetail *status.Status) error {
	if node != nil && s.tracker.nodeID(k) == "" {
		if err := s.admitNode(k, node.GetId(), node.GetCluster()); err != nil {
			return err
		}
		s.log.Info("xDS stream opened", zap.String("node", node.GetId()), zap.String("cluster", node.GetCluster()),
			zap.Int64("stream", k.id), zap.Bool("delta", k.delta))
	}
	if nonce == "" {
		return nil
	}
	if errDetail != nil {
		nk := s.tracker.nack(k, nonce, errDetail.GetMessage(), s.clock.Now())
		if nk == nil {
			return nil
		}
		s.metrics.nacks.WithLabelValues(shortType(nk.TypeURL)).Inc()
		shown := nk.Resources
		if len(shown) > 10 {
			shown = shown[:10]
		}
		s.log.Warn("Envoy rejected xDS update", zap.String("node", nk.Node), zap.String("type", shortType(nk.TypeURL)),
			zap.Strings("resources", shown), zap.Int("resourceCount", len(nk.Resources)), zap.String("error", nk.Message))
		s.notify.broadcast()
		return nil
	}
	r := s.tracker.ack(k, nonce, s.clock.Now())
	if r == nil {
		return nil
	}
	if ce := s.log.Check(zap.DebugLevel, "xDS ACK"); ce != nil {
		ce.Write(zap.Int64("stream", k.id), zap.String("type", shortType(r.typeURL)), zap.String("nonce", nonce),
			zap.Int("resources", len(r.names)), zap.Int("removed", len(r.removed)), zap.Duration("rtt", s.clock.Since(r.sentAt)))
	}
	if r.typeURL == resourcev3.EndpointType {
		s.completeFlips(r.names)
	}
	s.checkFirstAck(k)
	s.notify.broadcast()
	return nil
}

// responded records a response about to be sent.
func (s *Server) responded(k streamKey, nonce string, r *sentResponse, size int) {
	s.tracker.sent(k, nonce, r)
	typ := shortType(r.typeURL)
	s.metrics.pushes.WithLabelValues(typ).Inc()
	s.metrics.pushedBytes.WithLabelValues(typ).Add(float64(size))
	if ce := s.log.Check(zap.DebugLevel, "xDS push"); ce != nil {
		ce.Write(zap.Int64("stream", k.id), zap.String("type", typ), zap.String("nonce", nonce),
			zap.Int("resources", len(r.names)), zap.Int("removed", len(r.removed)), zap.Int("bytes", size))
	}
}

// completeFlips observes flip-to-ACK for pending flips (those named, or
// all when names is nil) that every connected stream has now ACKed.
func (s *Server) completeFlips(names []string) {
	s.flipsMu.Lock()
	defer s.flipsMu.Unlock()
	if len(s.flips) == 0 {
		return
	}
	now := s.clock.Now()
	check := func(name string) {
		f, ok := s.flips[name]
		if ok && s.tracker.ackedEverywhere(resourcev3.EndpointType, name, f.version) {
			s.metrics.flipToAck.Observe(now.Sub(f.start).Seconds())
			delete(s.flips, name)
		}
	}
	if names == nil {
		for name := range s.flips {
			check(name)
		}
		return
	}
	for _, name := range names {
		check(name)
	}
}

// resumed records the resource versions a reconnecting Envoy already holds
// (delta initial_resource_versions, e.g. after thaw restarted): they count as
// ACKed. Versions are content hashes, so when thaw's state is unchanged the
// server sends nothing and the Envoy is still known to be up to date.
func (s *Server) resumed(k streamKey, typeURL string, versions map[string]string) {
	s.tracker.assumeAcked(k, typeURL, versions)
	if typeURL == resourcev3.EndpointType {
		s.completeFlips(nil)
	}
	s.checkFirstAck(k)
	s.notify.broadcast()
}

// checkFirstAck closes firstAck once stream k has ACKed every resource of
// the first applied snapshot that still exists.
func (s *Server) checkFirstAck(k streamKey) {
	select {
	case <-s.firstAck:
		return
	default:
	}
	s.mu.RLock()
	ok := s.first != nil && s.tracker.covers(k, s.first)
	s.mu.RUnlock()
	if !ok {
		return
	}
	s.firstAckOnce.Do(func() {
		s.log.Info("first complete snapshot ACKed", zap.String("node", s.tracker.nodeID(k)))
		close(s.firstAck)
		// The first snapshot's versions are needed no more (a copy of
		// every version: 24 MB at 100,000 revisions).
		s.mu.Lock()
		s.first = nil
		s.mu.Unlock()
	})
}
