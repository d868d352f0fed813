package cache

import (
	"maps"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// Demand makes a Delta serve virtual hosts on demand (VHDS with Envoy's
// on_demand filter; xds/ondemand.Policy implements it): a wildcard stream
// is sent the resident resources and those it asked for, and a name a
// request subscribes to that is not a resource is an alias, resolved to
// one. The Delta calls it under its own lock: it must not call back.
type Demand interface {
	// Resident reports whether every wildcard stream is sent name.
	Resident(name string) bool
	// Resolve returns the resource an alias names, or ok false.
	Resolve(alias string) (name string, ok bool)
	// Set and Delete follow the cache's resources (encoded as sent);
	// old is the encoding name had (nil for Set of a new name), so that
	// the Demand need keep no copy of what it derives from it.
	Set(name string, old, encoded []byte)
	Delete(name string, old []byte)
	// Anchor is a name in the resources' namespace that names nothing:
	// a stream's first wildcard response, when it would carry nothing, is
	// sent it as an unknown alias. Envoy 1.40 ignores an empty first VHDS
	// response (its listener stays warming until initial_fetch_timeout,
	// 15 s); a body-less resource is an answer.
	Anchor() string
}

// DefaultAliasesPerStream bounds the aliases one stream asked for that
// the cache remembers, to answer again when what they resolve to changes
// (a host added to thaw after an Envoy asked for it, a host moving to
// another virtual host). The resources they fetched are kept whatever
// this bound: see demandState.
const DefaultAliasesPerStream = 10000

// SetDemand makes c serve on demand with d, remembering at most
// aliasesPerStream aliases per stream (DefaultAliasesPerStream when <= 0).
// Call it before the first watch.
func (c *Delta) SetDemand(d Demand, aliasesPerStream int) {
	if aliasesPerStream <= 0 {
		aliasesPerStream = DefaultAliasesPerStream
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.demand, c.demandMax = d, aliasesPerStream
	for name, e := range c.res {
		d.Set(name, nil, e.encoding())
	}
}

// demandState is a stream's part of serving on demand.
//
// Envoy 1.40 keeps every alias it asked for subscribed for the life of
// the stream and answers a later request for the same host itself, from
// the virtual hosts it holds (runtime guard
// envoy.reloadable_features.vhds_answered_alias_cache; a removal of the
// alias does not reset it, measured). So a resource a stream fetched is
// sent to it for the life of the stream (fetched: at most one entry per
// resource, bounded by the cache, not by clients), and when an alias
// comes to name another resource, or one where it named none, the stream
// is sent it (aliases, bounded; pushes).
type demandState struct {
	fetched map[string]bool
	// aliases: alias → the resource it resolved to ("" for none), the
	// most recently asked kept.
	aliases *simplelru.LRU[string, string]
	// pushes: resource → aliases, and unresolved aliases, to answer in
	// the stream's next response (cleared by sent).
	pushes     map[string][]string
	unresolved map[string]bool
}

func (c *Delta) newDemandState() *demandState {
	// NewLRU fails only for a size <= 0, which SetDemand rules out.
	a, _ := simplelru.NewLRU[string, string](c.demandMax, nil)
	return &demandState{fetched: map[string]bool{}, aliases: a, pushes: map[string][]string{}, unresolved: map[string]bool{}}
}

// demandWants reports whether a wildcard stream on demand follows name.
// Call under c.mu.
func (c *Delta) demandWants(st *subState, name string) bool {
	if c.demand.Resident(name) {
		return true
	}
	return st.demand != nil && st.demand.fetched[name]
}

// requested resolves the names req subscribes to ("*" aside) into the
// stream's pushes: a resource name is taken as is, anything else as an
// alias (Demand.Resolve). Each is answered in the next response, even
// when the stream holds the resource already (a request on another
// worker may have asked before the first answer arrived). Call under
// c.mu.
func (c *Delta) requested(req *cachev3.DeltaRequest, st *subState) {
	for _, alias := range req.GetResourceNamesSubscribe() {
		if alias == "*" {
			continue
		}
		if st.demand == nil {
			st.demand = c.newDemandState()
		}
		name := alias
		if _, ok := c.res[alias]; !ok {
			if n, ok := c.demand.Resolve(alias); ok && c.res[n] != nil {
				name = n
			} else {
				name = ""
			}
			st.demand.aliases.Add(alias, name)
		}
		st.demand.push(alias, name)
	}
}

// push records that alias (resolving to name, "" for none) is to be
// answered.
func (ds *demandState) push(alias, name string) {
	if name == "" {
		ds.unresolved[alias] = true
		return
	}
	ds.fetched[name] = true
	ds.pushes[name] = append(ds.pushes[name], alias)
}

// reresolve resolves again every alias the streams remember, after the
// resources changed: an alias that now names another resource (or one,
// or none) is answered again. It returns whether any stream has
// something to be sent. Call under c.mu.
func (c *Delta) reresolve() bool {
	any := false
	for _, st := range c.subs {
		ds := st.demand
		if ds == nil {
			continue
		}
		for _, alias := range ds.aliases.Keys() {
			old, _ := ds.aliases.Peek(alias)
			n, ok := c.demand.Resolve(alias)
			if !ok || c.res[n] == nil {
				n = ""
			}
			if n == old {
				continue
			}
			ds.aliases.Add(alias, n)
			ds.push(alias, n)
			any = true
		}
	}
	return any
}

// pending returns what the stream is to be answered beyond the change
// comparison: resources with the aliases that asked for them, and aliases
// naming nothing. Call under c.mu.
func (st *subState) pending() (map[string][]string, []string) {
	if st.demand == nil || (len(st.demand.pushes) == 0 && len(st.demand.unresolved) == 0) {
		return nil, nil
	}
	var unres []string
	for a := range st.demand.unresolved {
		unres = append(unres, a)
	}
	return maps.Clone(st.demand.pushes), unres
}

// answered clears the pushes a response sent. Call under c.mu.
func (st *subState) answered(r *deltaResponse) {
	if st.demand == nil {
		return
	}
	for name := range r.aliases {
		delete(st.demand.pushes, name)
	}
	for _, a := range r.unresolved {
		delete(st.demand.unresolved, a)
	}
}

// Recheck tells c that names may have changed residency
// (Demand.Resident): each stream is sent what it now lacks and the
// removal of what it no longer follows. Responses go out after the lock
// is released.
func (c *Delta) Recheck(names []string) {
	fired := c.recheck(names)
	for _, f := range fired {
		f.w.send(f.resp)
	}
}

func (c *Delta) recheck(names []string) []firedWatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.demand == nil || len(names) == 0 {
		return nil
	}
	changed := make(map[string]bool, len(names))
	c.seq++
	if len(c.idle) > 0 {
		c.forgetIdle()
	}
	for _, n := range names {
		changed[n] = true
		c.record(n)
	}
	return c.fire(changed)
}

// fire answers the parked watches that changed (names) concerns, or that
// have pushes pending. Call under c.mu.
func (c *Delta) fire(changed map[string]bool) []firedWatch {
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
// fetched (for tests and status).
func (c *Delta) DemandCounts() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for _, st := range c.subs {
		if st.demand != nil {
			out = append(out, len(st.demand.fetched))
		}
	}
	return out
}
