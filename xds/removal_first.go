package xds

import (
	"net"
	"strconv"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// Removal first (docs/activator.md, *Removal ordering*). The activator
// module pins requests with a strict override host and tells a removal
// that reached Envoy first only by Envoy's host count being lower than
// its own. A ClusterLoadAssignment that removes one host and adds another
// at once can leave Envoy's count equal to the module's while the hosts
// differ (Envoy {A, C}, the module still {A, B}): the module pins B and
// Envoy answers 503. So such a change never goes out in one step, on the
// endpoint path or in a full apply (removal_first_full.go): the removal
// goes alone (the held hosts still listed), and the additions once every
// Envoy ACKed it and every connected module applied a state without the
// removed hosts (ModuleStates: the module's state stream is not xDS), or
// after StageTimeout (logged: a stuck Envoy or module must not hold
// additions back for ever; a module whose stream ended is not waited for).

// removalFirst reports whether endpoint updates split their removals
// from their additions: with the activator module (whose strict override
// host needs it) or when Config.RemovalFirst asks, and never with
// StageTimeout 0 (nothing would bound the wait). Without the module a
// swap of every backend would otherwise leave a serve-mode cluster
// without hosts for one ACK round trip.
func (s *Server) removalFirst() bool {
	return s.cfg.StageTimeout > 0 && (s.cfg.Module != nil || s.cfg.RemovalFirst)
}

// pendingSplit is a revision whose additions wait for its removal.
type pendingSplit struct {
	// rev is the revision last applied with a removal-only
	// ClusterLoadAssignment named name at cache version version.
	rev           *revision.Revision
	name, version string
	// snapVersion is the registry snapshot Version the removal was built
	// from: connected modules must hold one at least as new.
	snapVersion uint64
	// start and deadline are set by the first split and kept while the
	// revision stays split (churn does not extend them).
	start, deadline time.Time
}

// noteSplit records that r's ClusterLoadAssignment name went out
// removal-only at cache version version, built from registry snapshot
// snapVersion. Run's goroutine only.
func (s *Server) noteSplit(r *revision.Revision, name, version string, snapVersion uint64, start time.Time) {
	p := s.splits[r.Key]
	if p == nil {
		s.log.Debug("sending a revision's endpoint removal before its additions",
			zap.String("revision", r.Key.String()))
		s.metrics.removalFirst.WithLabelValues("split").Inc()
		p = &pendingSplit{start: start, deadline: start.Add(s.cfg.StageTimeout)}
		s.splits[r.Key] = p
	}
	p.rev, p.name, p.version, p.snapVersion = r, name, version, snapVersion
}

// splitTimeout is a split whose deadline passed: before every Envoy
// ACKed its removal (envoys), or with modules still lagging.
type splitTimeout struct {
	key     revision.Key
	envoys  bool
	lagging []string
}

// lbHosts returns the "ip:port" of every lb endpoint of cla.
func lbHosts(cla *endpointv3.ClusterLoadAssignment) map[string]bool {
	hosts := map[string]bool{}
	for _, le := range cla.GetEndpoints() {
		for _, lb := range le.GetLbEndpoints() {
			if h, ok := hostOf(lb); ok {
				hosts[h] = true
			}
		}
	}
	return hosts
}

// hostOf returns lb's "ip:port"; false for an endpoint that is no socket
// address (the activator's internal listener in proxy mode), which is
// never a backend the module pins.
func hostOf(lb *endpointv3.LbEndpoint) (string, bool) {
	sa := lb.GetEndpoint().GetAddress().GetSocketAddress()
	if sa == nil {
		return "", false
	}
	return net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10)), true
}

// removalOnly returns next without the hosts that held does not list,
// and whether that differs from next: true when next adds a host while
// held lists one next removes (split: send the result first), or when
// force holds and next adds any host (an earlier removal is still
// unconfirmed). held nil (a new ClusterLoadAssignment) never splits.
// next is not modified.
func removalOnly(held, next *endpointv3.ClusterLoadAssignment, force bool) (*endpointv3.ClusterLoadAssignment, bool) {
	if held == nil || next == nil {
		return next, false
	}
	had, have := lbHosts(held), lbHosts(next)
	adds, removes := false, false
	for h := range have {
		if !had[h] {
			adds = true
		}
	}
	for h := range had {
		if !have[h] {
			removes = true
		}
	}
	if !adds || !(removes || force) {
		return next, false
	}
	out := proto.Clone(next).(*endpointv3.ClusterLoadAssignment)
	for _, le := range out.GetEndpoints() {
		kept := le.LbEndpoints[:0]
		for _, lb := range le.GetLbEndpoints() {
			if h, ok := hostOf(lb); !ok || had[h] {
				kept = append(kept, lb)
			}
		}
		le.LbEndpoints = kept
	}
	return out, true
}

