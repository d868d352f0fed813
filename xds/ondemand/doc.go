// Package ondemand decides which virtual hosts an Envoy holds when thaw
// serves them on demand (translate.Config.OnDemandHosts, issue 28): an
// Envoy subscribes to VHDS as a wildcard and is sent only the resident
// hosts; a request for any other host makes Envoy's on_demand filter ask
// for "thaw_http/<Host>", which Policy.Resolve maps to a virtual host with
// Envoy's own domain rules (Index).
//
//   - Index: domain → virtual host, built from the virtual hosts' encodings
//     (exact, "*suffix" and "prefix*" wildcards, "*", case-insensitive,
//     port and trailing dot ignored), so a client's Host never creates
//     anything: it names an existing virtual host or none.
//   - Policy: implements cache.Demand for the VHDS cache. A host is
//     resident while a revision it routes to is awake (SetAwake) and for
//     EvictAfter after the last one went back to zero; Expired returns
//     those whose time ran out, so the server can tell the cache.
//
// The per-stream part (the hosts each Envoy asked for, kept for the life
// of its stream, and a bounded record of its aliases) lives in the cache
// (xds/cache, ondemand.go); the wiring in package xds (ondemand.go).
// Times come from the caller (now arguments).
package ondemand
