package app

import "net"

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

// IsLoopbackAddress reports whether addr ("host:port") binds only the
// loopback interface (127.0.0.0/8, ::1 or localhost): reachable from this
// host alone.
func IsLoopbackAddress(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
