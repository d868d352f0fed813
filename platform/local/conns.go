package local

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Connections are how the platform tells whether a process scaled away
// still serves something: it counts the established TCP connections whose
// local port is the process's listening port, from /proc/net/tcp and
// /proc/net/tcp6.
//
// Why connections: every request Envoy (or anything else) sends to the
// process rides on one, and an open WebSocket, a gRPC stream or a
// streaming response keeps its connection, so it counts for its whole
// life. Envoy's per-host rq_active (admin /clusters) is gone as soon as
// the host left the revision's cluster, and the activator only knows the
// requests it released itself. Once Envoy applied a ClusterLoadAssignment
// without the backend it closes its idle pooled connections to it and its
// busy ones when their request ends (measured with Envoy 1.40: a drained
// idle backend stopped 0.14 s after the scale-down).
//
// The platform's own HTTP readiness probes are left out (probeConns): a
// probe in flight must not make an idle process look busy.
//
// One exception: the activator's original-destination cluster keeps idle
// connections to a backend after its last request. With a LoadSource the
// platform subtracts the connections Envoy reports holding to the backend
// when Envoy reports no request in flight to it (see busyConns). Without
// one, those connections, and idle keep-alive connections of clients that
// reach the process directly, hold the drain until the drain timeout: a
// later stop, never a cut request.

// tcpEstablished is the state code of ESTABLISHED in /proc/net/tcp.
const tcpEstablished = "01"

// procNetTCP are the tables read; a missing one (IPv6 disabled) is skipped.
var procNetTCP = []string{"/proc/net/tcp", "/proc/net/tcp6"}

// establishedConns returns how many established TCP connections have local
// port port, per port asked for (ports absent from the tables count 0),
// leaving out the connections of probes (the platform's own readiness
// probes; nil leaves out none): every probe connection open at some time
// during the read. Errors come from reading the tables; a
// table that does not exist is skipped.
func establishedConns(ports []int32, probes *probeConns) (map[int32]int, error) {
	want := make(map[int32]int, len(ports))
	for _, p := range ports {
		want[p] = 0
	}
	var (
		errs  []error
		conns []connPorts
		read  uint64
	)
	if probes != nil {
		read = probes.beginRead()
	}
	for _, path := range procNetTCP {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		conns, err = appendEstablished(conns, f, want)
		f.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
	}
	var exclude map[connPorts]int
	if probes != nil {
		exclude = probes.endRead(read)
	}
	countConns(want, conns, exclude)
	return want, errors.Join(errs...)
}

// countConns adds to counts one per connection of conns by its server
// port, leaving out those in exclude (as many times as exclude counts).
func countConns(counts map[int32]int, conns []connPorts, exclude map[connPorts]int) {
	for _, c := range conns {
		if exclude[c] > 0 {
			exclude[c]--
			continue
		}
		counts[int32(c.server)]++
	}
}

// appendEstablished appends to conns the client and server port of every
// ESTABLISHED line of a /proc/net/tcp-format table r whose local port is a
// key of ports. Lines look like "  1: 0100007F:1F90 0100007F:C2D4 01 ...":
// slot, local address:port (hex), remote address:port, state (hex). The
// header line and malformed lines are skipped.
func appendEstablished(conns []connPorts, r io.Reader, ports map[int32]int) ([]connPorts, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), 64*1024)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 4 || !bytes.Equal(f[3], []byte(tcpEstablished)) {
			continue
		}
		local, ok := hexPort(f[1])
		if !ok {
			continue
		}
		if _, ok := ports[int32(local)]; !ok {
			continue
		}
		remote, ok := hexPort(f[2])
		if !ok {
			continue
		}
		conns = append(conns, connPorts{client: remote, server: local})
	}
	return conns, sc.Err()
}

// hexPort returns the port of a table's address:port field (hex).
func hexPort(field []byte) (uint16, bool) {
	i := bytes.LastIndexByte(field, ':')
	if i < 0 {
		return 0, false
	}
	port, err := strconv.ParseUint(string(field[i+1:]), 16, 16)
	return uint16(port), err == nil
}
