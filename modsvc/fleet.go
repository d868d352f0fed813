package modsvc

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// MaxNodes bounds the Envoys (node ids) with a state stream open at once;
// a stream past it is refused (503), so a client cannot grow the fleet
// table without bound.
const MaxNodes = 10_000

// ErrTooManyNodes is returned by fleet.join past MaxNodes.
var ErrTooManyNodes = errors.New("modsvc: too many Envoys with a state stream")

// fleet is the set of nodes with an open state stream, which is how many
// Envoys share every backend's capacity (Slots) and each one's index
// (its rank among the sorted node ids). A node that reconnects before its
// old stream ended counts once. Used when Server.Envoys is nil.
//
// When an Envoy joins or leaves, every stream recomputes its shares
// (changed): for the moments in between, the Envoys that have not yet
// applied their new share may together exceed a backend's container
// concurrency (a join), or use less of it (a leave). A module whose stream
// ended but that still serves keeps its last share until it reconnects.
type fleet struct {
	mu     sync.Mutex
	open   map[string]int // open streams per node
	sorted []string
	ch     chan struct{}
}

// join records a stream of node; leave undoes it.
func (f *fleet) join(node string) (leave func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open == nil {
		f.open = map[string]int{}
	}
	if f.open[node] == 0 {
		if len(f.open) >= MaxNodes {
			return nil, fmt.Errorf("%w (%d)", ErrTooManyNodes, MaxNodes)
		}
		i, _ := slices.BinarySearch(f.sorted, node)
		f.sorted = slices.Insert(f.sorted, i, node)
		f.notifyLocked()
	}
	f.open[node]++
	var once sync.Once
	return func() { once.Do(func() { f.leave(node) }) }, nil
}

func (f *fleet) leave(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open[node]--; f.open[node] > 0 {
		return
	}
	delete(f.open, node)
	if i, ok := slices.BinarySearch(f.sorted, node); ok {
		f.sorted = slices.Delete(f.sorted, i, i+1)
	}
	f.notifyLocked()
}

// share returns how many Envoys have a stream open and node's index among
// them (1, 0 for a node not in the fleet).
func (f *fleet) share(node string) (n, index int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, ok := slices.BinarySearch(f.sorted, node)
	if !ok {
		return 1, 0
	}
	return len(f.sorted), i
}

// changed returns a channel closed at the next join or leave of a node.
func (f *fleet) changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch == nil {
		f.ch = make(chan struct{})
	}
	return f.ch
}

func (f *fleet) notifyLocked() {
	if f.ch != nil {
		close(f.ch)
		f.ch = nil
	}
}

// ConnectedNodes returns how many Envoys (node ids) have a state stream
// open on s (for the metric thaw_module_connected_nodes).
func (s *Server) ConnectedNodes() int {
	s.fleet.mu.Lock()
	defer s.fleet.mu.Unlock()
	return len(s.fleet.sorted)
}
