package local

import (
	"context"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestCountEstablished(t *testing.T) {
	// Port 0x1F90 = 8080, 0x1F91 = 8081; state 01 ESTABLISHED, 0A LISTEN,
	// 08 CLOSE_WAIT. The client side of a loopback connection (local port
	// ephemeral, remote 8080) must not count.
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:1F90 0100007F:C351 08 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 20 4 30 10 -1
   4: 0100007F:1F91 0100007F:C352 01 00000000:00000000 00:00000000 00000000     0        0 5 1 0000000000000000 20 4 30 10 -1
   5: 00000000000000000000FFFF0100007F:1F90 00000000000000000000FFFF0100007F:C353 01 00000000:00000000 00:00000000 00000000 0 0 6 1
   6: garbage
`
	count := func(ports []int32, exclude map[connPorts]int) map[int32]int {
		t.Helper()
		counts := map[int32]int{}
		for _, p := range ports {
			counts[p] = 0
		}
		conns, err := appendEstablished(nil, strings.NewReader(table), counts)
		if err != nil {
			t.Fatal(err)
		}
		countConns(counts, conns, exclude)
		return counts
	}
	if got, want := count([]int32{8080, 8082}, nil), map[int32]int{8080: 2, 8082: 0}; !maps.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}

	// A probe's connection (client port 0xC350 to 8080) is left out; one
	// with the same client port to another server port is not.
	exclude := map[connPorts]int{{client: 0xC350, server: 8080}: 1, {client: 0xC350, server: 8081}: 1}
	if got, want := count([]int32{8080, 8081}, exclude), map[int32]int{8080: 1, 8081: 1}; !maps.Equal(got, want) {
		t.Errorf("counts with a probe excluded %v, want %v", got, want)
	}
}

// TestProbeConnsLeftOut: connections the probe client dials are not
// counted while open and leave the tracker when closed; other connections
// to the same port still count.
func TestProbeConnsLeftOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	clk := clocktesting.NewFakeClock(time.Now())
	pc := newProbeConns(clk)
	count := func() int {
		t.Helper()
		m, err := establishedConns([]int32{port}, pc)
		if err != nil {
			t.Fatal(err)
		}
		return m[port]
	}
	dial := func(probe bool) (net.Conn, net.Conn) {
		t.Helper()
		var c net.Conn
		var err error
		if probe {
			c, err = pc.dial(context.Background(), "tcp", ln.Addr().String())
		} else {
			c, err = net.Dial("tcp", ln.Addr().String())
		}
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c, s
	}
	pcli, psrv := dial(true)
	defer psrv.Close()
	if n := count(); n != 0 {
		t.Errorf("%d connections with only a probe's open, want 0", n)
	}
	cli, srv := dial(false)
	defer srv.Close()
	defer cli.Close()
	if n := count(); n != 1 {
		t.Errorf("%d connections with a probe's and another open, want 1", n)
	}
	// A count under way when the probe closes still leaves it out.
	read := pc.beginRead()
	if err := pcli.Close(); err != nil {
		t.Fatal(err)
	}
	pcli.Close() // a second Close must not untrack anything else
	clk.Step(time.Hour)
	if got := pc.endRead(read); len(got) != 1 {
		t.Errorf("left out of a count begun before the probe closed: %v, want its connection", got)
	}
	if n := count(); n != 1 {
		t.Errorf("%d connections after the probe closed, want 1", n)
	}
	pc.mu.Lock()
	left := len(pc.conns) + len(pc.reads)
	pc.mu.Unlock()
	if left != 0 {
		t.Errorf("%d records kept with no count under way and the probe long closed, want 0", left)
	}
}
