package xds

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// seqKey is a reserved entry in the returned-resources map of each delta
// subscription: the cache sequence number the map is up to date with.
// No resource can have this name (resource names are printable).
const seqKey = "\x00thaw-seq"

// changeLogSize bounds the change log; a subscription older than the log
// falls back to a full comparison.
const changeLogSize = 1 << 16

// deltaCache serves one resource type: thaw uses it for
// ClusterLoadAssignments, clusters and virtual hosts (VHDS). It keeps
// each resource as its deterministic encoding and version, computed once
// by the server; go-control-plane's LinearCache kept, besides the
// resource, its own encoding, version and two closures (~0.3 KiB more per
// resource). And LinearCache compares every subscribed resource on every
// response and on every re-armed watch (after each ACK), which at 10,000
// revisions cost ~9 ms of CPU per flip per Envoy, and as much per
// revision added or removed for the wildcard cluster and virtual host
// subscriptions. This cache keeps a log of changed names
// and remembers, inside each delta subscription's returned-resources map
// (seqKey), how far that subscription has seen: a flip costs O(changed).
// New subscriptions, subscription changes and reconnects (Envoy's
// initial_resource_versions) take the full comparison. State-of-the-world
// watches are served by an inner LinearCache holding the same resources,
// created at the first such watch: thaw's own Envoys use delta xDS only,
// and the inner cache costs ~0.3 KiB per resource (30 MiB at 100,000
// revisions) for nothing then.
type deltaCache struct {
	typeURL string

	mu sync.Mutex
	// sotw is nil until the first state-of-the-world watch; then every
	// update goes to it too, under mu.
	sotw *cachev3.LinearCache
	res  map[string]*deltaEntry
	seq  uint64
	// log is a ring buffer of at most logSize entries, grown as changes
	// come (a preallocated log cost 1.5 MB per cache and type).
	log     []logEntry
	logSize int
	logLen  int // entries in use
	logHead int // index of the oldest entry
	// oldest is the lowest sequence number whose changes are all still
	// in the log.
	oldest  uint64
	watchID uint64
	watches map[uint64]*deltaWatch
}

type deltaEntry struct {
	name string
	// msg is the resource itself, for the state-of-the-world cache; nil
	// for a resource the server keeps as encoding only (encodedResource),
	// decoded from bytes when a state-of-the-world watch needs it.
	msg     types.Resource
	bytes   []byte // deterministic encoding
	version string // HashResource(bytes), as go-control-plane's delta versions
}

type logEntry struct {
	seq  uint64
	name string
}

type deltaWatch struct {
	req   *cachev3.DeltaRequest
	sub   cachev3.Subscription
	known map[string]string
	ch    chan cachev3.DeltaResponse
}

var _ cachev3.Cache = (*deltaCache)(nil)

// newDeltaCache returns an empty cache of typeURL resources whose change
// log holds logSize entries (changeLogSize in production).
func newDeltaCache(typeURL string, logSize int) *deltaCache {
	return &deltaCache{
		typeURL: typeURL,
		res:     map[string]*deltaEntry{},
		logSize: logSize,
		oldest:  1,
		watches: map[uint64]*deltaWatch{},
	}
}

// update sets and deletes resources; versions are the caller's hashes of
// the deterministic encodings in encoded. A nil resource in upd is kept as
// its encoding only.
func (c *deltaCache) update(upd map[string]types.Resource, encoded map[string][]byte, versions map[string]string, del []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sotw != nil {
		msgs, err := c.messages(upd, encoded)
		if err != nil {
			return err
		}
		if err := c.sotw.UpdateResources(msgs, del); err != nil {
			return err
		}
	}
	c.seq++
	changed := make(map[string]bool, len(upd)+len(del))
	for name := range upd {
		c.res[name] = &deltaEntry{name: name, msg: upd[name], bytes: encoded[name], version: versions[name]}
		c.record(name)
		changed[name] = true
	}
	for _, name := range del {
		delete(c.res, name)
		c.record(name)
		changed[name] = true
	}
	for id, w := range c.watches {
		if resp := c.respond(w, changed); resp != nil {
			delete(c.watches, id)
			w.ch <- resp
		}
	}
	return nil
}

