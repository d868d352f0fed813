package statsink

import (
	"errors"
	"fmt"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/thaw-dev/thaw/revision"
)

// Defaults of Limits. Every bound refuses or drops what is beyond it and
// counts it in thaw_statsink_bad_input_total (reasons too_many_nodes,
// duplicate_node, too_many_clusters, unknown_revision).
const (
	// DefaultMaxNodes is how many Envoy node ids the sink keeps state for
	// (connected, or disconnected and not yet expired). An Envoy fleet of a
	// thousand proxies per thaw is far beyond what one control plane serves.
	DefaultMaxNodes = 1024
	// DefaultMaxClustersPerNode is how many revision clusters one node's
	// table holds. Only revisions the registry knows get an entry (Known),
	// so this is a second line behind Known: it stays above the 100k
	// revisions thaw is sized for.
	DefaultMaxClustersPerNode = 1 << 18
)

// Limits bound the state the sink keeps for what clients send. Zero fields
// take the defaults.
type Limits struct {
	// MaxNodes bounds the node ids with state. A new node id beyond it
	// first evicts the least recently disconnected idle node (its state
	// would expire anyway); with no idle node the stream is refused with
	// ResourceExhausted.
	MaxNodes int
	// MaxClustersPerNode bounds the cluster entries of one node; metrics of
	// further clusters are ignored.
	MaxClustersPerNode int
	// Known reports whether a revision exists (the registry's current
	// snapshot). Metrics of revision clusters it does not know are dropped
	// before any state is created for them. Nil: every well-formed revision
	// cluster name is accepted (tests, benchmarks).
	Known func(revision.Key) bool
}

func (l Limits) withDefaults() Limits {
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	if l.MaxClustersPerNode <= 0 {
		l.MaxClustersPerNode = DefaultMaxClustersPerNode
	}
	return l
}

var (
	errTooManyNodes  = errors.New("statsink: too many Envoy nodes")
	errDuplicateNode = errors.New("statsink: the node id already has a stats stream")
)

// reasonOf maps an admit error to its bad-input reason.
func reasonOf(err error) reason {
	if errors.Is(err, errDuplicateNode) {
		return reasonDuplicateNode
	}
	return reasonTooManyNodes
}

// refusal is the gRPC status error of a refused stream; it wraps err so
// reasonOf still recognises it.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// GRPCStatus makes the refusal a ResourceExhausted status for the client.
func (r refusal) GRPCStatus() *status.Status {
	return status.New(codes.ResourceExhausted, r.err.Error())
}

// admit decides whether a new stream of node id may attach to n (nil: a
// new node). A node has one stream at a time: a second one is refused, so
// two Envoys configured with one node id never feed one set of counter
// bases (their deltas would mix two Envoys' counters). Call with srv.mu
// held.
func (srv *Server) admit(id string, n *node) error {
	if n != nil {
		if n.streams > 0 {
			return refusal{fmt.Errorf("%w: %q (give every Envoy its own node id; a reconnect is admitted once the old stream ended)", errDuplicateNode, id)}
		}
		return nil
	}
	if len(srv.nodes) < srv.lim.MaxNodes {
		return nil
	}
	// Full: make room by forgetting the idle node that left first, the one
	// whose state is least likely to be needed again. Connected nodes are
	// never evicted: that would let a newcomer push out a working Envoy.
	if _, _, ok := srv.idle.RemoveOldest(); ok {
		return nil
	}
	return refusal{fmt.Errorf("%w: %d connected (limit %d)", errTooManyNodes, len(srv.nodes), srv.lim.MaxNodes)}
}

// newIdleNodes returns the LRU of disconnected nodes. Least recently used
// is the right eviction order here: an idle node's state only serves a
// reconnect within NodeExpiry, and the node that left longest ago is the
// least likely to come back in time. Evicting it records its zero samples,
// exactly as its expiry would. Every call on it happens with srv.mu held,
// so the eviction callback runs under srv.mu too.
func newIdleNodes(srv *Server) *simplelru.LRU[string, *node] {
	l, err := simplelru.NewLRU(srv.lim.MaxNodes, func(id string, n *node) {
		if n.streams == 0 && srv.nodes[id] == n {
			srv.forgetLocked(n)
		}
	})
	if err != nil {
		panic(fmt.Sprintf("statsink: idle node LRU: %v", err)) // MaxNodes > 0 by withDefaults
	}
	return l
}

// known reports whether key is a revision the sink should keep state for.
func (srv *Server) known(key revision.Key) bool {
	return srv.lim.Known == nil || srv.lim.Known(key)
}
