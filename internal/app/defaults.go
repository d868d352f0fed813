package app

// Default addresses. Everything thaw serves binds to loopback by default;
// Envoy's data-plane listener is configured separately.
const (
	// DefaultAdminAddress serves /metrics, /status, /healthz, /readyz.
	DefaultAdminAddress = "127.0.0.1:9901"
	// DefaultGRPCAddress serves xDS, ext_proc and the stats sink to Envoy.
	DefaultGRPCAddress = "127.0.0.1:18000"
	// DefaultEnvoyAdminPort is the admin port of the Envoy `thaw local`
	// starts (on 127.0.0.1).
	DefaultEnvoyAdminPort = 9902
	// DefaultHTTPPort is Envoy's data-plane listener port.
	DefaultHTTPPort = 8080
)