// record appends a change to the ring buffer, dropping the oldest entry
// (and raising oldest) when full. Call under c.mu.
func (c *deltaCache) record(name string) {
	if len(c.log) < c.logSize { // still growing: nothing dropped, logHead 0
		c.log = append(c.log, logEntry{seq: c.seq, name: name})
		c.logLen++
		return
	}
	if c.logLen == len(c.log) {
		dropped := c.log[c.logHead]
		c.logHead = (c.logHead + 1) % len(c.log)
		c.logLen--
		c.oldest = dropped.seq + 1
	}
	c.log[(c.logHead+c.logLen)%len(c.log)] = logEntry{seq: c.seq, name: name}
	c.logLen++
}

// view calls f with the resources held, by name, under the cache's lock:
// f must neither keep nor change the map, nor call the cache. (The server
// compares a translation with them without copying 10,000 entries.)
func (c *deltaCache) view(f func(held map[string]*deltaEntry)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c.res)
}

// versions returns the version of every resource held, by name (a new
// map): the server's record of what it applied to this type.
func (c *deltaCache) versions() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(c.res))
	for name, e := range c.res {
		out[name] = e.version
	}
	return out
}

// heldOf returns those of names held, by name (a new map; nil for those
// held as encodings only).
func (c *deltaCache) heldOf(names []string) map[string]types.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]types.Resource, len(names))
	for _, name := range names {
		if e := c.res[name]; e != nil {
			out[name] = e.msg
		}
	}
	return out
}

// versionsOf returns the versions of those of names held (a new map).
func (c *deltaCache) versionsOf(names []string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(names))
	for _, name := range names {
		if e := c.res[name]; e != nil {
			out[name] = e.version
		}
	}
	return out
}

// held returns every resource held, by name (a new map; nil for
// those held as encodings only).
func (c *deltaCache) held() map[string]types.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]types.Resource, len(c.res))
	for name, e := range c.res {
		out[name] = e.msg
	}
	return out
}

// changedSince returns the names changed after seq, or ok false when the
// log no longer reaches back that far. Call under c.mu.
func (c *deltaCache) changedSince(seq uint64) (map[string]bool, bool) {
	if seq+1 < c.oldest {
		return nil, false
	}
	out := map[string]bool{}
	for i := c.logLen - 1; i >= 0; i-- {
		e := c.log[(c.logHead+i)%len(c.log)]
		if e.seq <= seq {
			break
		}
		out[e.name] = true
	}
	return out, true
}

// respond builds a response for w covering the names in candidates (nil:
// every subscribed or known name), or returns nil when the client is up to
// date. It records the new state in w.known. Call under c.mu.
func (c *deltaCache) respond(w *deltaWatch, candidates map[string]bool) *deltaResponse {
	wildcard := w.sub.IsWildcard()
	subscribed := w.sub.SubscribedResources()
	wants := func(name string) bool {
		if wildcard {
			return true
		}
		_, ok := subscribed[name]
		return ok
	}
	var upd []*deltaEntry
	var removed []string
	check := func(name string) {
		if name == seqKey {
			return
		}
		e, exists := c.res[name]
		have, known := w.known[name]
		switch {
		case exists && wants(name) && (!known || have != e.version):
			upd = append(upd, e)
		case !exists && known:
			removed = append(removed, name)
		}
	}
	if candidates == nil {
		if wildcard {
			for name := range c.res {
				check(name)
			}
		} else {
			for name := range subscribed {
				check(name)
			}
		}
		for name := range w.known {
			if _, exists := c.res[name]; !exists {
				check(name)
			}
		}
	} else {
		for name := range candidates {
			check(name)
		}
	}
	// The first wildcard request must be answered even when empty: Envoy
	// waits for it to finish initialising.
	firstWildcard := wildcard && w.req.GetResponseNonce() == ""
	if len(upd) == 0 && len(removed) == 0 && !firstWildcard {
		w.known[seqKey] = strconv.FormatUint(c.seq, 10)
		return nil
	}
	// The server hands this same map back as the subscription's returned
	// resources; updating it in place avoids copying 10,000 entries per
	// response. Safe: the server only touches it between watches.
	for _, e := range upd {
		w.known[e.name] = e.version
	}
	for _, name := range removed {
		delete(w.known, name)
	}
	w.known[seqKey] = strconv.FormatUint(c.seq, 10)
	return &deltaResponse{typeURL: c.typeURL, req: w.req, resources: upd, removed: removed, known: w.known, version: strconv.FormatUint(c.seq, 10)}
}

