// Package ack tracks, per xDS stream, which resource versions thaw sent
// and which Envoy ACKed or NACKed (Tracker), and finds stalled streams
// (Stalled: a response left unanswered past the ack timeout plus a
// per-resource allowance, or no request at all). The server answers from
// it whether a revision's ClusterLoadAssignment is confirmed everywhere
// (AckedEverywhere) or by one node (AckedBy), when a make-before-break
// stage may go on (AllAcked, AllRemoved), and what status shows (Nodes,
// NACKs). It also counts nodes and streams for the server's limits
// (ClaimNode, Counts).
//
// It does no I/O and holds no go-control-plane state: the Server (package
// xds) feeds it from go-control-plane's stream callbacks, closes the
// streams it reports stalled, and owns the limits' metrics and logs. All
// methods are safe for concurrent use.
package ack
