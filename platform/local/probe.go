package local

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

// newProbeClient returns the client of HTTP readiness probes: no
// keep-alive (a probe must not hold a connection the process would have to
// close on shutdown), no redirects followed (3xx counts as passing, as in
// Kubernetes), connections tracked in conns so that counting a process's
// connections leaves them out.
func newProbeClient(conns *probeConns) *http.Client {
	return &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil, DialContext: conns.dial},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// probe runs one readiness check against 127.0.0.1:port, bounded by
// pr.Timeout. It returns nil when it passes. With starting set, an HTTP
// probe is preceded by a plain TCP connect, which fails much more cheaply
// while the process does not listen yet.
func (p *Platform) probe(ctx context.Context, pr Probe, port int32, starting bool) error {
	ctx, cancel := context.WithTimeout(ctx, pr.Timeout)
	defer cancel()
	addr := net.JoinHostPort(loopback, strconv.Itoa(int(port)))
	if pr.HTTPPath == "" || starting {
		// Not tracked (probeConns): it closes at once, and a connection
		// the client closes first keeps its port in TIME_WAIT, which an
		// explicitly bound port must not share.
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		if err := c.Close(); err != nil || pr.HTTPPath == "" {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+pr.HTTPPath, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "thaw-probe")
	resp, err := p.probeClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("readiness probe %s: status %d", pr.HTTPPath, resp.StatusCode)
	}
	return nil
}
