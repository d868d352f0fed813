package xds

import (
	"context"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/ack"
	"github.com/thaw-dev/thaw/xds/ondemand"
	"github.com/thaw-dev/thaw/xds/translate"
)

// demandState is the server's part of virtual hosts on demand
// (translate.Config.OnDemandHosts; xds/ondemand, xds/cache ondemand.go):
// which revisions are awake, so that their hosts are resident. Only the
// goroutine calling observeDemand touches awake and prev.
type demandState struct {
	policy *ondemand.Policy
	awake  map[revision.Key]bool
	prev   *revision.Snapshot

	// answers counts the on-demand answers sent, by result (found,
	// unknown); resident is the number of resident hosts.
	answers  *prometheus.CounterVec
	resident prometheus.Gauge
}

// newDemand sets the VHDS cache on demand when the config asks for it,
// registering its metrics on reg (nil: none).
func (s *Server) newDemand(reg prometheus.Registerer) {
	if !s.cfg.OnDemandHosts {
		return
	}
	p := ondemand.NewPolicy(translate.HTTPListenerName, s.cfg.EvictAfter())
	s.demand = &demandState{policy: p, awake: map[revision.Key]bool{},
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "on_demand_answers_total",
			Help: "Virtual hosts Envoys asked for on demand (--on-demand-hosts) and were answered, by result: found, unknown (404).",
		}, []string{"result"}),
		resident: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "thaw", Subsystem: "xds", Name: "on_demand_resident_hosts",
			Help: "Virtual hosts sent to every Envoy with --on-demand-hosts: awake revisions' and those within --on-demand-evict-after.",
		})}
	if reg != nil {
		reg.MustRegister(s.demand.answers, s.demand.resident)
	}
	s.deltas[resourcev3.VirtualHostType].SetDemand(p, s.cfg.PerEnvoy())
}

// countAnswers counts the on-demand answers in a VHDS response: resources
// sent for aliases, and aliases answered as unknown (no body). The anchor
// of a first answer that would be empty (ondemand.Policy.Anchor) is no
// Envoy's question and is not counted.
func (s *Server) countAnswers(resp *discoveryv3.DeltaDiscoveryResponse) {
	if s.demand == nil || resp.GetTypeUrl() != resourcev3.VirtualHostType {
		return
	}
	anchor := s.demand.policy.Anchor()
	for _, r := range resp.GetResources() {
		switch {
		case r.GetName() == anchor:
		case r.GetResource() == nil:
			s.demand.answers.WithLabelValues("unknown").Inc()
		case len(r.GetAliases()) > 0:
			s.demand.answers.WithLabelValues("found").Inc()
		}
	}
}

// awake reports whether a revision's hosts stay in every Envoy: it has a
// backend or wants one.
func awake(r *revision.Revision) bool {
	return r != nil && (len(r.Backends) > 0 || r.DesiredScale > 0)
}

// observeDemand makes the hosts of snap's awake revisions resident (sent
// to every Envoy) and starts the eviction clock of those no longer awake.
// It works in proportion to the revisions changed since the last call
// plus those awake. Called by the Run goroutine after each apply.
func (s *Server) observeDemand(snap *revision.Snapshot) {
	d := s.demand
	if d == nil || snap == nil || snap == d.prev {
		return
	}
	if d.prev == nil {
		for k, r := range snap.Revisions.All() {
			if awake(r) {
				d.awake[k] = true
			}
		}
	} else {
		for k := range snap.Changes(d.prev) {
			if awake(snap.Get(k)) {
				d.awake[k] = true
			} else {
				delete(d.awake, k)
			}
		}
	}
	d.prev = snap
	hosts := map[string]bool{}
	idx := d.policy.Index()
	for k := range d.awake {
		r := snap.Get(k)
		if r == nil {
			continue
		}
		for _, h := range r.Spec.Hosts {
			if n, ok := idx.Resolve(h); ok {
				hosts[n] = true
			}
		}
		if th := r.Spec.TagHost(); th != "" {
			if n, ok := idx.Resolve(th); ok {
				hosts[n] = true
			}
		}
	}
	added := d.policy.SetAwake(hosts, s.clock.Now())
	d.resident.Set(float64(d.policy.ResidentCount()))
	if len(added) > 0 {
		s.deltas[resourcev3.VirtualHostType].Recheck(added)
	}
}

// runDemandSweep evicts, every EvictAfter/4 (1 s to 1 min), the hosts
// whose revisions have been at zero for EvictAfter: the Envoys that hold
// them without having asked for them are sent their removal, and fetch
// them on their next request. A host an Envoy asked for stays there for
// the life of its xDS stream (cache.demandState says why).
func (s *Server) runDemandSweep(ctx context.Context) {
	d := s.demand
	if d == nil {
		return
	}
	every := min(max(d.policy.EvictAfter()/4, time.Second), time.Minute)
	for {
		t := s.clock.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		now := s.clock.Now()
		gone := d.policy.Expire(now)
		d.resident.Set(float64(d.policy.ResidentCount()))
		s.deltas[resourcev3.VirtualHostType].Recheck(gone)
		if len(gone) > 0 {
			s.log.Debug("on-demand hosts no longer resident", zap.Int("hosts", len(gone)),
				zap.Int("resident", d.policy.ResidentCount()))
		}
	}
}

// demandResident reports whether a virtual host is sent to every Envoy
// (always true without on-demand hosts).
func (s *Server) demandResident(name string) bool {
	return s.demand == nil || s.demand.policy.Resident(name)
}

// confirmedOnDemand reports whether a revision confirmed by a virtual
// host no Envoy holds counts as confirmed: with hosts on demand, an Envoy
// without the host has nothing to confirm (it fetches the current version
// on its next request), as long as some Envoy is connected.
func (s *Server) confirmedOnDemand(typeURL, name string) bool {
	return s.demand != nil && typeURL == resourcev3.VirtualHostType &&
		s.tracker.Count() > 0 && !s.tracker.HeldAnywhere(typeURL, name)
}

// demandFollowed reports whether stream k has ACKed a first VHDS response
// (always true without on-demand hosts). With hosts on demand the first
// snapshot may hold no virtual host for an Envoy, but listener thaw_http
// is warm only once Envoy's VHDS subscription got its first answer: thaw
// is not ready before (WaitFirstAck).
func (s *Server) demandFollowed(k ack.StreamKey) bool {
	return s.demand == nil || s.tracker.AckedType(k, resourcev3.VirtualHostType)
}
