package xds

import (
	"github.com/prometheus/client_golang/prometheus"
)

// ModuleStates tells which registry snapshot each connected activator
// module holds (modsvc.Server implements it). Removal first waits for it
// as well as for the Envoys' ACKs: the module's state stream is separate
// from xDS, and a module still listing a removed backend while its Envoy
// lists the added one pins requests to a host Envoy no longer has.
type ModuleStates interface {
	// LaggingModules returns the node ids (sorted, at most limit; limit
	// <= 0: all) of the connected modules not known to hold a state built
	// from a registry snapshot of Version >= version; none when every one
	// does. A module whose stream ended is not connected.
	LaggingModules(version uint64, limit int) []string
	// ModulesChanged returns a channel closed at the next confirmation
	// or stream opened or closed.
	ModulesChanged() <-chan struct{}
}

// moduleStatesRef holds the ModuleStates set by SetModuleStates.
type moduleStatesRef struct{ m ModuleStates }

// SetModuleStates makes removal first (translate.Config.RemovalFirst, or
// the activator module) also wait, for each split, until every module m
// reports connected holds the removal (bounded by StageTimeout like the
// Envoys' ACKs). nil: Envoys' ACKs only. Safe to call while Run runs;
// thaw calls it once, before.
func (s *Server) SetModuleStates(m ModuleStates) {
	if m == nil {
		s.modules.Store(nil)
		return
	}
	s.modules.Store(&moduleStatesRef{m: m})
}

// maxLaggingLogged bounds the node ids a timed-out split logs.
const maxLaggingLogged = 5

// laggingModules returns the modules (at most maxLaggingLogged) that do
// not hold snapshot version yet; none without ModuleStates.
func (s *Server) laggingModules(version uint64) []string {
	ref := s.modules.Load()
	if ref == nil {
		return nil
	}
	return ref.m.LaggingModules(version, maxLaggingLogged)
}

// modulesChanged is ModuleStates.ModulesChanged; nil without one (a nil
// channel never fires in a select).
func (s *Server) modulesChanged() <-chan struct{} {
	ref := s.modules.Load()
	if ref == nil {
		return nil
	}
	return ref.m.ModulesChanged()
}

// newRemovalFirstSeconds is thaw_xds_removal_first_seconds.
func newRemovalFirstSeconds() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "thaw", Subsystem: "xds", Name: "removal_first_seconds",
		Help:    "Seconds from an endpoint update sent removal first (its removal alone) to its additions being sent: every Envoy ACKed the removal and every connected activator module applied it, StageTimeout passed, or a newer update replaced it.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
}
