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

	"github.com/thaw-dev/thaw/xds/ack"
	"github.com/thaw-dev/thaw/xds/encoded"
)

// callbacks feeds go-control-plane stream events into the tracker. The
// server calls them synchronously on each stream's goroutine.
type callbacks struct{ s *Server }

var _ serverv3.Callbacks = (*callbacks)(nil)

func (c *callbacks) OnStreamOpen(ctx context.Context, id int64, typeURL string) error {
	return c.s.streamOpened(ctx, ack.StreamKey{Delta: false, ID: id}, typeURL == resourcev3.EndpointType)
}

func (c *callbacks) OnStreamClosed(id int64, _ *corev3.Node) {
	c.s.streamClosed(ack.StreamKey{Delta: false, ID: id})
}

func (c *callbacks) OnDeltaStreamOpen(ctx context.Context, id int64, typeURL string) error {
	return c.s.streamOpened(ctx, ack.StreamKey{Delta: true, ID: id}, typeURL == resourcev3.EndpointType)
}

func (c *callbacks) OnDeltaStreamClosed(id int64, _ *corev3.Node) {
	c.s.streamClosed(ack.StreamKey{Delta: true, ID: id})
}

func (c *callbacks) OnStreamRequest(id int64, req *discoveryv3.DiscoveryRequest) error {
	return c.s.request(ack.StreamKey{Delta: false, ID: id}, req.GetNode(), req.GetResponseNonce(), req.GetErrorDetail())
}

func (c *callbacks) OnStreamResponse(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
	r := &ack.Response{TypeURL: resp.GetTypeUrl(), SentAt: c.s.clock.Now()}
	for _, a := range resp.GetResources() {
		m, err := a.UnmarshalNew()
		if err != nil {
			c.s.log.Error("decode own xDS response", zap.String("type", resp.GetTypeUrl()), zap.Error(err))
			continue
		}
		r.Names = append(r.Names, cachev3.GetResourceName(m))
		r.Versions = append(r.Versions, cachev3.HashResource(a.GetValue()))
	}
	c.s.responded(ack.StreamKey{Delta: false, ID: id}, resp.GetNonce(), r, proto.Size(resp))
}

func (c *callbacks) OnStreamDeltaRequest(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
	k := ack.StreamKey{Delta: true, ID: id}
	if err := c.s.request(k, req.GetNode(), req.GetResponseNonce(), req.GetErrorDetail()); err != nil {
		return err
	}
	if v := req.GetInitialResourceVersions(); len(v) > 0 {
		c.s.resumed(k, req.GetTypeUrl(), v)
	}
	return nil
}

func (c *callbacks) OnStreamDeltaResponse(id int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
	r := &ack.Response{TypeURL: resp.GetTypeUrl(), Removed: resp.GetRemovedResources(), SentAt: c.s.clock.Now(),
		Names: make([]string, 0, len(resp.GetResources())), Versions: make([]string, 0, len(resp.GetResources()))}
	for _, res := range resp.GetResources() {
		if res.GetResource() == nil {
			continue // an on-demand alias that names nothing: nothing held
		}
		r.Names = append(r.Names, res.GetName())
		r.Versions = append(r.Versions, res.GetVersion())
	}
	c.s.responded(ack.StreamKey{Delta: true, ID: id}, resp.GetNonce(), r, proto.Size(resp))
	c.s.countAnswers(resp)
}

func (c *callbacks) OnFetchRequest(context.Context, *discoveryv3.DiscoveryRequest) error {
	return errors.New("xds: REST fetch is not supported")
}

func (c *callbacks) OnFetchResponse(*discoveryv3.DiscoveryRequest, *discoveryv3.DiscoveryResponse) {}

// streamOpened records a new stream; eds marks a non-ADS EDS stream (the
// EndpointDiscoveryService, typeURL fixed by the service).
func (s *Server) streamOpened(ctx context.Context, k ack.StreamKey, eds bool) error {
	if err := s.admitStream(eds); err != nil {
		return err
	}
	s.tracker.Open(k, eds, s.clock.Now(), closerOf(ctx))
	s.metrics.connectedNodes.Set(float64(s.tracker.Count()))
	return nil
}

func (s *Server) streamClosed(k ack.StreamKey) {
	node := s.tracker.NodeID(k)
	s.tracker.Close(k)
	s.metrics.connectedNodes.Set(float64(s.tracker.Count()))
	s.log.Info("xDS stream closed", zap.String("node", node), zap.Int64("stream", k.ID), zap.Bool("delta", k.Delta))
	// The closed stream may have been the last one a flip waited for.
	s.completeFlips(nil)
	s.notify.broadcast()
}