// allMessages returns every current resource as a message (a new map;
// resources kept as encodings decoded). c.mu must be held.
func (c *deltaCache) allMessages() (map[string]types.Resource, error) {
	all := make(map[string]types.Resource, len(c.res))
	enc := map[string][]byte{}
	for name, e := range c.res {
		all[name] = e.msg
		if e.msg == nil {
			enc[name] = e.bytes
		}
	}
	return c.messages(all, enc)
}

// CreateWatch serves state-of-the-world xDS from the inner LinearCache,
// which it creates, holding every current resource, on the first call.
func (c *deltaCache) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, ch chan cachev3.Response) (func(), error) {
	c.mu.Lock()
	if c.sotw == nil {
		all, err := c.allMessages()
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		c.sotw = cachev3.NewLinearCache(c.typeURL, cachev3.WithInitialResources(all))
	}
	sotw := c.sotw
	c.mu.Unlock()
	return sotw.CreateWatch(req, sub, ch)
}

// messages returns upd with its nil resources decoded from encoded: the
// state-of-the-world cache needs messages.
func (c *deltaCache) messages(upd map[string]types.Resource, encoded map[string][]byte) (map[string]types.Resource, error) {
	var out map[string]types.Resource
	for name, r := range upd {
		if r != nil {
			continue
		}
		if out == nil {
			out = maps.Clone(upd)
		}
		m, err := decode(c.typeURL, encoded[name])
		if err != nil {
			return nil, err
		}
		out[name] = m
	}
	if out == nil {
		return upd, nil
	}
	return out, nil
}

// CreateDeltaWatch answers at once when the client lacks something, else
// parks the watch until update changes a name it follows.
func (c *deltaCache) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	if req.GetTypeUrl() != c.typeURL {
		return nil, errors.New("delta cache " + c.typeURL + ": wrong type " + req.GetTypeUrl())
	}
	known := sub.ReturnedResources()
	if known == nil {
		return nil, errors.New("delta cache: subscription without returned-resources map")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &deltaWatch{req: req, sub: sub, known: known, ch: ch}
	var candidates map[string]bool
	subChanged := len(req.GetResourceNamesSubscribe()) > 0 || len(req.GetResourceNamesUnsubscribe()) > 0 ||
		req.GetResponseNonce() == ""
	if s, ok := known[seqKey]; ok && !subChanged {
		if seq, err := strconv.ParseUint(s, 10, 64); err == nil {
			candidates, _ = c.changedSince(seq) // nil (full comparison) when too old
		}
	}
	if resp := c.respond(w, candidates); resp != nil {
		ch <- resp
		return nil, nil
	}
	c.watchID++
	id := c.watchID
	c.watches[id] = w
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watches, id)
	}, nil
}

// Fetch is not supported (REST).
func (c *deltaCache) Fetch(context.Context, *cachev3.Request) (cachev3.Response, error) {
	return nil, errors.New("delta cache: fetch is not supported")
}

// deltaResponse is a delta xDS response of one type.
type deltaResponse struct {
	typeURL   string
	req       *cachev3.DeltaRequest
	resources []*deltaEntry
	removed   []string
	known     map[string]string
	version   string

	once  sync.Once
	built *discoveryv3.DeltaDiscoveryResponse
}

var _ cachev3.DeltaResponse = (*deltaResponse)(nil)

func (r *deltaResponse) GetDeltaDiscoveryResponse() (*discoveryv3.DeltaDiscoveryResponse, error) {
	r.once.Do(func() {
		res := make([]*discoveryv3.Resource, len(r.resources))
		for i, e := range r.resources {
			res[i] = &discoveryv3.Resource{Name: e.name, Version: e.version,
				Resource: &anypb.Any{TypeUrl: r.typeURL, Value: e.bytes}}
		}
		r.built = &discoveryv3.DeltaDiscoveryResponse{Resources: res, RemovedResources: r.removed,
			TypeUrl: r.typeURL, SystemVersionInfo: r.version}
	})
	return r.built, nil
}

func (r *deltaResponse) GetDeltaRequest() *discoveryv3.DeltaDiscoveryRequest { return r.req }

func (r *deltaResponse) GetSystemVersion() (string, error) { return r.version, nil }

func (r *deltaResponse) GetResponseVersion() string { return r.version }

func (r *deltaResponse) GetNextVersionMap() map[string]string { return r.known }

func (r *deltaResponse) GetReturnedResources() map[string]string { return r.known }

func (r *deltaResponse) GetContext() context.Context { return context.Background() }
