package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/platform/local"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds"
	"github.com/thaw-dev/thaw/xds/translate"
)

// drainer adapts the activator's per-address drain to the local platform.
type drainer struct{ act *activator.Activator }

func (d drainer) WaitIdle(ctx context.Context, key revision.Key, b revision.Backend) error {
	return d.act.WaitIdle(ctx, key, b.HostPort())
}

// router tells the local platform when every Envoy stopped routing to a
// backend: the registry published a revision without it, and every
// connected Envoy ACKed the ClusterLoadAssignment built from that
// generation (or a later one).
type router struct {
	reg *revision.Registry
	// xds returns the server once the app is built (the platform is built
	// inside app.New, before the server is reachable from here).
	xds func() *xds.Server
}

var _ local.Router = router{}

func (r router) WaitUnrouted(ctx context.Context, key revision.Key, b revision.Backend) error {
	snap, err := r.reg.WaitFor(ctx, func(s *revision.Snapshot) bool {
		rev := s.Get(key)
		return rev == nil || !slices.ContainsFunc(rev.Backends, func(x revision.Backend) bool {
			return x.Address == b.Address && x.Port == b.Port
		})
	})
	if err != nil {
		return fmt.Errorf("wait for %s to leave %s's backends: %w", b.HostPort(), key, err)
	}
	rev := snap.Get(key)
	if rev == nil {
		return nil // revision gone: Envoy drops its cluster
	}
	if err := r.xds().WaitConfirmed(ctx, key, rev.Generation); err != nil {
		return fmt.Errorf("wait for every Envoy to ACK %s without %s: %w", key, b.HostPort(), err)
	}
	return nil
}

// envoyLoad reads requests in flight and open connections per backend
// from the Envoy that `thaw local` runs (admin on loopback): per-host
// rq_active and cx_active of the revision's cluster (serve mode) and of the
// activator's destination cluster (requests the activator released; Envoy
// keeps their idle connections open).
type envoyLoad struct {
	adminURL string
	client   *http.Client
}

var _ local.LoadSource = envoyLoad{}

func newEnvoyLoad(adminPort int) envoyLoad {
	return envoyLoad{adminURL: fmt.Sprintf("http://127.0.0.1:%d", adminPort), client: &http.Client{Timeout: 2 * time.Second}}
}

// Load reads every named revision's cluster and the activator's
// destination cluster in one admin /clusters request.
func (e envoyLoad) Load(ctx context.Context, keys ...revision.Key) (map[string]local.BackendLoad, error) {
	clusters := make([]string, 0, len(keys)+1)
	for _, k := range keys {
		clusters = append(clusters, revision.ClusterName(k))
	}
	hosts, err := envoy.HostLoads(ctx, e.client, e.adminURL, append(clusters, translate.ActivatorDstClusterName)...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]local.BackendLoad, len(hosts))
	for addr, h := range hosts {
		out[addr] = local.BackendLoad{Requests: h.RequestsActive, Connections: h.ConnectionsActive}
	}
	return out, nil
}