// splitsDue returns the revisions whose removal every Envoy ACKed and
// every connected module applied, whose removal-only assignment was
// replaced since, or whose deadline passed (also in timedOut), and
// forgets them. Run re-applies their current ClusterLoadAssignments.
func (s *Server) splitsDue(now time.Time) (due []*revision.Revision, timedOut []splitTimeout) {
	// Splits of one registry change share a snapshot: ask once per
	// Version (the modules are walked per question).
	lags := map[uint64][]string{}
	for key, p := range s.splits {
		held := s.deltas[resourcev3.EndpointType].VersionsOf([]string{p.name})[p.name]
		acked := held == p.version && s.tracker.AckedEverywhere(resourcev3.EndpointType, p.name, p.version)
		var lagging []string
		if acked {
			var asked bool
			if lagging, asked = lags[p.snapVersion]; !asked {
				lagging = s.laggingModules(p.snapVersion)
				lags[p.snapVersion] = lagging
			}
		}
		var outcome string
		switch {
		case held != p.version: // superseded (a full apply, or gone)
			outcome = "superseded"
		case acked && len(lagging) == 0:
			outcome = "acked"
		case !now.Before(p.deadline):
			outcome = "timeout"
			if acked {
				outcome = "module_timeout"
			}
			timedOut = append(timedOut, splitTimeout{key: key, envoys: !acked, lagging: lagging})
		default:
			continue
		}
		s.metrics.removalFirst.WithLabelValues(outcome).Inc()
		s.metrics.removalFirstSeconds.Observe(now.Sub(p.start).Seconds())
		due = append(due, p.rev)
		delete(s.splits, key)
	}
	return due, timedOut
}

// splitWake returns what wakes Run for pending splits: acks and modules,
// the ACK notifications and the modules' confirmations Run took before
// it checked the splits, and a timer at the earliest
// deadline (nil channels without splits), and the timer's stop function.
func (s *Server) splitWake(acks, modules <-chan struct{}) (<-chan struct{}, <-chan struct{}, <-chan time.Time, func()) {
	var first time.Time
	for _, p := range s.splits {
		if first.IsZero() || p.deadline.Before(first) {
			first = p.deadline
		}
	}
	if first.IsZero() {
		return nil, nil, nil, func() {}
	}
	t := s.clock.NewTimer(first.Sub(s.clock.Now()))
	return acks, modules, t.C(), func() { t.Stop() }
}

// advanceSplits applies the additions of the splits that are due (their
// removal ACKed everywhere and applied by every module, or timed out:
// logged).
func (s *Server) advanceSplits() error {
	if len(s.splits) == 0 {
		return nil
	}
	due, timedOut := s.splitsDue(s.clock.Now())
	for _, to := range timedOut {
		if to.envoys {
			s.log.Warn("sending a revision's added endpoints before every Envoy ACKed the removal sent first",
				zap.String("revision", to.key.String()), zap.Duration("timeout", s.cfg.StageTimeout))
			continue
		}
		s.log.Warn("sending a revision's added endpoints before every activator module applied the removal sent first",
			zap.String("revision", to.key.String()), zap.Strings("lagging", to.lagging), zap.Duration("timeout", s.cfg.StageTimeout))
	}
	// A revision gone or idle since is left to the paths that did that.
	revs := due[:0]
	for _, r := range due {
		if cur := s.prevSnap.Get(r.Key); cur != nil && cur.Generation > r.Generation {
			r = cur
		}
		if s.tr.LoadAssignment(r.Key) != nil {
			revs = append(revs, r)
		}
	}
	if len(revs) == 0 {
		return nil
	}
	return s.applyEndpoints(revs, s.prevSnap.Version, s.clock.Now())
}