// request handles one request: the node on the first one, then ACK or
// NACK of the response named by nonce. An error (a node limit refused the
// stream) makes go-control-plane close the stream.
func (s *Server) request(k ack.StreamKey, node *corev3.Node, nonce string, errDetail *status.Status) error {
	if node != nil && s.tracker.NodeID(k) == "" {
		if err := s.admitNode(k, node.GetId(), node.GetCluster()); err != nil {
			return err
		}
		s.log.Info("xDS stream opened", zap.String("node", node.GetId()), zap.String("cluster", node.GetCluster()),
			zap.Int64("stream", k.ID), zap.Bool("delta", k.Delta))
	}
	if nonce == "" {
		return nil
	}
	if errDetail != nil {
		nk := s.tracker.Nack(k, nonce, errDetail.GetMessage(), s.clock.Now())
		if nk == nil {
			return nil
		}
		s.metrics.nacks.WithLabelValues(encoded.ShortType(nk.TypeURL)).Inc()
		shown := nk.Resources
		if len(shown) > 10 {
			shown = shown[:10]
		}
		s.log.Warn("Envoy rejected xDS update", zap.String("node", nk.Node), zap.String("type", encoded.ShortType(nk.TypeURL)),
			zap.Strings("resources", shown), zap.Int("resourceCount", len(nk.Resources)), zap.String("error", nk.Message))
		s.notify.broadcast()
		return nil
	}
	r := s.tracker.Ack(k, nonce, s.clock.Now())
	if r == nil {
		return nil
	}
	if ce := s.log.Check(zap.DebugLevel, "xDS ACK"); ce != nil {
		ce.Write(zap.Int64("stream", k.ID), zap.String("type", encoded.ShortType(r.TypeURL)), zap.String("nonce", nonce),
			zap.Int("resources", len(r.Names)), zap.Int("removed", len(r.Removed)), zap.Duration("rtt", s.clock.Since(r.SentAt)))
	}
	if r.TypeURL == resourcev3.EndpointType || r.TypeURL == resourcev3.VirtualHostType {
		s.completeFlips(r.Names)
	}
	if r.TypeURL == resourcev3.ClusterType && len(r.Removed) > 0 {
		s.completeFlips(r.Removed)
	}
	s.checkFirstAck(k)
	s.notify.broadcast()
	return nil
}

// responded records a response about to be sent.
func (s *Server) responded(k ack.StreamKey, nonce string, r *ack.Response, size int) {
	s.tracker.Sent(k, nonce, r)
	typ := encoded.ShortType(r.TypeURL)
	s.metrics.pushes.WithLabelValues(typ).Inc()
	s.metrics.pushedBytes.WithLabelValues(typ).Add(float64(size))
	if ce := s.log.Check(zap.DebugLevel, "xDS push"); ce != nil {
		ce.Write(zap.Int64("stream", k.ID), zap.String("type", typ), zap.String("nonce", nonce),
			zap.Int("resources", len(r.Names)), zap.Int("removed", len(r.Removed)), zap.Int("bytes", size))
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
		if ok && f.removal {
			s.completeRemoval(name, f, now, names != nil)
			return
		}
		if ok && s.tracker.AckedEverywhere(f.typeURL, name, f.version) {
			h := s.metrics.flipToAck
			if f.ahead {
				h = s.metrics.wakeClusterToAck
			}
			h.Observe(now.Sub(f.start).Seconds())
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
func (s *Server) resumed(k ack.StreamKey, typeURL string, versions map[string]string) {
	s.tracker.AssumeAcked(k, typeURL, versions)
	if typeURL == resourcev3.EndpointType || typeURL == resourcev3.VirtualHostType {
		s.completeFlips(nil)
	}
	s.checkFirstAck(k)
	s.notify.broadcast()
}

// checkFirstAck closes firstAck once stream k has ACKed every resource of
// the first applied snapshot that still exists.
func (s *Server) checkFirstAck(k ack.StreamKey) {
	select {
	case <-s.firstAck:
		return
	default:
	}
	s.mu.RLock()
	ok := s.first != nil && s.tracker.Covers(k, s.first) && s.demandFollowed(k)
	s.mu.RUnlock()
	if !ok {
		return
	}
	s.firstAckOnce.Do(func() {
		s.log.Info("first complete snapshot ACKed", zap.String("node", s.tracker.NodeID(k)))
		// The first snapshot's versions are needed no more (a copy of
		// every version: 24 MB at 100,000 revisions). Forgotten before
		// firstAck closes, so a WaitFirstAck caller never sees them.
		s.mu.Lock()
		s.first = nil
		s.mu.Unlock()
		close(s.firstAck)
	})
}
