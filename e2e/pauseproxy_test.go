//go:build e2e

package e2e

import (
	"net"
	"sync"
	"testing"
)

// pauseProxy is a TCP proxy on loopback that can hold every byte in both
// directions (Pause) and let them through again (Resume): it delays one
// Envoy's xDS traffic (and so its ACKs) without touching the Envoy.
type pauseProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
}

// startPauseProxy proxies a fresh loopback port to target until the test
// ends.
func startPauseProxy(t *testing.T, target string) *pauseProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pauseProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	var wg sync.WaitGroup
	var connsMu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			connsMu.Lock()
			conns = append(conns, c, u)
			connsMu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); p.pipe(u, c) }()
			go func() { defer wg.Done(); p.pipe(c, u) }()
		}
	}()
	t.Cleanup(func() {
		p.Resume()
		ln.Close()
		connsMu.Lock()
		for _, c := range conns {
			c.Close()
		}
		connsMu.Unlock()
		wg.Wait()
	})
	return p
}

// Addr is the proxy's "127.0.0.1:port".
func (p *pauseProxy) Addr() string { return p.ln.Addr().String() }

// Pause holds every byte read from now on until Resume.
func (p *pauseProxy) Pause() {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
}

// Resume lets held and new bytes through.
func (p *pauseProxy) Resume() {
	p.mu.Lock()
	p.paused = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// pipe copies src to dst, waiting out pauses before each write.
func (p *pauseProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.paused {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or closed: dst closes too
		}
	}
}
