package cache

import (
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// Demand makes a Delta serve virtual hosts on demand (VHDS with Envoy's
// on_demand filter; xds/ondemand.Policy implements it): a wildcard stream
// is sent the resident resources and those it fetched itself, and a name
// a request subscribes to that is not a resource is an alias, resolved to
// one. The Delta calls it under its own lock: it must not call back.
type Demand interface {
	// Resident reports whether every wildcard stream is sent name.
	Resident(name string) bool
	// Resolve returns the resource an alias names, or ok false.
	Resolve(alias string) (name string, ok bool)
	// Set and Delete follow the cache's resources (encoded as sent).
	Set(name string, encoded []byte)
	Delete(name string)
}

// DefaultDemandPerStream bounds the resources one stream fetched on
// demand that the cache remembers (and so keeps sending it): beyond it
// the least recently fetched is removed from that Envoy.
const DefaultDemandPerStream = 10000

// SetDemand makes c serve on demand with d, remembering at most perStream
// fetched resources per stream (DefaultDemandPerStream when <= 0). Call it
// before the first watch.
func (c *Delta) SetDemand(d Demand, perStream int) {
	if perStream <= 0 {
		perStream = DefaultDemandPerStream
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.demand, c.demandMax = d, perStream
	for name, e := range c.res {
		d.Set(name, e.bytes)
	}
}

// demandState is a stream's part of serving on demand: the resources it
// fetched (with the time of the last fetch), least recently fetched first
// out, and those pushed out since its last response.
type demandState struct {
	fetched *simplelru.LRU[string, time.Time]
	evicted []string
}

func (c *Delta) newDemandState() *demandState {
	ds := &demandState{}
	// NewLRU fails only for a size <= 0, which SetDemand rules out.
	ds.fetched, _ = simplelru.NewLRU[string, time.Time](c.demandMax, func(name string, _ time.Time) {
		ds.evicted = append(ds.evicted, name)
	})
	return ds
}

// demandWants reports whether a wildcard stream on demand follows name.
// Call under c.mu.
func (c *Delta) demandWants(st *subState, name string) bool {
	if c.demand.Resident(name) {
		return true
	}
	return st.demand != nil && st.demand.fetched.Contains(name)
}

// requested resolves the names req subscribes to ("*" aside): a resource
// name is taken as is, anything else as an alias (Demand.Resolve). It
// returns each resource to send with the names that asked for it, and the
// aliases that name nothing (answered as such, so Envoy resumes the
// request: 404). Every resource found counts as fetched by the stream.
// Call under c.mu.
func (c *Delta) requested(req *cachev3.DeltaRequest, st *subState) (forced map[string][]string, unresolved []string) {
	now := c.now()
	for _, alias := range req.GetResourceNamesSubscribe() {
		if alias == "*" {
			continue
		}
		name := alias
		if _, ok := c.res[alias]; !ok {
			n, ok := c.demand.Resolve(alias)
			if !ok || c.res[n] == nil {
				unresolved = append(unresolved, alias)
				continue
			}
			name = n
		}
		if forced == nil {
			forced = map[string][]string{}
		}
		forced[name] = append(forced[name], alias)
		if st.demand == nil {
			st.demand = c.newDemandState()
		}
		st.demand.fetched.Add(name, now)
	}
	return forced, unresolved
}

// takeEvicted returns (and forgets) the names pushed out of the stream's
// fetched resources since its last response. Call under c.mu.
func (st *subState) takeEvicted() []string {
	if st.demand == nil || len(st.demand.evicted) == 0 {
		return nil
	}
	out := st.demand.evicted
	st.demand.evicted = nil
	return out
}

// Recheck tells c that names may have changed residency (Demand.Resident)
// and, when cutoff is not zero, forgets every stream's fetched resources
// last fetched before cutoff that are not resident: each stream is then
// sent what it now lacks and the removal of what it no longer follows.
// Responses go out after the lock is released.
func (c *Delta) Recheck(names []string, cutoff time.Time) {
	fired := c.recheck(names, cutoff)
	for _, f := range fired {
		f.w.send(f.resp)
	}
}

func (c *Delta) recheck(names []string, cutoff time.Time) []firedWatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.demand == nil {
		return nil
	}
	changed := make(map[string]bool, len(names))
	for _, n := range names {
		changed[n] = true
	}
	if !cutoff.IsZero() {
		for _, st := range c.subs {
			if st.demand == nil {
				continue
			}
			for _, n := range st.demand.fetched.Keys() {
				if at, _ := st.demand.fetched.Peek(n); at.Before(cutoff) && !c.demand.Resident(n) {
					st.demand.fetched.Remove(n)
				}
			}
			for _, n := range st.takeEvicted() {
				changed[n] = true
			}
		}
	}
	if len(changed) == 0 {
		return nil
	}
	c.seq++
	if len(c.idle) > 0 {
		c.forgetIdle()
	}
	for n := range changed {
		c.record(n)
	}
	var fired []firedWatch
	for id, w := range c.watches {
		if resp := c.respond(w, changed); resp != nil {
			delete(c.watches, id)
			fired = append(fired, firedWatch{w: w, resp: resp})
		}
	}
	return fired
}

// DemandCounts returns, per stream on demand, how many resources it
// fetched and the cache still sends it (for status and tests).
func (c *Delta) DemandCounts() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for _, st := range c.subs {
		if st.demand != nil {
			out = append(out, st.demand.fetched.Len())
		}
	}
	return out
}
