package main

import (
	"github.com/spf13/pflag"

	"github.com/thaw-dev/thaw/autoscaler/statsink"
	"github.com/thaw-dev/thaw/extproc"
	"github.com/thaw-dev/thaw/internal/app"
	"github.com/thaw-dev/thaw/xds"
)

// addLimitFlags registers the bounds of docs/security.md, "Bounds" on fl, writing into l.
func addLimitFlags(fl *pflag.FlagSet, l *app.Limits) {
	fl.IntVar(&l.XDS.MaxNodes, "xds-max-nodes", xds.DefaultMaxNodes,
		"most Envoy node ids with an xDS stream; more are refused")
	fl.IntVar(&l.XDS.MaxStreamsPerNode, "xds-max-streams-per-node", xds.DefaultMaxStreamsPerNode,
		"most xDS streams per node id; more are refused")
	fl.IntVar(&l.XDS.MaxEDSStreamsPerNode, "xds-max-eds-streams-per-node", xds.DefaultMaxEDSStreamsPerNode,
		"most non-ADS EDS streams per node id (Envoy Gateway's Envoy opens one per Revision); more are refused")
	fl.IntVar(&l.XDS.MaxEDSStreams, "xds-max-eds-streams", xds.DefaultMaxEDSStreams,
		"most non-ADS EDS streams of all nodes together; more are refused")
	fl.DurationVar(&l.XDS.AckTimeout, "xds-ack-timeout", xds.DefaultAckTimeout,
		"an xDS stream that leaves a response unanswered while answering no other (or sends nothing) this long plus 1ms per resource in its unanswered responses, or one response unanswered 10 times that, is closed and no longer counts for scale-to-zero confirmation")
	fl.IntVar(&l.StatSink.MaxNodes, "stats-max-nodes", statsink.DefaultMaxNodes,
		"most Envoy node ids the stats sink keeps state for; idle ones are evicted first, then new ones refused")
	fl.IntVar(&l.StatSink.MaxClustersPerNode, "stats-max-clusters-per-node", statsink.DefaultMaxClustersPerNode,
		"most revision clusters the stats sink tracks per node")
	fl.DurationVar(&l.ExtProc.HeaderTimeout, "extproc-header-timeout", extproc.DefaultHeaderTimeout,
		"an ext_proc stream that sends no request headers this long is closed")
	fl.DurationVar(&l.ExtProc.MaxRequestDuration, "extproc-max-request-duration", extproc.DefaultMaxRequestDuration,
		"a request routed by the activator keeps its backend slot (and ext_proc stream) at most this long")
	fl.Uint32Var(&l.MaxStreamsPerConnection, "grpc-max-streams-per-connection", extproc.DefaultMaxStreamsPerConnection,
		"HTTP/2 concurrent-stream limit per connection on the gRPC port; keep it >= the max_requests circuit breaker of Envoy's thaw_extproc cluster")
}
