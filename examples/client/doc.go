// Command client tries the example revisions' WebSocket and gRPC endpoints
// through thaw, without curl or grpcurl:
//
//	client ws   [--addr 127.0.0.1:8080] [--host hello.localhost] [--n 5]
//	client grpc [--addr 127.0.0.1:8080] [--host grpc.localhost]
//
// ws opens a WebSocket to /ws (the example workload echoes), sends n
// messages and prints the echoes. grpc makes one call of each kind
// (unary, server streaming, client streaming, bidirectional) to the example
// workload's grpc.testing.TestService and a health check, printing each
// answer. Both wake a revision at zero: the first request is held while a
// process starts.
//
// Built by `make build` as bin/client; README.md shows it against `make run`.
package main
