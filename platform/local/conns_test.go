package local

import (
	"maps"
	"net"
	"strings"
	"testing"
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
	counts := map[int32]int{8080: 0, 8082: 0}
	if err := countEstablished(strings.NewReader(table), counts); err != nil {
		t.Fatal(err)
	}
	if want := map[int32]int{8080: 2, 8082: 0}; !maps.Equal(counts, want) {
		t.Errorf("counts %v, want %v", counts, want)
	}
}

// TestEstablishedConns counts real loopback connections through /proc.
func TestEstablishedConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	count := func() int {
		t.Helper()
		m, err := establishedConns([]int32{port})
		if err != nil {
			t.Fatal(err)
		}
		return m[port]
	}
	if n := count(); n != 0 {
		t.Fatalf("%d connections before any dial, want 0", n)
	}
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c, s)
	}
	if n := count(); n != 3 {
		t.Errorf("%d connections with 3 open, want 3", n)
	}
	for _, c := range conns {
		c.Close()
	}
	if n := count(); n != 0 {
		t.Errorf("%d connections after closing all, want 0", n)
	}
}
