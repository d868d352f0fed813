// Package encoded holds a resource as its deterministic encoding and
// content-hash version (Resource, Encode, Hash, Decode): the one shape in
// which the memoised translator (xds/memo) hands clusters and virtual
// hosts to the delta caches (xds/cache), and in which the server compares
// versions instead of messages. It is the lowest xds package: it builds
// no Envoy resource and keeps no state. Called by xds/memo, xds/cache and
// the Server (xds).
package encoded
