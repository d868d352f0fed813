package ack

import (
	"cmp"
	"slices"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/xds/encoded"
)

// typeOrder is the order status output lists NACKs in: the server's
// make-before-break order.
var typeOrder = []string{resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.ListenerType,
	resourcev3.RouteType, resourcev3.VirtualHostType}

// NodeStatus is one connected xDS stream, normally one Envoy.
type NodeStatus struct {
	// ID and Cluster are Envoy's node.id and node.cluster ("" until its
	// first request).
	ID      string
	Cluster string
	// Delta is true for incremental (delta) ADS streams.
	Delta       bool
	StreamID    int64
	ConnectedAt time.Time
	// Acked counts the resources the node has ACKed, by short type name
	// ("listeners", "routes", "clusters", "endpoints").
	Acked map[string]int
	// Pending is the number of responses sent and not yet ACKed or NACKed.
	Pending int
	// NACKs are the node's recent rejections whose resources have not been
	// ACKed since, oldest first per type.
	NACKs []NACK
}

// Nodes returns the connected streams sorted by node id, then stream.
func (t *Tracker) Nodes() []NodeStatus {
	t.mu.RLock()
	out := make([]NodeStatus, 0, len(t.streams))
	for _, st := range t.streams {
		ns := NodeStatus{ID: st.nodeID, Cluster: st.cluster, Delta: st.key.Delta, StreamID: st.key.ID,
			ConnectedAt: st.connectedAt, Acked: map[string]int{}, Pending: len(st.sent)}
		for typ, a := range st.acked {
			ns.Acked[encoded.ShortType(typ)] = len(a)
		}
		ns.NACKs = st.nackList(nil)
		out = append(out, ns)
	}
	t.mu.RUnlock()
	slices.SortFunc(out, func(a, b NodeStatus) int {
		if c := cmp.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		if a.Delta != b.Delta {
			if a.Delta {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.StreamID, b.StreamID)
	})
	return out
}

// nackList copies the stream's NACKs, keeping those that name a resource
// for which keep returns true (all when keep is nil). Call under t.mu.
func (st *streamState) nackList(keep func(typeURL, name string) bool) []NACK {
	var out []NACK
	for _, typ := range typeOrder {
		for _, nk := range st.nacks[typ] {
			if keep != nil && !slices.ContainsFunc(nk.Resources, func(n string) bool { return keep(typ, n) }) {
				continue
			}
			c := *nk
			c.Resources = slices.Clone(nk.Resources)
			out = append(out, c)
		}
	}
	return out
}

// NACKs returns the recent NACKs of every stream that name a resource for
// which keep(typeURL, name) is true (all when keep is nil), sorted by
// time, then node id.
func (t *Tracker) NACKs(keep func(typeURL, name string) bool) []NACK {
	t.mu.RLock()
	var out []NACK
	for _, s := range t.streams {
		out = append(out, s.nackList(keep)...)
	}
	t.mu.RUnlock()
	slices.SortFunc(out, func(a, b NACK) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Node, b.Node)
	})
	return out
}
