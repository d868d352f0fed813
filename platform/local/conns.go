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
// port port, per port asked for (ports absent from the tables count 0).
// Errors come from reading the tables; a table that does not exist is
// skipped.
func establishedConns(ports []int32) (map[int32]int, error) {
	want := make(map[int32]int, len(ports))
	for _, p := range ports {
		want[p] = 0
	}
	var errs []error
	for _, path := range procNetTCP {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		err = countEstablished(f, want)
		f.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
	}
	return want, errors.Join(errs...)
}

// countEstablished adds to counts[port] one per ESTABLISHED line of a
// /proc/net/tcp-format table r whose local port is a key of counts. Lines
// look like "  1: 0100007F:1F90 0100007F:C2D4 01 ...": slot, local
// address:port (hex), remote address:port, state (hex). The header line
// and malformed lines are skipped.
func countEstablished(r io.Reader, counts map[int32]int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), 64*1024)
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 4 || !bytes.Equal(f[3], []byte(tcpEstablished)) {
			continue
		}
		i := bytes.LastIndexByte(f[1], ':')
		if i < 0 {
			continue
		}
		port, err := strconv.ParseUint(string(f[1][i+1:]), 16, 16)
		if err != nil {
			continue
		}
		if _, ok := counts[int32(port)]; ok {
			counts[int32(port)]++
		}
	}
	return sc.Err()
}
