package xds

import (
	"fmt"
	"maps"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/xds/cache"
	"github.com/thaw-dev/thaw/xds/encoded"
)

// This file computes and applies one type's change: the diff between a
// translation and what the caches hold, and the cache updates (delta
// caches for endpoints, clusters and virtual hosts; LinearCaches for
// listeners and routes).

// change is the difference between the applied resources of one type and
// a new translation.
type change struct {
	typeURL string
	// upd holds new and changed resources, with their versions in ver.
	upd map[string]types.Resource
	ver map[string]string
	// enc holds the encodings of upd for the deltaTypes (their cache
	// sends them as they are).
	enc   map[string][]byte
	added []string
	del   []string
	// encoded is set for a type the translator keeps as encodings
	// (diffEncoded): upd's values are nil.
	encoded bool
	// lazy holds those of upd encoded only when an Envoy needs them
	// (lazy_hosts.go): they have no version in ver nor encoding in enc.
	lazy map[string]*encoded.Resource
}

// diff compares a new translation of one type with what the caches hold.
// proto.Equal keeps unchanged resources (and their versions) as they are,
// so Envoy is sent only what changed.
func (s *Server) diff(typeURL string, want map[string]types.Resource) (*change, error) {
	have := s.applied[typeURL]
	if dc := s.deltas[typeURL]; dc != nil {
		have = dc.Held()
	}
	c := newChange(typeURL)
	for name, r := range want {
		old, ok := have[name]
		// The translator reuses unchanged resources: same pointer, no
		// need to compare.
		if ok && (old == r || proto.Equal(old, r)) {
			continue
		}
		if err := c.add(name, r); err != nil {
			return nil, err
		}
		if !ok {
			c.added = append(c.added, name)
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			c.del = append(c.del, name)
		}
	}
	return c, nil
}

// diffEncoded compares a new translation of one type kept as encodings
// (translation.encoded) with what its delta cache holds, by version.
func (s *Server) diffEncoded(typeURL string, want map[string]*encoded.Resource) *change {
	c := newChange(typeURL)
	c.encoded = true // only the delta caches hold these types
	s.deltas[typeURL].View(func(have map[string]*cache.Entry) {
		for name, e := range want {
			h, ok := have[name]
			if e.IsLazy() {
				if !c.addLazy(name, h, e) {
					continue
				}
			} else {
				if ok && h.Version() == e.Version {
					continue
				}
				c.upd[name], c.ver[name], c.enc[name] = nil, e.Version, e.Bytes
			}
			if !ok {
				c.added = append(c.added, name)
			}
		}
		for name := range have {
			if _, ok := want[name]; !ok {
				c.del = append(c.del, name)
			}
		}
	})
	return c
}

func newChange(typeURL string) *change {
	c := &change{typeURL: typeURL, upd: map[string]types.Resource{}, ver: map[string]string{}}
	if deltaTypes[typeURL] {
		c.enc = map[string][]byte{}
	}
	return c
}

// add records a new or changed resource with its version.
func (c *change) add(name string, r types.Resource) error {
	b, v, err := encoded.Hash(r)
	if err != nil {
		return err
	}
	c.upd[name], c.ver[name] = r, v
	if c.enc != nil {
		c.enc[name] = b
	}
	return nil
}

// deltaTypes are the resource types served by a cache.Delta: one resource
// or more per revision. Listeners and routes (a handful) stay in
// go-control-plane LinearCaches.
var deltaTypes = map[string]bool{
	resourcev3.EndpointType:    true,
	resourcev3.ClusterType:     true,
	resourcev3.VirtualHostType: true,
}

// update applies upd and del to the type's cache.
func (s *Server) update(typeURL string, c *change, del []string) error {
	if h := s.beforeUpdate.Load(); h != nil {
		(*h)(typeURL, c)
	}
	if dc := s.deltas[typeURL]; dc != nil {
		return dc.UpdateLazy(c.upd, c.enc, c.ver, c.lazy, del)
	}
	return s.caches[typeURL].UpdateResources(c.upd, del)
}

// upsert puts c's new and changed resources in the cache.
func (s *Server) upsert(c *change) error {
	if len(c.upd) == 0 {
		return nil
	}
	if err := s.update(c.typeURL, c, nil); err != nil {
		return fmt.Errorf("update %s cache: %w", encoded.ShortType(c.typeURL), err)
	}
	if s.deltas[c.typeURL] == nil {
		maps.Copy(s.applied[c.typeURL], c.upd)
		maps.Copy(s.versions[c.typeURL], c.ver)
	}
	return nil
}

// replace puts c's new and changed resources in the cache and deletes its
// stale ones, in one update (one response per stream).
func (s *Server) replace(c *change) error {
	if len(c.upd) == 0 && len(c.del) == 0 {
		return nil
	}
	if err := s.update(c.typeURL, c, c.del); err != nil {
		return fmt.Errorf("update %s cache: %w", encoded.ShortType(c.typeURL), err)
	}
	if s.deltas[c.typeURL] == nil {
		maps.Copy(s.applied[c.typeURL], c.upd)
		maps.Copy(s.versions[c.typeURL], c.ver)
		for _, n := range c.del {
			delete(s.applied[c.typeURL], n)
			delete(s.versions[c.typeURL], n)
		}
	}
	return nil
}

// remove deletes c's stale resources from the cache.
func (s *Server) remove(c *change) error {
	if len(c.del) == 0 {
		return nil
	}
	if err := s.update(c.typeURL, newChange(c.typeURL), c.del); err != nil {
		return fmt.Errorf("delete from %s cache: %w", encoded.ShortType(c.typeURL), err)
	}
	for _, n := range c.del {
		delete(s.applied[c.typeURL], n)
		delete(s.versions[c.typeURL], n)
	}
	return nil
}
