package state

import (
	"testing"
	"time"
)

// FuzzSlotsAcrossUpdates drives one revision with a sequence of
// operations, one per input byte: the top two bits choose take (a plain
// Acquire, or a take on the backend list loaded before the last update,
// as a worker thread does when an update lands between its load and its
// compare-and-swap), release, or an update listing any subset of 3
// addresses with 0-3 slots (from the low bits). After every step no
// address has more requests than its slots allow a new one to make, and
// once every request ended the table's count is 0 and every listed
// limited address hands out exactly its slots.
func FuzzSlotsAcrossUpdates(f *testing.F) {
	f.Add([]byte{0xff, 0x00, 0x00, 0x80, 0x40, 0xff, 0x00, 0x00, 0x00})
	f.Add([]byte{0xc9, 0x00, 0x80, 0x40, 0xc9, 0x00, 0x00, 0x00, 0x40, 0x40})
	f.Add([]byte{0xd2, 0x00, 0x00, 0xc0, 0x41, 0xd2, 0x00, 0x00, 0x00})
	addrs := [3]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 256 {
			ops = ops[:256]
		}
		tab := NewTable(time.Minute, 10)
		limit := map[string]int32{} // listed addresses and their slots (0 unlimited)
		running := map[string][]*Backend{}
		n := 0
		var r *Revision
		var stale []*Backend
		apply := func(spec byte) {
			var bus []BackendUpdate
			next := map[string]int32{}
			for i, a := range addrs {
				if spec&(1<<i) == 0 {
					continue
				}
				s := int32(spec>>3+byte(i)) % 4 // 0 unlimited, 1-3 a limit
				bus = append(bus, BackendUpdate{Addr: a, Slots: s})
				next[a] = s
			}
			if r != nil {
				stale = *r.backends.Load()
			}
			tab.Apply(update("ns/a", 10, time.Minute, bus...))
			r = tab.Lookup("ns/a")
			limit = next
		}
		take := func(b *Backend) {
			if b == nil {
				return
			}
			before := int32(len(running[b.Addr]))
			running[b.Addr] = append(running[b.Addr], b)
			n++
			s, listed := limit[b.Addr]
			if !listed {
				t.Fatalf("a slot taken on %s, which the last update did not list", b.Addr)
			}
			if s > 0 && before >= s {
				t.Fatalf("%s: slot taken with %d running, slots %d", b.Addr, before, s)
			}
		}
		apply(0x07)
		for _, op := range ops {
			switch op >> 6 {
			case 0:
				take(r.Acquire())
			case 1:
				if b := pick(stale); b != nil {
					r.inFlight.Add(1) // what Acquire does after its pick
					take(b)
				}
			case 2:
				a := addrs[int(op)%len(addrs)]
				if bs := running[a]; len(bs) > 0 {
					r.Release(bs[0])
					running[a] = bs[1:]
					n--
				}
			case 3:
				apply(op & 0x3f)
			}
		}
		for a, bs := range running {
			for _, b := range bs {
				r.Release(b)
			}
			delete(running, a)
		}
		if r.InFlight() != 0 {
			t.Fatalf("revision in flight %d after every request ended", r.InFlight())
		}
		free := map[string]int32{}
		unlimited := false
		for _, b := range r.Backends() {
			if b.InFlight() != 0 {
				t.Fatalf("%s: in flight %d after every request ended", b.Addr, b.InFlight())
			}
			unlimited = unlimited || limit[b.Addr] == 0
		}
		if unlimited {
			return // an unlimited backend never runs out
		}
		for i := 0; i < 20; i++ {
			b := r.Acquire()
			if b == nil {
				break
			}
			free[b.Addr]++
		}
		for a, s := range limit {
			if free[a] != s {
				t.Fatalf("%s: %d slots free after every request ended, want %d", a, free[a], s)
			}
		}
	})
}
