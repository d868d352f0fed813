package local

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// probeConns tracks the TCP connections the platform's own readiness
// probes hold open to its instances, so that counting a process's
// connections (conns.go) leaves them out. Probes run every Period (50 ms
// is allowed) on every instance: a probe in flight at a scale-down made an
// idle process look as busy as one streaming a response, and the busy one
// could be stopped first (stopBefore breaks the tie by age).
//
// A connection is known by its two ports, the probe's client port and the
// instance's port, from before its handshake until closeSlack after it was
// closed, or longer while a count that started before it closed is under
// way (beginRead). Safe for concurrent use.
type probeConns struct {
	clock clock.PassiveClock

	mu     sync.Mutex
	nextID uint64
	conns  map[uint64]probeRec
	reads  map[uint64]time.Time // counts under way, by id: when they began
	// pruneAt is the size of conns at which add prunes next: twice what
	// the last prune left, so a probe costs amortized O(1), not a walk
	// over every record.
	pruneAt int
}

// closeSlack is how long a closed probe connection is still left out: the
// instance's side of a loopback connection leaves ESTABLISHED when the
// probe's FIN reaches it, which a loaded machine may deliver late.
const closeSlack = 100 * time.Millisecond

// probeRec is one tracked connection.
type probeRec struct {
	key    connPorts
	closed time.Time // zero while open
}

// connPorts is a loopback TCP connection's client (ephemeral) and server
// port.
type connPorts struct{ client, server uint16 }

func newProbeConns(clk clock.PassiveClock) *probeConns {
	return &probeConns{clock: clk, conns: map[uint64]probeRec{}, reads: map[uint64]time.Time{}}
}

// add tracks a connection and returns its id.
func (pc *probeConns) add(k connPorts) uint64 {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if len(pc.conns) >= pc.pruneAt {
		pc.pruneLocked()
	}
	pc.nextID++
	pc.conns[pc.nextID] = probeRec{key: k}
	return pc.nextID
}

// remove marks a connection closed; a later prune forgets it once no
// count can still need it.
func (pc *probeConns) remove(id uint64) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if r, ok := pc.conns[id]; ok {
		r.closed = pc.clock.Now()
		pc.conns[id] = r
	}
}

// beginRead starts a count; endRead(id) returns what to leave out of it.
func (pc *probeConns) beginRead() uint64 {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.nextID++
	pc.reads[pc.nextID] = pc.clock.Now()
	return pc.nextID
}

// endRead ends the count id began and returns, per connection, how many
// tracked connections were open at some time since it began (less
// closeSlack); nil when none, the usual case.
func (pc *probeConns) endRead(id uint64) map[connPorts]int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	since := pc.reads[id].Add(-closeSlack)
	delete(pc.reads, id)
	var out map[connPorts]int
	for _, r := range pc.conns {
		if r.closed.IsZero() || !r.closed.Before(since) {
			if out == nil {
				out = map[connPorts]int{}
			}
			out[r.key]++
		}
	}
	pc.pruneLocked()
	return out
}

// pruneLocked forgets the connections closed before every count under way
// began and before closeSlack ago. Call with mu held.
func (pc *probeConns) pruneLocked() {
	cutoff := pc.clock.Now()
	for _, t := range pc.reads {
		if t.Before(cutoff) {
			cutoff = t
		}
	}
	cutoff = cutoff.Add(-closeSlack)
	for id, r := range pc.conns {
		if !r.closed.IsZero() && r.closed.Before(cutoff) {
			delete(pc.conns, id)
		}
	}
	pc.pruneAt = 2*len(pc.conns) + 64
}

// dial is a net.Dialer DialContext that tracks the connection until it is
// closed. To an IPv4 address it binds the socket to 127.0.0.1 before
// connecting and tracks the connection from then on: the instance's side
// is established when the handshake ends, which on a loaded machine is
// well before the dial returns. Other addresses are dialled untracked.
// For HTTP probes only: they send Connection: close, so the instance
// closes first and keeps the TIME_WAIT; a bound port shares no port with
// a TIME_WAIT of its own side, and probes that closed first could run out
// of ports.
func (pc *probeConns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var (
		id      uint64
		tracked bool
	)
	d := net.Dialer{Control: func(network, address string, rc syscall.RawConn) error {
		if tracked || network != "tcp4" {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return nil
		}
		var bindErr error
		err = rc.Control(func(fd uintptr) {
			if bindErr = syscall.Bind(int(fd), &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); bindErr != nil {
				return
			}
			sa, err := syscall.Getsockname(int(fd))
			if err != nil {
				bindErr = err
				return
			}
			if in4, ok := sa.(*syscall.SockaddrInet4); ok {
				id = pc.add(connPorts{client: uint16(in4.Port), server: ap.Port()})
				tracked = true
			}
		})
		if err != nil {
			return err
		}
		if bindErr != nil {
			return fmt.Errorf("bind the probe's socket to %s: %w", loopback, bindErr)
		}
		return nil
	}}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		if tracked {
			pc.remove(id)
		}
		return nil, err
	}
	if !tracked {
		return c, nil
	}
	return &probeConn{Conn: c, pc: pc, id: id}, nil
}

// probeConn removes itself from its probeConns on its first Close.
type probeConn struct {
	net.Conn
	pc   *probeConns
	id   uint64
	once sync.Once
}

func (c *probeConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.pc.remove(c.id) })
	return err
}
