package xds

import "testing"

// TestFlipBuckets checks the flip-to-ACK buckets' resolution around the
// 10 ms target and that they still reach the old doubling buckets' top
// (16.4 s).
func TestFlipBuckets(t *testing.T) {
	for i := 1; i < len(flipBuckets); i++ {
		lo, hi := flipBuckets[i-1], flipBuckets[i]
		if hi <= lo {
			t.Fatalf("bucket %d: %v after %v, want increasing", i, hi, lo)
		}
		switch {
		case hi <= 0.010+1e-9 && hi-lo > 0.001+1e-9:
			t.Errorf("bucket (%v, %v]: wider than 1 ms below 10 ms", lo, hi)
		case hi <= 0.020+1e-9 && hi-lo > 0.002+1e-9:
			t.Errorf("bucket (%v, %v]: wider than 2 ms below 20 ms", lo, hi)
		}
	}
	if top := flipBuckets[len(flipBuckets)-1]; top < 16.384 {
		t.Errorf("top bucket %v s, want ≥ 16.384 s (the doubling buckets' top)", top)
	}
}
