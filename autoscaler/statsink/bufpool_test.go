package statsink

import "testing"

// TestFramePool: Get returns the asked length with a power-of-two capacity
// (up to 1 MiB), Put keeps only such buffers, and a buffer put back is
// handed out again for a size of its tier.
func TestFramePool(t *testing.T) {
	p := &framePool{}
	for _, tc := range []struct{ n, wantCap int }{{0, 0}, {1, 1}, {100, 128}, {16384, 16384}, {16385, 32768}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1}} {
		b := p.Get(tc.n)
		if len(*b) != tc.n || cap(*b) != tc.wantCap {
			t.Errorf("Get(%d): len %d cap %d, want len %d cap %d", tc.n, len(*b), cap(*b), tc.n, tc.wantCap)
		}
		p.Put(b)
	}
	// A pooled buffer comes back (sync.Pool may drop it under GC; retry a
	// bounded number of times).
	reused := false
	for range 100 {
		b := p.Get(16384)
		(*b)[0] = 42
		p.Put(b)
		if c := p.Get(10000); cap(*c) == 16384 && (*c)[:1][0] == 42 {
			reused = true
			break
		}
	}
	if !reused {
		t.Error("a 16 KiB buffer put back was never handed out again")
	}
	odd := make([]byte, 10, 100) // not from Get: must not enter a tier
	p.Put(&odd)
	if b := p.Get(64); cap(*b) != 64 {
		t.Errorf("Get(64) after Put of a 100-byte-capacity buffer: cap %d, want 64", cap(*b))
	}
}
