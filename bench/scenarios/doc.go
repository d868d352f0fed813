// Command scenarios runs thaw's scenario benchmarks with the real thaw
// binary (`thaw local`, which starts its own Envoy and the backend
// processes), a plain Envoy with a static configuration as the baseline,
// and the example workload as the backend. Load comes from vegeta
// (github.com/tsenart/vegeta/v12/lib): constant-rate attacks, closed-loop
// attacks and one burst. All traffic stays on 127.0.0.1.
//
// Scenarios (-only selects some, comma-separated):
//
//	paths     warm path (serve mode vs static Envoy) and activator path
//	          (proxy mode with a warm backend vs serve mode)
//	cold      cold-start overhead over 30 cold starts per startup delay
//	burst     1000 requests at once to a revision at zero; timeline picture
//	burst10k  10,000 requests at once to a revision at zero (10 s start),
//	          5 runs (each with a fresh thaw) at container concurrency 0 and
//	          5 at 50:
//	          errors by kind, time to all served, memory of thaw and Envoy
//	          per held request
//	failover  thaw killed (SIGKILL) under proxy-mode load and restarted:
//	          failed requests, latency per phase, failover time
//	protocols gRPC warm path (serve mode vs static Envoy, h2c) and the
//	          cold-start overhead of a gRPC call and a WebSocket upgrade
//	eg        thaw as Envoy Gateway's extension: warm path through EG's
//	          Envoy to a Revision vs to a plain Backend, cold starts
//	egsplit   a 90/10 RevisionSplit route through EG's Envoy vs a single
//	          Revision and a plain Backend: Envoy CPU per request
//	knobs     (only when asked) what each part of thaw's serve-mode Envoy
//	          configuration costs a warm request, in one static Envoy
//	abuse     thaw's memory under hostile gRPC clients (issue 13), not in
//	          the default set
//	scale100k (only when asked: make bench runs it as a step of its own;
//	          ~4 minutes, ~8 GB of memory) 100,000 idle revisions, 3 active
//	          ones under light load and 5 woken then back at zero: start to
//	          ready, memory, the decision loops' CPU per tick, a mode flip's
//	          bytes and flip-to-ACK (-quick: 20,000 and 2)
//	peers     (only alone: -only peers) thaw (serve mode, the activator
//	          module, ext_proc) beside the KEDA HTTP add-on
//	          interceptor and Knative's queue-proxy, in a network namespace
//	          of its own; -out gets the peers figures; -smoke sends one
//	          request through each side and measures nothing (CI)
//
// It writes the figures as JSON (-out; bench/report renders them into
// docs/BENCHMARKS.md) and the burst timeline as PNG (-png). `make bench`
// runs it through hack/bench.sh.
//
// It waits on thaw through the admin /status, asking for the revisions it
// follows one at a time (/status?revision=; status_one.go), and reads thaw's
// and Envoy's /metrics, /stats and /proc for the figures. Built as
// bin/bench-scenarios by `make bench-bin`, hack/bench.sh and
// hack/bench-peers.sh (CI's `make test-peers` runs -only peers -smoke).
package main
