package translate

import (
	"fmt"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ondemandv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/on_demand/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// Defaults of the on-demand virtual hosts (Config.OnDemandHosts).
const (
	// DefaultOnDemandEvictAfter: a host idle this long leaves the Envoys
	// that hold it; its next request pays one VHDS round trip.
	DefaultOnDemandEvictAfter = 5 * time.Minute
	// DefaultOnDemandPerEnvoy: Hosts remembered per Envoy stream (a few
	// dozen bytes each in thaw).
	DefaultOnDemandPerEnvoy = 10000
	// OnDemandFilterName is the HTTP filter that pauses a request whose
	// host thaw_http lacks while Envoy fetches it over VHDS.
	OnDemandFilterName = "envoy.filters.http.on_demand"
)

// validateOnDemand returns the problems of the on-demand settings.
func (c *Config) validateOnDemand() []error {
	var errs []error
	if c.OnDemandEvictAfter < 0 {
		errs = append(errs, fmt.Errorf("%w: OnDemandEvictAfter %s: want >= 0", ErrInvalidConfig, c.OnDemandEvictAfter))
	}
	if c.OnDemandPerEnvoy < 0 {
		errs = append(errs, fmt.Errorf("%w: OnDemandPerEnvoy %d: want >= 0", ErrInvalidConfig, c.OnDemandPerEnvoy))
	}
	if err := c.validateOnDemandFetchTimeout(); err != nil {
		errs = append(errs, err)
	}
	if c.OnDemandHosts && c.InlineRoutes {
		errs = append(errs, fmt.Errorf("%w: OnDemandHosts needs VHDS: not with InlineRoutes", ErrInvalidConfig))
	}
	return errs
}

// EvictAfter returns OnDemandEvictAfter, defaulted.
func (c *Config) EvictAfter() time.Duration {
	if c.OnDemandEvictAfter == 0 {
		return DefaultOnDemandEvictAfter
	}
	return c.OnDemandEvictAfter
}

// PerEnvoy returns OnDemandPerEnvoy, defaulted.
func (c *Config) PerEnvoy() int {
	if c.OnDemandPerEnvoy == 0 {
		return DefaultOnDemandPerEnvoy
	}
	return c.OnDemandPerEnvoy
}

// OnDemandFilter returns envoy.filters.http.on_demand with no on-demand
// CDS: on listener thaw_http, before the activator module, it pauses a
// request for a host Envoy has no virtual host for, asks thaw for
// "thaw_http/<Host>" over VHDS, and resumes it when thaw answers (a 404 when
// thaw answered that no virtual host claims the host).
func OnDemandFilter() (*hcmv3.HttpFilter, error) {
	a, err := toAny(&ondemandv3.OnDemand{})
	if err != nil {
		return nil, err
	}
	return &hcmv3.HttpFilter{Name: OnDemandFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}}, nil
}

// OnDemandRouteConfiguration returns route configuration thaw_http for
// virtual hosts on demand: VHDS only, without the inline "*" catch-all
// (which would match every host, so nothing would ever be fetched). Envoy
// answers a host that thaw does not resolve with its own 404 after one
// VHDS round trip.
func OnDemandRouteConfiguration() (*routev3.RouteConfiguration, error) {
	return validated(&routev3.RouteConfiguration{
		Name: HTTPListenerName,
		Vhds: &routev3.Vhds{ConfigSource: adsConfigSource()},
	})
}

// vhdsRouteConfiguration returns thaw_http's route configuration for cfg.
func vhdsRouteConfiguration(cfg *Config) (*routev3.RouteConfiguration, error) {
	if cfg.OnDemandHosts {
		return OnDemandRouteConfiguration()
	}
	return VHDSRouteConfiguration()
}
