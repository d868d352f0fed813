package ondemand

import (
	"strings"
	"sync"
	"time"
)

// Policy decides, for the VHDS cache, which virtual hosts every Envoy is
// sent (resident ones) and what an on-demand request names (Resolve). It
// implements cache.Demand. Safe for concurrent use; the cache calls it
// under its own lock, so Policy never calls the cache.
type Policy struct {
	prefix     string
	evictAfter time.Duration
	index      *Index

	mu sync.RWMutex
	// resident: virtual host → time it stops being resident; the zero
	// time while a revision it routes to is awake.
	resident map[string]time.Time
}

// NewPolicy returns a Policy for virtual hosts named prefix + "/" + ...
// (translate.HTTPListenerName, the route configuration's name: Envoy asks
// for "<prefix>/<Host>"), keeping a host resident for evictAfter after the
// last revision it routes to went back to zero.
func NewPolicy(prefix string, evictAfter time.Duration) *Policy {
	return &Policy{prefix: prefix + "/", evictAfter: evictAfter, index: NewIndex(), resident: map[string]time.Time{}}
}

// Index returns the policy's domain index.
func (p *Policy) Index() *Index { return p.index }

// Set indexes a virtual host, replacing its old encoding (nil: new;
// cache.Demand).
func (p *Policy) Set(name string, old, encoded []byte) { p.index.Set(name, old, encoded) }

// Delete forgets a virtual host last indexed with old (cache.Demand). It
// stays resident until SetAwake or Expire drop it: a host moving to
// another virtual host is deleted and re-added under its new name by the
// translation.
func (p *Policy) Delete(name string, old []byte) { p.index.Delete(name, old) }

// Resolve maps a name Envoy asked for on demand, "<prefix>/<Host>", to the
// virtual host a request for Host would match (cache.Demand). ok is false
// for another prefix or a host no virtual host claims.
func (p *Policy) Resolve(alias string) (name string, ok bool) {
	host, found := strings.CutPrefix(alias, p.prefix)
	if !found {
		return "", false
	}
	return p.index.Resolve(host)
}

// Resident reports whether every wildcard stream is sent name
// (cache.Demand).
func (p *Policy) Resident(name string) bool {
	p.mu.RLock()
	_, ok := p.resident[name]
	p.mu.RUnlock()
	return ok
}

// ResidentCount returns how many virtual hosts are resident.
func (p *Policy) ResidentCount() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.resident)
}

// SetAwake makes awake (virtual host names) the hosts of the revisions
// awake now. It returns the hosts that became resident: the caller tells
// the cache (cache.Delta.Recheck). A host no longer awake stays resident
// until now + evictAfter (Expire).
func (p *Policy) SetAwake(awake map[string]bool, now time.Time) (added []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, until := range p.resident {
		if until.IsZero() && !awake[name] {
			p.resident[name] = now.Add(p.evictAfter)
		}
	}
	for name := range awake {
		if _, was := p.resident[name]; !was {
			added = append(added, name)
		}
		p.resident[name] = time.Time{}
	}
	return added
}

// Expire drops the hosts whose residency ended at or before now and
// returns them: the caller tells the cache, which removes each from the
// Envoys that hold it and did not fetch it recently themselves.
func (p *Policy) Expire(now time.Time) (gone []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, until := range p.resident {
		if !until.IsZero() && !now.Before(until) {
			delete(p.resident, name)
			gone = append(gone, name)
		}
	}
	return gone
}

// AnchorHost is the Host of Policy.Anchor: under the reserved top-level
// domain .invalid (RFC 2606).
const AnchorHost = "thaw-on-demand.invalid"

// Anchor returns "<prefix>/thaw-on-demand.invalid" (cache.Demand): sent
// as an unknown alias in a first VHDS response that would otherwise be
// empty.
func (p *Policy) Anchor() string { return p.prefix + AnchorHost }

// EvictAfter returns how long a host stays after it was last used.
func (p *Policy) EvictAfter() time.Duration { return p.evictAfter }
