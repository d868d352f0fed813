// Package xds is thaw's xDS control plane: it translates revision registry
// snapshots into Envoy resources (listener thaw_http, one route and EDS
// cluster per revision, the internal listener thaw_activator and the
// ORIGINAL_DST cluster thaw_activator_dst), serves them over delta and
// state-of-the-world ADS with go-control-plane, and tracks per Envoy node
// which versions were ACKed or NACKed so a mode flip can be confirmed by
// every Envoy before a revision scales to zero.
package xds
