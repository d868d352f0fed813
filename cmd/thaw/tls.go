package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/thaw-dev/thaw/internal/app"
	"github.com/thaw-dev/thaw/internal/tlsreload"
)

// grpcTLS returns the gRPC server options for files: none (plaintext) when
// no file is named, otherwise mutual TLS from a tlsreload.Reloader, which
// re-reads the files when they change, with its metrics' collectors. Naming only some of the three files
// is an error. Plaintext on an address other than loopback is logged as a
// warning: any client that reaches the port could then act as an Envoy.
func grpcTLS(logger *zap.Logger, addr string, files tlsreload.Files) ([]grpc.ServerOption, []prometheus.Collector, error) {
	if files == (tlsreload.Files{}) {
		if !app.IsLoopbackAddress(addr) {
			logger.Warn("gRPC (xDS, ext_proc, stats) is served in plaintext on a non-loopback address: any client that reaches it is trusted as an Envoy; set --tls-cert-file, --tls-key-file and --tls-client-ca-file (docs/security.md)",
				zap.String("address", addr))
		}
		return nil, nil, nil
	}
	r, err := tlsreload.New(tlsreload.Options{Files: files, Logger: logger.Named("tls")})
	if err != nil {
		return nil, nil, err
	}
	return []grpc.ServerOption{grpc.Creds(r.Credentials())}, r.Collectors(), nil
}
