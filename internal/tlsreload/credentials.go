package tlsreload

import (
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"
)

// Credentials returns gRPC server transport credentials for ServerConfig
// that count every refused handshake (HandshakeFailures): a client
// without a certificate, with one from another CA, a plaintext client, or
// a connection that closes mid-handshake.
func (r *Reloader) Credentials() credentials.TransportCredentials {
	return &countingCreds{TransportCredentials: credentials.NewTLS(r.ServerConfig()), r: r}
}

// HandshakeFailures returns how many server handshakes failed.
func (r *Reloader) HandshakeFailures() uint64 { return r.failures.Load() }

// Collectors returns the Prometheus collectors of r, read at scrape time:
// thaw_grpc_tls_handshake_failures_total and thaw_grpc_tls_reloads_total.
func (r *Reloader) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "thaw", Subsystem: "grpc_tls", Name: "handshake_failures_total",
			Help: "TLS handshakes refused on thaw's gRPC port (no or untrusted client certificate, plaintext, broken connection)."},
			func() float64 { return float64(r.HandshakeFailures()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "thaw", Subsystem: "grpc_tls", Name: "reloads_total",
			Help: "Times the gRPC port's certificate files were reloaded after they changed."},
			func() float64 { return float64(r.Reloads()) }),
	}
}

type countingCreds struct {
	credentials.TransportCredentials
	r *Reloader
}

// ServerHandshake implements credentials.TransportCredentials.
func (c *countingCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		c.r.failures.Add(1)
		if ce := c.r.log.Check(zap.DebugLevel, "TLS handshake refused"); ce != nil {
			ce.Write(zap.Stringer("remote", conn.RemoteAddr()), zap.Error(err))
		}
	}
	return out, info, err
}

// Clone implements credentials.TransportCredentials.
func (c *countingCreds) Clone() credentials.TransportCredentials {
	return &countingCreds{TransportCredentials: c.TransportCredentials.Clone(), r: c.r}
}
