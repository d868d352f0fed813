package main

import (
	"errors"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/xds/translate"
)

// onDemandFlags are --on-demand-hosts and its settings (thaw local, thaw
// run): an Envoy holds only the virtual hosts in use and fetches the
// others over VHDS when a request names them (issue 28,
// translate.Config.OnDemandHosts; docs/scaling.md, "Virtual hosts on
// demand"). Off by default.
type onDemandFlags struct {
	on         bool
	evictAfter time.Duration
	perEnvoy   int
	fetch      time.Duration
}

// add registers the flags on fl.
func (f *onDemandFlags) add(fl *pflag.FlagSet) {
	fl.BoolVar(&f.on, "on-demand-hosts", false, "send each Envoy only the virtual hosts in use (awake revisions', and those "+
		"it asked for); Envoy fetches any other host over VHDS when a request names it (envoy.filters.http.on_demand), "+
		"so 100,000 idle revisions cost Envoy about what the hosts in use cost. A host not yet in an Envoy cannot be fetched "+
		"while thaw is unreachable: such requests get 503 with Retry-After after --on-demand-fetch-timeout "+
		"(docs/scaling.md, \"Virtual hosts on demand\")")
	fl.DurationVar(&f.evictAfter, "on-demand-evict-after", translate.DefaultOnDemandEvictAfter,
		"with --on-demand-hosts: how long a host stays in the Envoys that did not ask for it after its revisions went back to zero")
	fl.IntVar(&f.perEnvoy, "on-demand-hosts-per-envoy", translate.DefaultOnDemandPerEnvoy,
		"with --on-demand-hosts: most Hosts one Envoy asked for that thaw remembers, to answer again when what they name changes "+
			"(least recently asked forgotten first; the hosts they fetched stay in that Envoy)")
	fl.DurationVar(&f.fetch, "on-demand-fetch-timeout", translate.DefaultOnDemandFetchTimeout,
		"with --on-demand-hosts: how long a request for a host an Envoy does not hold waits for thaw's answer; past it "+
			"(thaw unreachable) Envoy answers 503 with Retry-After (0: the default; it cannot be turned off). Also bounds how long a client "+
			"may take to send its request headers")
}

// apply sets cfg from the flags; eg (the Envoy Gateway extension: EG owns
// the routes) refuses them.
func (f *onDemandFlags) apply(logger *zap.Logger, cfg *translate.Config, eg bool) error {
	if !f.on {
		return nil
	}
	if eg {
		return errors.New("--on-demand-hosts: not with the Envoy Gateway extension (Envoy Gateway owns the routes)")
	}
	cfg.OnDemandHosts, cfg.OnDemandEvictAfter, cfg.OnDemandPerEnvoy = true, f.evictAfter, f.perEnvoy
	cfg.OnDemandFetchTimeout = f.fetch
	logger.Info("virtual hosts on demand", zap.Duration("evictAfter", cfg.EvictAfter()), zap.Int("perEnvoy", cfg.PerEnvoy()),
		zap.Duration("fetchTimeout", cfg.FetchTimeout()))
	return nil
}
