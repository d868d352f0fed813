package translate

import (
	"errors"
	"testing"
)

// TestActivatorDstConnections: thaw_activator_dst bounds its connections in
// total and per backend (zero fields take the defaults, the per-backend
// default never above the total), and Validate refuses a per-backend bound
// above the total.
func TestActivatorDstConnections(t *testing.T) {
	for _, tc := range []struct {
		name              string
		total, perBackend uint32
		wantTotal, wantPB uint32
	}{
		{"defaults", 0, 0, DefaultActivatorMaxConnections, DefaultActivatorMaxConnectionsPerBackend},
		{"small total", 112, 0, 112, 112},
		{"both set", 480, 200, 480, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ActivatorMaxConnections, cfg.ActivatorMaxConnectionsPerBackend = tc.total, tc.perBackend
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			c, err := ActivatorDstCluster(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			cb := c.GetCircuitBreakers()
			if got := cb.GetThresholds()[0].GetMaxConnections().GetValue(); got != tc.wantTotal {
				t.Errorf("max_connections = %d, want %d", got, tc.wantTotal)
			}
			if got := cb.GetPerHostThresholds()[0].GetMaxConnections().GetValue(); got != tc.wantPB {
				t.Errorf("per-host max_connections = %d, want %d", got, tc.wantPB)
			}
			// Released requests wait for a connection: pending requests
			// keep the generated clusters' (high) limit.
			if got := cb.GetThresholds()[0].GetMaxPendingRequests().GetValue(); got != cfg.CircuitBreakerMaxRequests {
				t.Errorf("max_pending_requests = %d, want %d", got, cfg.CircuitBreakerMaxRequests)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.ActivatorMaxConnections, cfg.ActivatorMaxConnectionsPerBackend = 100, 200
	if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("per-backend above total: %v, want ErrInvalidConfig", err)
	}
}
