package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pollInterval is the pause between readiness checks of the Wait helpers.
const pollInterval = 100 * time.Millisecond

// ErrExited is returned by the Wait helpers when the process being waited
// for exits first.
var ErrExited = errors.New("process exited")

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// port is released before returning, so another process can take it in
// between; callers that start a server on it treat a bind failure as fatal.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// PickFreePort is FreePort for callers without a test (bench/).
func PickFreePort() (int, error) { return freeLoopbackPort() }

// freeLoopbackPort is FreePort for callers without a test. It picks from
// below the kernel's ephemeral range (ports it never hands to client
// sockets or ":0" listeners), so a port chosen here and bound later by
// Envoy or a backend cannot be taken meanwhile by some process's
// outgoing connection (a CI flake: Envoy's listener "Address already in
// use"). It falls back to a kernel-chosen port when that range is not
// known or has none free.
func freeLoopbackPort() (int, error) {
	if lo := ephemeralLow(); lo > firstPickedPort+1000 {
		for range 50 {
			port := firstPickedPort + rand.IntN(lo-firstPickedPort)
			if ln, err := net.Listen("tcp", LoopbackAddr(port)); err == nil {
				_ = ln.Close()
				return port, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// firstPickedPort is the lowest port freeLoopbackPort picks.
const firstPickedPort = 20000

// ephemeralLow returns the first port of the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), or 0 when unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}

// LoopbackAddr returns "127.0.0.1:<port>".
func LoopbackAddr(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// WaitForPort polls until a TCP connection to addr succeeds, ctx ends
// (returns ctx's error wrapped), or p (if not nil) exits (returns ErrExited
// wrapped).
func WaitForPort(ctx context.Context, p *Process, addr string) error {
	return poll(ctx, p, func(ctx context.Context) error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// WaitForURL polls GET url with client until the response status is 200,
// ctx ends, or p (if not nil) exits. Errors are wrapped as in WaitForPort;
// the last failure is included in the message.
func WaitForURL(ctx context.Context, p *Process, client *http.Client, url string) error {
	return poll(ctx, p, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		}
		return nil
	})
}

// poll runs check every pollInterval until it returns nil; it gives up when
// ctx ends or p exits.
func poll(ctx context.Context, p *Process, check func(context.Context) error) error {
	var exited <-chan struct{}
	if p != nil {
		exited = p.Exited()
	}
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last := check(attemptCtx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-exited:
			return fmt.Errorf("%s: %w (%v)", p.Name(), ErrExited, p.ExitErr())
		case <-ticker.C:
		}
	}
}
