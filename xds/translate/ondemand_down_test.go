package translate

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/thaw-dev/thaw/revision"
)

// onDemandTestConfig is moduleIdleConfig (thaw local's module default)
// with OnDemandHosts.
func onDemandTestConfig() Config {
	cfg := moduleIdleConfig()
	cfg.OnDemandHosts = true
	return cfg
}

// onDemandTestSnapshot holds a lone revision, one with an idle limit, and
// a split with tags: every kind of route thaw_http's virtual hosts carry.
func onDemandTestSnapshot() *revision.Snapshot {
	return snapshotOf(
		rev("default", "awake", revision.ModeServe, []string{"awake.example.com"}, ready("10.0.0.1", 8080)),
		withSpec(rev("default", "poll", revision.ModeProxy, []string{"poll.example.com"}),
			func(s *revision.Spec) { s.IdleTimeout = 90 * time.Second }),
		withSpec(rev("shop", "v1", revision.ModeServe, []string{"shop.example.com"}, ready("10.0.0.2", 8080)),
			func(s *revision.Spec) { s.TrafficPercent = percent(90) }),
		withSpec(rev("shop", "v2", revision.ModeProxy, []string{"shop.example.com"}),
			func(s *revision.Spec) { s.TrafficPercent, s.Tag = percent(10), "canary" }),
	)
}

// TestTranslateOnDemandGolden: with OnDemandHosts, listener thaw_http runs
// on_demand first, has stream_idle_timeout = the fetch timeout and the
// local reply mapper of an unfetched host (503, Retry-After); route
// configuration thaw_http is VHDS without a catch-all.
func TestTranslateOnDemandGolden(t *testing.T) {
	cfg := onDemandTestConfig()
	cfg.OnDemandFetchTimeout = 3 * time.Second
	cfg.Module.RetryAfterSeconds = 2
	res, err := Translate(onDemandTestSnapshot(), cfg)
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	checkGolden(t, filepath.Join("testdata", "translate_ondemand.yaml"), goldenYAML(t, res))
}

// httpConnectionManager returns listener thaw_http's connection manager.
func httpConnectionManager(t *testing.T, cfg Config) *hcmv3.HttpConnectionManager {
	t.Helper()
	l, err := HTTPListener(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	var hcm hcmv3.HttpConnectionManager
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	return &hcm
}

// TestOnDemandFetchBound: the bound is on thaw_http only with the flag,
// with the configured or default timeout and Retry-After.
func TestOnDemandFetchBound(t *testing.T) {
	for _, tc := range []struct {
		name           string
		set            func(*Config)
		wantIdle       time.Duration // 0: no stream_idle_timeout, no mapper
		wantRetryAfter string
	}{
		{"off", func(c *Config) {}, 0, ""},
		{"off with module", func(c *Config) { *c = moduleIdleConfig() }, 0, ""},
		{"defaults", func(c *Config) { c.OnDemandHosts = true }, DefaultOnDemandFetchTimeout, "1"},
		{"set", func(c *Config) { c.OnDemandHosts, c.OnDemandFetchTimeout = true, 1500*time.Millisecond }, 1500 * time.Millisecond, "1"},
		{"module retry-after", func(c *Config) { *c = onDemandTestConfig(); c.Module.RetryAfterSeconds = 7 }, DefaultOnDemandFetchTimeout, "7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.set(&cfg)
			hcm := httpConnectionManager(t, cfg)
			if tc.wantIdle == 0 {
				if hcm.GetStreamIdleTimeout() != nil || hcm.GetLocalReplyConfig() != nil {
					t.Fatalf("stream_idle_timeout %v, local reply %v; want Envoy's defaults", hcm.GetStreamIdleTimeout(), hcm.GetLocalReplyConfig())
				}
				return
			}
			if got := hcm.GetStreamIdleTimeout().AsDuration(); got != tc.wantIdle {
				t.Errorf("stream_idle_timeout %v, want %v", got, tc.wantIdle)
			}
			m := hcm.GetLocalReplyConfig().GetMappers()
			if len(m) != 1 || m[0].GetStatusCode().GetValue() != 503 ||
				m[0].GetBody().GetInlineString() != OnDemandUnreachableBody ||
				len(m[0].GetHeadersToAdd()) != 1 || m[0].GetHeadersToAdd()[0].GetHeader().GetKey() != "retry-after" ||
				m[0].GetHeadersToAdd()[0].GetHeader().GetValue() != tc.wantRetryAfter {
				t.Errorf("local reply mappers %v; want one 503 with Retry-After %s", m, tc.wantRetryAfter)
			}
		})
	}
}

// TestOnDemandRoutesOverrideFetchBound: every route thaw_http's virtual
// hosts carry sets its own idle_timeout (or answers at once), so the
// connection manager's stream_idle_timeout, the fetch bound, never cuts
// a routed request (a held one, a slow backend, a WebSocket).
func TestOnDemandRoutesOverrideFetchBound(t *testing.T) {
	res, err := Translate(onDemandTestSnapshot(), onDemandTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	var vhs []*routev3.VirtualHost
	vhs = append(vhs, res.VirtualHosts...)
	for _, rc := range res.Routes {
		if rc.GetName() == HTTPListenerName {
			vhs = append(vhs, rc.GetVirtualHosts()...)
		}
	}
	routes := 0
	for _, vh := range vhs {
		for _, r := range vh.GetRoutes() {
			routes++
			switch a := r.GetAction().(type) {
			case *routev3.Route_Route:
				if a.Route.GetIdleTimeout() == nil {
					t.Errorf("virtual host %s route %q: no idle_timeout; the fetch bound would cut it", vh.GetName(), r.GetName())
				}
			case *routev3.Route_DirectResponse, *routev3.Route_Redirect:
			default:
				t.Errorf("virtual host %s route %q: action %T", vh.GetName(), r.GetName(), a)
			}
		}
	}
	if routes < 4 {
		t.Fatalf("%d routes in %d virtual hosts; want the test snapshot's", routes, len(vhs))
	}
}

func TestOnDemandFetchTimeoutValidate(t *testing.T) {
	c := DefaultConfig()
	c.OnDemandHosts, c.OnDemandFetchTimeout = true, -time.Second
	if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("negative fetch timeout: Validate() = %v, want ErrInvalidConfig", err)
	}
	c.OnDemandFetchTimeout = 0
	if err := c.Validate(); err != nil || c.FetchTimeout() != DefaultOnDemandFetchTimeout {
		t.Errorf("zero fetch timeout: Validate() = %v, FetchTimeout %v; want the default", err, c.FetchTimeout())
	}
	if lrc, err := OnDemandLocalReplyConfig(0); err != nil ||
		lrc.GetMappers()[0].GetHeadersToAdd()[0].GetHeader().GetValue() != "1" {
		t.Errorf("OnDemandLocalReplyConfig(0) = %v, %v; want Retry-After 1", lrc, err)
	}
}
