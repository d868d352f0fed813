// Command workload is the example HTTP server thaw scales in `make run` and
// in tests. It is deliberately small and observable:
//
//   - it listens only after a startup delay, so a readiness probe sees it
//     start late, like a real application loading state;
//   - every answer names the instance (port and pid), so callers can tell
//     backends apart;
//   - it counts requests in flight and the maximum seen (GET /stats, JSON),
//     so tests can check that container concurrency was respected;
//   - on SIGTERM or SIGINT it stops accepting connections and finishes the
//     requests in flight before it exits.
//
// Settings come from flags, or from the environment when a flag is not given:
//
//	--port           PORT           port on 127.0.0.1 (default 8080)
//	--address        ADDRESS        listen address (default 127.0.0.1)
//	--startup-delay  STARTUP_DELAY  wait before listening (default 0s)
//	--latency        LATENCY        time each request takes (default 0s)
//	--body           BODY           first line of every answer (default "hello")
//	--drain-timeout  DRAIN_TIMEOUT  longest graceful drain on SIGTERM (default 30s)
//	--protocol       PROTOCOL       http1 (default) or h2c: serve gRPC instead
//
// HTTP endpoints: GET /healthz (200 "ok", no latency), GET /stats (JSON;
// add ?reset=1 to reset max_inflight), /ws (WebSocket echo), GET
// /stream?events=N&interval=D (a server-sent events stream of N events D
// apart, defaults 10 and 1s), anything else: the workload response after
// the latency; "?latency=250ms" overrides the latency per request, and
// "?echo=NAME" reports the request's header NAME in the answer
// (X-Workload-Echo-Count: how many values it had; X-Workload-Echo: them,
// comma-joined), so tests can see what a backend receives.
//
// With --protocol h2c it serves gRPC over cleartext HTTP/2 instead:
// grpc.health.v1.Health and grpc.testing.TestService (UnaryCall,
// StreamingOutputCall, StreamingInputCall, FullDuplexCall); see grpc.go.
// Its answers carry what /stats would (start and listening times, calls
// begun) as x-workload-* response headers.
//
// Built by `make build` as bin/workload: the backend of examples/local.yaml
// (`make run`), of the e2e tests and of the bench scenarios;
// platform/local's tests build it themselves.
package main
