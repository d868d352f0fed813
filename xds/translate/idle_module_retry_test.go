package translate

import (
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/revision"
)

// TestClusterRouteRetryPolicy: on the module's cluster routes every
// revision route (a split's too) retries connection failures on another
// backend but never on FailoverHeader and without a retry priority (no
// activator listener, one priority there); every other configuration
// keeps the failover retry.
func TestClusterRouteRetryPolicy(t *testing.T) {
	snap := snapshotOf(
		rev("default", "one", revision.ModeProxy, []string{"one.example.com"}),
		withSpec(rev("shop", "v1", revision.ModeServe, []string{"shop.example.com"}, ready("10.0.0.1", 8080)),
			func(s *revision.Spec) { s.TrafficPercent = percent(90) }),
		withSpec(rev("shop", "v2", revision.ModeProxy, []string{"shop.example.com"}),
			func(s *revision.Spec) { s.TrafficPercent = percent(10) }),
	)
	for _, tt := range []struct {
		name     string
		cfg      Config
		failover bool
	}{
		{name: "module cluster routes", cfg: moduleIdleConfig(), failover: false},
		{name: "module", cfg: moduleTestConfig(), failover: true},
		{name: "ext_proc", cfg: testConfig(), failover: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Translate(snap, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, vh := range res.VirtualHosts {
				for _, r := range vh.GetRoutes() {
					rp := r.GetRoute().GetRetryPolicy()
					if rp == nil {
						continue
					}
					n++
					hasHeader := len(rp.GetRetriableHeaders()) > 0 || strings.Contains(rp.GetRetryOn(), "retriable-headers")
					if hasHeader != tt.failover || (rp.GetRetryPriority() != nil) != tt.failover {
						t.Errorf("%s: retriable headers %v, retry_on %q, retry priority %v; want the failover parts %v",
							vh.GetName(), rp.GetRetriableHeaders(), rp.GetRetryOn(), rp.GetRetryPriority(), tt.failover)
					}
					if !strings.HasPrefix(rp.GetRetryOn(), clusterRouteRetryOn) || len(rp.GetRetryHostPredicate()) != 1 ||
						rp.GetNumRetries().GetValue() != FailoverRetries {
						t.Errorf("%s: retry_on %q, %d host predicates, %d retries; want connection failures retried on another host",
							vh.GetName(), rp.GetRetryOn(), len(rp.GetRetryHostPredicate()), rp.GetNumRetries().GetValue())
					}
				}
			}
			if n < 2 {
				t.Errorf("%d revision routes with a retry policy, want the revision's and the split's", n)
			}
		})
	}
}
