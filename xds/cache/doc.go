// Package cache holds the xDS caches the Server serves from:
//
//   - Delta serves one resource type (ClusterLoadAssignments, clusters,
//     virtual hosts) over delta xDS in O(changed): it keeps each resource
//     as its encoding and version (computed once by the server, see
//     xds/encoded), a log of changed names, and per delta stream its own
//     record of the versions sent (subState). State-of-the-world watches
//     go to an inner go-control-plane LinearCache created at the first
//     such watch.
//   - With SetDemand (ondemand.go; translate.Config.OnDemandHosts), a
//     Delta serves virtual hosts on demand: a wildcard stream gets the
//     resident ones and those it asked for; a subscribed alias
//     ("thaw_http/<Host>") is resolved and answered with aliases, or as
//     unknown; per stream, the aliases remembered are bounded (LRU).
//   - Gate holds every watch unanswered until Open (the platform's first
//     sync), so no Envoy is ever served an empty or partial snapshot.
//
// Both implement go-control-plane's cachev3.Cache. They never write into
// go-control-plane's maps (a subscription's returned-resources map is
// only read) and send on watch channels only after releasing their lock.
//
// It does not translate, diff or track ACKs: the Server (package xds)
// decides what to Update and when to Open; xds/ack tracks what Envoy
// ACKed. Called by the Server only.
package cache
