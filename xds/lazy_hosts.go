package xds

import (
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/xds/cache"
	"github.com/thaw-dev/thaw/xds/encoded"
)

// This file is the server's part of lazily encoded virtual hosts
// (--on-demand-hosts; memo.lazyVirtualHost, encoded.NewLazy): a host is
// encoded when an Envoy first needs it, so the translation knows no
// version for it. A confirmation reference to such a host carries no
// version (memo.ConfirmRef); its version is the one the VHDS cache holds,
// which any Envoy holding the host was sent.

// confirmVersion returns the version ar is confirmed at: its own, or,
// for a virtual host whose reference carries none (encoded lazily), the
// version the VHDS cache encoded it at; "" (no Envoy ACKed it) while it
// is not encoded, which means no Envoy was sent it: the check encodes
// nothing (an autoscaler asks for every revision on every tick).
func (s *Server) confirmVersion(ar appliedRevision) string {
	if ar.claVersion != "" || ar.typeURL != resourcev3.VirtualHostType {
		return ar.claVersion
	}
	return s.deltas[resourcev3.VirtualHostType].EncodedVersionsOf([]string{ar.cla})[ar.cla]
}

// addLazy records in c a lazily encoded host e that the cache holds as h
// (nil: new), and reports whether it is a change. The same pointer is no
// change (the translator reuses unchanged hosts). A host the cache holds
// unencoded was never sent, so no Envoy holds it and the new one stays
// unencoded too: no version to wait for or time. One that was sent may be
// held: e is encoded now and compared by version, as an eager host. Call
// under the VHDS cache's lock (diffEncoded's View).
func (c *change) addLazy(name string, h *cache.Entry, e *encoded.Resource) bool {
	if h != nil && h.Lazy() == e {
		return false
	}
	if h == nil || h.Version() == "" {
		if c.lazy == nil {
			c.lazy = map[string]*encoded.Resource{}
		}
		c.upd[name], c.lazy[name] = nil, e
		return true
	}
	b, v, err := e.Get()
	if err != nil || h.Version() == v {
		// err: h is kept (an encoding never fails for a host that
		// validated at translation).
		return false
	}
	c.upd[name], c.ver[name], c.enc[name] = nil, v, b
	if c.lazy == nil {
		c.lazy = map[string]*encoded.Resource{}
	}
	c.lazy[name] = e // keeps the pointer: the next diff skips it
	return true
}

// lazyVersions adds to c.ver the versions of c's lazy hosts that the
// cache encoded since diffEncoded (an Envoy fetched the old host meanwhile,
// and the cache encoded the new one on update: cache.Delta.apply), so
// that a stage waits for their ACK as for any held host. Call after the
// update.
func (s *Server) lazyVersions(c *change) {
	var names []string
	for name := range c.lazy {
		if c.ver[name] == "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return
	}
	for name, v := range s.deltas[c.typeURL].EncodedVersionsOf(names) {
		c.ver[name] = v
	}
}
